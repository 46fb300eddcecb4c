// Host launchers of the kernel families (one .cu file each) and helpers they share.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "inorm/inorm.h"
#include "kernels/common.cuh"

namespace inorm::detail {

Status launch_group(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_shared(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_split(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_eval(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_running_stats(const Plan& plan, const ForwardParams& params, const void* slice_mean,
                            const void* slice_var, cudaStream_t stream);

// What the occupancy API says of the plan's shared_resident kernel: CTAs resident per SM, and for
// the cluster exchange the clusters of the plan's size resident on the device at once (0 when no
// CTA fits, and for the other exchanges).
struct SharedOccupancy {
  int ctas_per_sm = 0;
  int clusters = 0;
};
Status shared_resident_occupancy(const Plan& plan, SharedOccupancy* occupancy);

// Lets `kernel` use the device's whole opt-in shared memory, and with `non_portable_clusters`
// clusters of more than 8 CTAs; done once per kernel and device.
Status allow_max_dynamic_smem(const void* kernel, bool non_portable_clusters = false);

inline Status cuda_status(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  return Status(StatusCode::kCudaError, std::string("inorm: ") + what + ": " +
                                            cudaGetErrorName(error) + " (" +
                                            cudaGetErrorString(error) + ")");
}

// Calls f(T{}) with T the element type of `dtype`.
template <typename F>
Status dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return f(__half{});
    case DType::kBFloat16: return f(__nv_bfloat16{});
  }
  return Status(StatusCode::kInvalidArgument, "inorm: unknown dtype");
}

}  // namespace inorm::detail
