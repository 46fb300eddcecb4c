// Host launchers of the kernel families (one .cu file each) and helpers they share. The families
// are templates over the op (kernels/forward_op.cuh, kernels/backward_op.cuh); dispatch_op picks
// the op and element type of a plan.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

#include "inorm/inorm.h"
#include "kernels/backward_op.cuh"
#include "kernels/common.cuh"
#include "kernels/forward_op.cuh"
#include "plan_internal.h"

namespace inorm::detail {

Status launch_group(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_shared(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_split(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_eval(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_channels_last(const Plan& plan, const KernelArgs& args, cudaStream_t stream);
// The channel reduction after the main kernel: the running-stat update (forward) or dweight and
// dbias (backward) from the per-slice terms in args.slice_term0/1.
struct ChannelOutputs {
  void* running_mean = nullptr;  // forward: updated in place
  void* running_var = nullptr;
  double momentum = 0.0;
  void* dweight = nullptr;  // backward: written, each when not null
  void* dbias = nullptr;
};
Status launch_channel_reduce(const Plan& plan, const KernelArgs& args, const ChannelOutputs& outputs,
                             cudaStream_t stream);

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

// A launch of `grid` CTAs of `threads` on `stream` with `attribute`, or none where it is null; the
// plan's main kernel's (its grid, threads and dynamic shared memory); and the attribute of a launch
// in clusters of `ctas` CTAs.
inline cudaLaunchConfig_t launch_config_of(unsigned grid, unsigned threads, std::size_t smem_bytes,
                                           cudaStream_t stream, cudaLaunchAttribute* attribute) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = attribute != nullptr ? 1 : 0;
  return config;
}
inline cudaLaunchConfig_t launch_config_of(const Plan& plan, cudaStream_t stream, cudaLaunchAttribute* attribute) {
  return launch_config_of(static_cast<unsigned>(plan.grid), static_cast<unsigned>(plan.threads),
                          static_cast<std::size_t>(plan.smem_bytes), stream, attribute);
}
inline cudaLaunchAttribute cluster_dimension(unsigned ctas) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = ctas;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  return attribute;
}

// Launches `kernel` on `stream` with `attribute`, or none where it is null.
template <typename... Params, typename... Args>
Status launch_with(const char* what, cudaLaunchAttribute* attribute, void (*kernel)(Params...), unsigned grid,
                   unsigned threads, std::size_t smem_bytes, cudaStream_t stream, Args&&... args) {
  const cudaLaunchConfig_t config = launch_config_of(grid, threads, smem_bytes, stream, attribute);
  return cuda_status(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), what);
}

// Launches `kernel` on `stream` as a programmatic dependent of the kernel before it (common.cuh
// begin_dependent_kernel): the launch latency of a pass's second and third kernel, and of a pass
// after another on the stream, overlaps the previous kernel's last CTAs.
template <typename... Params, typename... Args>
Status launch_dependent(const char* what, void (*kernel)(Params...), unsigned grid, unsigned threads,
                        std::size_t smem_bytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  return launch_with(what, &attribute, kernel, grid, threads, smem_bytes, stream, std::forward<Args>(args)...);
}

// Launches `kernel` on `stream` where its CTAs wait for each other, so that every one must be
// resident at once: a cooperative launch, which refuses with an error rather than hang (a plain
// one where `cooperative` is false: no CTA of that plan waits).
inline Status launch_co_resident(const char* what, void (*kernel)(KernelArgs), unsigned grid, unsigned threads,
                                 std::size_t smem_bytes, cudaStream_t stream, const KernelArgs& args,
                                 bool cooperative = true) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  return launch_with(what, cooperative ? &attribute : nullptr, kernel, grid, threads, smem_bytes, stream, args);
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

// Calls f(Op{}) with Op the plan's op (ForwardOp or BackwardOp) of element type T: the general op
// (kGeneral) where the plan has an activation or an affine by channel inside its chunks, and in the
// backward with that affine GroupNorm's own forms (BackwardOp's kAffine; kGeneral only with an
// activation): by element, which a family compiles only where kGroupNorm says it runs GroupNorm,
// and by chunk, only where kChunkAffine says it may (plan_internal.h takes_chunk_channel_affine).
template <typename T, bool kGroupNorm = true, bool kChunkAffine = false, typename F>
Status dispatch_op_of(const Plan& plan, F&& f) {
  const bool general = runs_general_op(plan);
  if (plan.pass == Pass::kForward) return general ? f(ForwardOp<T, true>{}) : f(ForwardOp<T, false>{});
  if (takes_chunk_channel_affine(plan)) {
    if constexpr (kChunkAffine) {
      if (general) return f(BackwardOp<T, true, AffineBy::kChunk>{});
      return f(BackwardOp<T, false, AffineBy::kChunk>{});
    } else {
      return Status(StatusCode::kUnsupported, std::string("inorm: GroupNorm's backward by chunk does not run on path ") +
                                                  path_name(plan.path));
    }
  }
  if (!general) return f(BackwardOp<T, false>{});
  if (!plan.channel_affine) return f(BackwardOp<T, true>{});
  if constexpr (kGroupNorm) {
    if (plan.activation == Activation::kNone) return f(BackwardOp<T, false, AffineBy::kElement>{});
    return f(BackwardOp<T, true, AffineBy::kElement>{});
  } else {
    return Status(StatusCode::kUnsupported, std::string("inorm: GroupNorm's backward does not run on path ") +
                                                path_name(plan.path));
  }
}

// The same for the plan's element type.
template <bool kGroupNorm = true, bool kChunkAffine = false, typename F>
Status dispatch_op(const Plan& plan, F&& f) {
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    return dispatch_op_of<decltype(tag), kGroupNorm, kChunkAffine>(plan, f);
  });
}

