// channels_last's float64 kernels (kernels/channels_last.cuh), a file of their own: launchers.h.
#include "kernels/channels_last.cuh"

namespace inorm::detail {

Status launch_channels_last_of(double, const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return launch_channels_last_typed<double>(plan, args, stream);
}
KernelFn channels_last_cluster_kernel_of(double, const Plan& plan) {
  return channels_last_cluster_kernel_typed<double>(plan);
}

}  // namespace inorm::detail
