// channels_last's bfloat16 kernels (kernels/channels_last.cuh), a file of their own: launchers.h.
#include "kernels/channels_last.cuh"

namespace inorm::detail {

Status launch_channels_last_of(__nv_bfloat16, const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return launch_channels_last_typed<__nv_bfloat16>(plan, args, stream);
}
KernelFn channels_last_cluster_kernel_of(__nv_bfloat16, const Plan& plan) {
  return channels_last_cluster_kernel_typed<__nv_bfloat16>(plan);
}

}  // namespace inorm::detail