// The largest families compiled one element type a file (kernels/instances/), so that a build
// compiles the four side by side: shared_resident's kernels took 215 s of one core in one file
// (nvcc -O3, sm_90), its largest part apart (a 16-bit type's) about half that. Each takes the
// element type's tag, as dispatch_dtype gives it, and is defined where that type's kernels are
// compiled.
using KernelFn = void (*)(KernelArgs);
// shared_resident's kernel for the plan (kernels/shared_resident.cuh), or null where none is
// compiled for it.
KernelFn shared_kernel_of(float, const Plan& plan);
KernelFn shared_kernel_of(double, const Plan& plan);
KernelFn shared_kernel_of(__half, const Plan& plan);
KernelFn shared_kernel_of(__nv_bfloat16, const Plan& plan);
// group_registers' launch of the plan (kernels/group_registers.cuh).
Status launch_group_of(float, const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_group_of(double, const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_group_of(__half, const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_group_of(__nv_bfloat16, const Plan& plan, const KernelArgs& args, cudaStream_t stream);
// channels_last's cluster-form kernel for the plan's op (kernels/channels_last.cuh
// channels_last_cluster_kernel), or null where its op has none; and the clusters of the plan's size
// it keeps resident on the current device at once (0 where none fits), asked of the runtime.
KernelFn channels_last_cluster_kernel_of(float, const Plan& plan);
KernelFn channels_last_cluster_kernel_of(double, const Plan& plan);
KernelFn channels_last_cluster_kernel_of(__half, const Plan& plan);
KernelFn channels_last_cluster_kernel_of(__nv_bfloat16, const Plan& plan);
Status channels_last_cluster_occupancy(const Plan& plan, int* clusters);
// channels_last's launch of a plan the launcher has checked (kernels/channels_last.cuh).
Status launch_channels_last_of(float, const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_channels_last_of(double, const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_channels_last_of(__half, const Plan& plan, const KernelArgs& args, cudaStream_t stream);
Status launch_channels_last_of(__nv_bfloat16, const Plan& plan, const KernelArgs& args, cudaStream_t stream);

}  // namespace inorm::detail
