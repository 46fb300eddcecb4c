// kSplitSlice: slices too large for the shared memory of the whole chip (and only those).
// One persistent cooperative kernel, every CTA resident, in two phases:
// 1. statistics: CTA b takes the units (slice, part) b, b + grid, b + 2 grid, ... in order; each
//    part goes through shared memory in stages (one bulk async copy each) and leaves exact
//    two-pass partial statistics in the workspace. The CTA's last stage stays in shared memory.
// 2. after one grid-wide barrier, normalization of the same units newest first: the stage still
//    in shared memory is not read again, and the next ones were the grid's last reads, so they
//    come from L2 where they are still there. Only the rest is read twice from device memory.
// dev/VARIANTS.md (15) records the two-kernel design this replaced.
//
// Partials are (count, mean, M2) in float64, merged with Chan's formula in a fixed order, so the
// statistics are robust to data far from zero and the same from run to run.
#include <cooperative_groups.h>

#include <cub/block/block_reduce.cuh>
#include <cuda/barrier>
#include <cuda/ptx>

#include <string>

#include "config.h"
#include "kernels/chunk_stats.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

namespace cg = cooperative_groups;

__device__ __forceinline__ SplitPartial merge(const SplitPartial& a, const SplitPartial& b) {
  if (b.count == 0.0) return a;
  if (a.count == 0.0) return b;
  const double count = a.count + b.count;
  const double delta = b.mean - a.mean;
  return {count, a.mean + delta * (b.count / count), a.m2 + b.m2 + delta * delta * (a.count * b.count / count)};
}

struct MergeOp {
  __device__ __forceinline__ SplitPartial operator()(const SplitPartial& a, const SplitPartial& b) const {
    return merge(a, b);
  }
};

// Where a unit's part of its slice lies, in elements from the slice's start.
struct Part {
  int64_t slice;
  int part;
  int64_t begin;
  int64_t end;
  __device__ __forceinline__ Part(const KernelArgs& args, int64_t unit)
      : slice(unit / args.parts_per_slice), part(static_cast<int>(unit % args.parts_per_slice)) {
    begin = min(args.slice_len, part * args.chunk_len);
    end = min(args.slice_len, begin + args.chunk_len);
  }
};

