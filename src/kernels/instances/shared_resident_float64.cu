// shared_resident's float64 kernels (kernels/shared_resident.cuh), a file of their own: launchers.h.
#include "kernels/shared_resident.cuh"

namespace inorm::detail {

KernelFn shared_kernel_of(double, const Plan& plan) { return shared_kernel_typed<double>(plan); }

}  // namespace inorm::detail
