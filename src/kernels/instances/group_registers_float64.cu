// group_registers' float64 kernels (kernels/group_registers.cuh), a file of their own: launchers.h.
#include "kernels/group_registers.cuh"

namespace inorm::detail {

Status launch_group_of(double, const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return launch_group_typed<double>(plan, args, stream);
}

}  // namespace inorm::detail
