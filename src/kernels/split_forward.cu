// kSplitSlice: slices too large for the shared memory of the whole chip (and only those).
// Two kernels: partial statistics per (slice, part), the last part of a slice to finish merging
// them into the slice's affine coefficients; then normalization of each part with them. x is read
// twice; the second kernel walks the parts in reverse so its first reads find what the first
// kernel read last still in L2, and is launched early (programmatic dependent launch) to fill the
// slots the first one frees.
//
// Partials are (count, mean, M2) in float64, merged with Chan's formula in a fixed order, so the
// statistics are robust to data far from zero and the same from run to run.
#include <cub/block/block_reduce.cuh>
#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/ptx>

#include "config.h"
#include "kernels/chunk_stats.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

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

// The part's statistics, stage by stage: a bulk async copy into shared memory, exact two-pass
// statistics of the stage there (ChunkView, as the shared_resident path), merged in float64.
template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_stats_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Chunk = ChunkView<T, kSplitThreads>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> loaded;
  __shared__ typename Chunk::TempStorage reduce_storage;
  __shared__ Acc broadcast;

  const int64_t slice = blockIdx.x / args.parts_per_slice;
  const int64_t part_begin = (blockIdx.x % args.parts_per_slice) * args.chunk_len;
  const int64_t part_end = min(part_begin + args.chunk_len, args.slice_len);
  const int64_t stage_len = static_cast<int64_t>(split_stage_len(sizeof(T)));
  const T* x = static_cast<const T*>(args.x) + slice * args.slice_len;
  if (threadIdx.x == 0) {
    init(&loaded, kSplitThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
  __syncthreads();
  // Once every CTA of this grid has started, the normalize grid may take the slots this grid frees
  // (it waits for this grid's results before it reads anything): no launch gap, no idle tail.
  cudaTriggerProgrammaticLaunchCompletion();

  SplitPartial acc{0.0, 0.0, 0.0};  // thread 0's
  for (int64_t begin = part_begin; begin < part_end; begin += stage_len) {
    const int64_t len = min(stage_len, part_end - begin);
    const RaggedRange<T> range(x + begin, len);
    T* buf = reinterpret_cast<T*>(smem) + range.misalign;  // mirrors x modulo 16 bytes
    loaded.wait(start_chunk_load(loaded, buf, x + begin, range));
    // Ends with a barrier after the last read of buf: the next stage may overwrite it.
    const ChunkStats<Acc> stage = Chunk{buf, range, len}.statistics(reduce_storage, broadcast);
    acc = merge(acc, SplitPartial{static_cast<double>(stage.count),
                                  static_cast<double>(stage.mean) + static_cast<double>(stage.resid),
                                  static_cast<double>(stage.m2)});
  }
  // The last CTA of the slice to finish merges the slice's partials, once per slice rather than
  // once per normalizing CTA (that merge held every normalize CTA's first load back).
  SplitPartial* partials = static_cast<SplitPartial*>(args.split_partials) + slice * args.parts_per_slice;
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x % args.parts_per_slice] = acc;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.split_arrivals[slice]);
    // Release: this partial before the count; acquire: the other parts' partials after it.
    last = arrivals.fetch_add(1u, cuda::memory_order_acq_rel) == static_cast<unsigned>(args.parts_per_slice - 1);
  }
  __syncthreads();
  if (!last) return;
  // Every part's partial, merged in part order whichever CTA is last: the same bits every run.
  SplitPartial merged{0.0, 0.0, 0.0};
  for (int i = threadIdx.x; i < args.parts_per_slice; i += kSplitThreads) {
    merged = merge(merged, SplitPartial{__ldcg(&partials[i].count), __ldcg(&partials[i].mean), __ldcg(&partials[i].m2)});
  }
  __shared__ typename cub::BlockReduce<SplitPartial, kSplitThreads>::TempStorage merge_storage;
  merged = cub::BlockReduce<SplitPartial, kSplitThreads>(merge_storage).Reduce(merged, MergeOp{});
  if (threadIdx.x == 0) {
    const Acc mean_hi = static_cast<Acc>(merged.mean);
    static_cast<SliceAffine<Acc>*>(args.split_affine)[slice] =
        finish_slice<Acc>(args, slice, mean_hi, static_cast<Acc>(merged.mean - static_cast<double>(mean_hi)),
                          static_cast<Acc>(merged.m2), /*writer=*/true);
  }
}

template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_normalize_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  const int64_t block = static_cast<int64_t>(gridDim.x) - 1 - blockIdx.x;  // reverse order
  const int64_t slice = block / args.parts_per_slice;
  const int part = static_cast<int>(block % args.parts_per_slice);
  // Launched early (programmatic dependent launch): the statistics grid's results are complete
  // and visible only after this wait, and y (which may be x) is written only after it.
  cudaGridDependencySynchronize();
  const SliceAffine<Acc> affine = static_cast<const SliceAffine<Acc>*>(args.split_affine)[slice];

  const int64_t begin = part * args.chunk_len;
  const int64_t len = min(args.chunk_len, args.slice_len - begin);
  const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
  T* dst = static_cast<T*>(args.y) + slice * args.slice_len + begin;
  // Plain loads: the reverse order means the first of them find the statistics pass's data in L2.
  ChunkView<T, kSplitThreads>{src, RaggedRange<T>(src, len), len}.template normalize<kSplitLoadBatch>(
      dst, affine, args.y_coaligned);
}

}  // namespace

Status launch_split(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const unsigned grid = static_cast<unsigned>(plan.grid);
    Status status = allow_max_dynamic_smem(reinterpret_cast<const void*>(&split_stats_kernel<T>));
    if (!status.ok()) return status;
    status = cuda_status(cudaMemsetAsync(args.split_arrivals, 0,
                                         static_cast<std::size_t>(plan.num_slices) * sizeof(unsigned), stream),
                         "cudaMemsetAsync(split arrivals)");
    if (!status.ok()) return status;
    split_stats_kernel<T><<<grid, kSplitThreads, plan.smem_bytes, stream>>>(args);
    status = cuda_status(cudaGetLastError(), "split_slice statistics launch");
    if (!status.ok()) return status;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(grid);
    config.blockDim = dim3(kSplitThreads);
    config.stream = stream;
    cudaLaunchAttribute early{};
    early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    early.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &early;
    config.numAttrs = 1;
    return cuda_status(cudaLaunchKernelEx(&config, &split_normalize_kernel<T>, args), "split_slice normalize launch");
  });
}

}  // namespace inorm::detail
