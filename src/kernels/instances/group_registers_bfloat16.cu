// group_registers' bfloat16 kernels (kernels/group_registers.cuh), a file of their own: launchers.h.
#include "kernels/group_registers.cuh"

namespace inorm::detail {

Status launch_group_of(__nv_bfloat16, const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return launch_group_typed<__nv_bfloat16>(plan, args, stream);
}

}  // namespace inorm::detail
