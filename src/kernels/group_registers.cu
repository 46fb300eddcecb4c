// group_registers' launch (the kernels and what they do: kernels/group_registers.cuh).
#include <cuda_runtime_api.h>

#include "kernels/launchers.h"

namespace inorm::detail {

Status launch_group(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_dtype(plan.dtype, [&](auto tag) { return launch_group_of(tag, plan, args, stream); });
}

}  // namespace inorm::detail
