// shared_resident's float32 kernels (kernels/shared_resident.cuh), a file of their own: launchers.h.
#include "kernels/shared_resident.cuh"

namespace inorm::detail {

KernelFn shared_kernel_of(float, const Plan& plan) { return shared_kernel_typed<float>(plan); }

}  // namespace inorm::detail
