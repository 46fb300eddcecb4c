// shared_resident's float16 kernels (kernels/shared_resident.cuh), a file of their own: launchers.h.
#include "kernels/shared_resident.cuh"

namespace inorm::detail {

KernelFn shared_kernel_of(__half, const Plan& plan) { return shared_kernel_typed<__half>(plan); }

}  // namespace inorm::detail