template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_slice_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Chunk = ChunkView<T, kSplitThreads>;
  using Merge = cub::BlockReduce<SplitPartial, kSplitThreads>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> loaded;
  __shared__ union {
    typename Chunk::TempStorage chunk;
    typename Merge::TempStorage merge;
  } storage;
  __shared__ Acc broadcast;
  __shared__ SplitPartial slice_stats;

  const int64_t units = args.num_slices * args.parts_per_slice;
  const int64_t stage_len = static_cast<int64_t>(split_stage_len(sizeof(T)));
  auto* partials = static_cast<SplitPartial*>(args.split_partials);
  if (threadIdx.x == 0) {
    init(&loaded, kSplitThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
  __syncthreads();

  // Stage `stage` of `part` in shared memory, mirroring x modulo 16 bytes (16-byte aligned body);
  // `load` false where it is already there.
  auto stage_of = [&](const Part& part, int64_t stage, bool load) {
    const int64_t begin = part.begin + stage * stage_len;
    const int64_t len = min(stage_len, part.end - begin);
    const T* src = static_cast<const T*>(args.x) + part.slice * args.slice_len + begin;
    const RaggedRange<T> range(src, len);
    T* buf = reinterpret_cast<T*>(smem) + range.misalign;
    if (load) loaded.wait(start_chunk_load(loaded, buf, src, range));
    return Chunk{buf, range, len};
  };
  auto stages_of = [&](const Part& part) { return (part.end - part.begin + stage_len - 1) / stage_len; };

  // Phase 1: partial statistics, oldest unit first.
  for (int64_t unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const Part part(args, unit);
    SplitPartial acc{0.0, 0.0, 0.0};  // thread 0's
    for (int64_t stage = 0; stage < stages_of(part); ++stage) {
      // Ends with a barrier after the last read of the buffer: the next stage may overwrite it.
      const ChunkStats<Acc> s = stage_of(part, stage, true).statistics(storage.chunk, broadcast);
      acc = merge(acc, SplitPartial{static_cast<double>(s.count),
                                    static_cast<double>(s.mean) + static_cast<double>(s.resid),
                                    static_cast<double>(s.m2)});
    }
    if (threadIdx.x == 0) partials[unit] = acc;
  }

  // Every partial is written and x is read no more before any y is written (y may be x).
  cg::this_grid().sync();
  if (blockIdx.x >= units) return;  // had no unit (the planner's grids have none such)

  // Phase 2: normalization, newest unit and stage first; the very newest is still in the buffer.
  const int64_t last = blockIdx.x + (units - 1 - blockIdx.x) / gridDim.x * gridDim.x;
  for (int64_t unit = last; unit >= 0; unit -= gridDim.x) {
    const Part part(args, unit);
    // Every CTA of the slice merges the same partials in the same order: identical statistics.
    // From L2 (__ldcg): other CTAs wrote them.
    const SplitPartial* mine = partials + part.slice * args.parts_per_slice;
    SplitPartial acc{0.0, 0.0, 0.0};
    for (int i = threadIdx.x; i < args.parts_per_slice; i += kSplitThreads) {
      acc = merge(acc, SplitPartial{__ldcg(&mine[i].count), __ldcg(&mine[i].mean), __ldcg(&mine[i].m2)});
    }
    acc = Merge(storage.merge).Reduce(acc, MergeOp{});
    if (threadIdx.x == 0) slice_stats = acc;
    __syncthreads();
    const double mean = slice_stats.mean;
    const Acc mean_hi = static_cast<Acc>(mean);
    const SliceAffine<Acc> affine =
        finish_slice<Acc>(args, part.slice, mean_hi, static_cast<Acc>(mean - static_cast<double>(mean_hi)),
                          static_cast<Acc>(slice_stats.m2), part.part == 0 && threadIdx.x == 0);
    T* y = static_cast<T*>(args.y) + part.slice * args.slice_len;
    for (int64_t stage = stages_of(part) - 1; stage >= 0; --stage) {
      const bool resident = unit == last && stage == stages_of(part) - 1;
      stage_of(part, stage, !resident).normalize(y + part.begin + stage * stage_len, affine, args.y_coaligned);
      __syncthreads();  // the buffer, slice_stats and the merge storage are free again
    }
  }
}

// Cooperative: the grid-wide barrier needs every CTA resident (the launch refuses with an error
// instead of hanging when they are not).
cudaLaunchConfig_t split_launch_config(const Plan& plan, cudaLaunchAttribute* cooperative, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.grid));
  config.blockDim = dim3(kSplitThreads);
  config.dynamicSmemBytes = static_cast<std::size_t>(plan.smem_bytes);
  config.stream = stream;
  cooperative->id = cudaLaunchAttributeCooperative;
  cooperative->val.cooperative = 1;
  config.attrs = cooperative;
  config.numAttrs = 1;
  return config;
}

}  // namespace

Status launch_split(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  // A plan edited by hand must give every CTA a unit: one without would have nothing in its buffer.
  if (plan.grid < 1 || plan.grid > plan.num_slices * plan.parts_per_slice) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's split_slice grid (" + std::to_string(plan.grid) + " CTAs for " +
                      std::to_string(plan.num_slices * plan.parts_per_slice) + " parts) is not one the planner makes");
  }
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const Status status = allow_max_dynamic_smem(reinterpret_cast<const void*>(&split_slice_kernel<T>));
    if (!status.ok()) return status;
    cudaLaunchAttribute cooperative{};
    const cudaLaunchConfig_t config = split_launch_config(plan, &cooperative, stream);
    return cuda_status(cudaLaunchKernelEx(&config, &split_slice_kernel<T>, args), "split_slice launch");
  });
}

Status split_slice_occupancy(const Plan& plan, Occupancy* occupancy) {
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const void* kernel = reinterpret_cast<const void*>(&split_slice_kernel<T>);
    const Status status = allow_max_dynamic_smem(kernel);
    if (!status.ok()) return status;
    cudaLaunchAttribute cooperative{};
    return cached_occupancy(kernel, split_launch_config(plan, &cooperative, nullptr), occupancy);
  });
}

}  // namespace inorm::detail
