// shared_resident's bfloat16 kernels (kernels/shared_resident.cuh), a file of their own: launchers.h.
#include "kernels/shared_resident.cuh"

namespace inorm::detail {

KernelFn shared_kernel_of(__nv_bfloat16, const Plan& plan) { return shared_kernel_typed<__nv_bfloat16>(plan); }

}  // namespace inorm::detail
