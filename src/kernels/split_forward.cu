// Slices too large for the shared memory of the whole chip (and only those), one or many, of any
// length: x is read twice. One persistent grid takes items, a part's statistics or its
// normalization, from a counter, in an order that runs the statistics a fixed lead ahead of the
// normalization (pipelined_item). Loads and stores of different slices overlap without a grid
// boundary between the passes, and a normalize item reads x soon after its statistics item did,
// while L2 may still hold it. The last statistics CTA of a slice combines its partials once;
// normalize items start their load first and then wait for that. The counter hands items out in
// order, so every item waited for is held by a running CTA: no deadlock without a cooperative
// launch. (The two-kernel split_slice it replaced: dev/VARIANTS.md 32-33.)
//
// Partials are (count, mean, M2) in float64, one per part of one stage; a slice's partials combine
// around the first part's mean with two block-wide sums, in a fixed order, so the statistics are
// robust to data far from zero and the same from run to run.
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

// The slice's statistics from its parts' partials: the count-weighted mean of the parts' means
// around part 0's (one block-wide sum of (count, weighted offset)), then M2 = sum of (M2_i +
// count_i * (mean_i - mean)^2) (another). Two sums and one division: merging the partials pairwise
// by Chan's formula (a division per merge, a dependent tree) cost 1-5 us in split_slice
// (dev/VARIANTS.md 27).
__device__ __forceinline__ SplitPartial combine_parts(const SplitPartial* partials, int parts) {
  using Sum = cub::BlockReduce<double2, kSplitThreads>;
  using SumM2 = cub::BlockReduce<double, kSplitThreads>;
  __shared__ union {
    typename Sum::TempStorage sum;
    typename SumM2::TempStorage sum_m2;
  } storage;
  __shared__ SplitPartial slice_stats;
  // L2 loads: other CTAs of the same grid wrote the partials.
  const double base = __ldcg(&partials[0].mean);
  double2 local{0.0, 0.0};  // (count, count * (mean - base))
#pragma unroll 1
  for (int i = threadIdx.x; i < parts; i += kSplitThreads) {
    const double count = __ldcg(&partials[i].count);
    local.x += count;
    local.y += count * (__ldcg(&partials[i].mean) - base);
  }
  const double2 total =
      Sum(storage.sum).Reduce(local, [](double2 a, double2 b) { return double2{a.x + b.x, a.y + b.y}; });
  if (threadIdx.x == 0) slice_stats = SplitPartial{total.x, base + total.y / total.x, 0.0};
  __syncthreads();
  const double mean = slice_stats.mean;
  double m2 = 0.0;
#pragma unroll 1
  for (int i = threadIdx.x; i < parts; i += kSplitThreads) {
    const double d = __ldcg(&partials[i].mean) - mean;
    m2 += __ldcg(&partials[i].m2) + __ldcg(&partials[i].count) * d * d;
  }
  m2 = SumM2(storage.sum_m2).Sum(m2);
  if (threadIdx.x == 0) slice_stats.m2 = m2;
  __syncthreads();
  return slice_stats;
}

template <typename Acc>
__device__ __forceinline__ SplitPartial to_partial(const ChunkStats<Acc>& stage) {
  return SplitPartial{static_cast<double>(stage.count),
                      static_cast<double>(stage.mean) + static_cast<double>(stage.resid),
                      static_cast<double>(stage.m2)};
}

// The slice's affine coefficients from its combined statistics; `writer` writes the outputs.
template <typename Acc>
__device__ __forceinline__ SliceAffine<Acc> affine_of(const KernelArgs& args, int64_t slice, const SplitPartial& stats,
                                                      bool writer) {
  const Acc mean_hi = static_cast<Acc>(stats.mean);
  return finish_slice<Acc>(args, slice, mean_hi, static_cast<Acc>(stats.mean - static_cast<double>(mean_hi)),
                           static_cast<Acc>(stats.m2), writer);
}

// Static shared memory of a CTA that brings stages of x in by bulk async copy and reduces them.
template <typename T>
struct StageStorage {
  cuda::barrier<cuda::thread_scope_block> loaded;
  typename ChunkView<T, kSplitThreads>::TempStorage reduce;
  AccOf<T> broadcast;

  // Thread 0 readies the barrier; every thread must pass a __syncthreads() before using it.
  __device__ __forceinline__ void init_barrier() {
    if (threadIdx.x == 0) {
      init(&loaded, kSplitThreads);
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
    }
  }
};

// What item `item` of split_pipelined is. Two streams of (slice, part) in order, statistics and
// normalization, merged: the first `lead` statistics items, then one of each in turn, then the
// normalize items left. With lead >= parts a slice's statistics items all come before its first
// normalize item; every lead beyond that lets its last statistics items finish before the
// normalize items that wait for them start.
struct PipelinedItem {
  int64_t slice;
  int64_t part;
  bool normalize;
};
__device__ __forceinline__ PipelinedItem pipelined_item(int64_t item, int64_t parts, int64_t total, int64_t lead) {
  bool normalize = false;
  int64_t index = item;  // in its stream
  if (item >= lead) {
    const int64_t merged = item - lead;
    if (merged < 2 * (total - lead)) {
      normalize = merged % 2 == 1;
      index = normalize ? merged / 2 : lead + merged / 2;
    } else {
      normalize = true;
      index = merged - (total - lead);
    }
  }
  return {index / parts, index % parts, normalize};
}

template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_pipelined_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Chunk = ChunkView<T, kSplitThreads>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ StageStorage<T> stage;
  __shared__ unsigned current_item;
  __shared__ bool completes_slice;

  const int64_t parts = args.parts_per_slice;
  const int64_t items = 2 * args.num_slices * parts;
  const int64_t lead = args.pipeline_lead;
  auto* partials = static_cast<SplitPartial*>(args.split_partials);
  auto* slice_stats = static_cast<SplitPartial*>(args.split_slice_stats);
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> next_item(*args.next_item);
  stage.init_barrier();
  if (threadIdx.x == 0) current_item = next_item.fetch_add(1u, cuda::memory_order_relaxed);
  __syncthreads();
  for (;;) {
    const int64_t item = current_item;
    if (item >= items) break;
    const PipelinedItem work = pipelined_item(item, parts, items / 2, lead);
    const int64_t begin = work.part * args.chunk_len;
    const int64_t len = min(args.chunk_len, args.slice_len - begin);
    const int64_t offset = work.slice * args.slice_len + begin;
    const T* src = static_cast<const T*>(args.x) + offset;
    const RaggedRange<T> range(src, len);
    T* buf = reinterpret_cast<T*>(smem) + range.misalign;  // mirrors x modulo 16 bytes
    auto token = start_chunk_load(stage.loaded, buf, src, range);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[work.slice]);
    if (!work.normalize) {
      stage.loaded.wait(std::move(token));
      // Ends with a barrier after the last read of buf: the next item may overwrite it.
      const SplitPartial part = to_partial(Chunk{buf, range, len}.statistics(stage.reduce, stage.broadcast));
      if (threadIdx.x == 0) {
        partials[work.slice * parts + work.part] = part;
        completes_slice = arrivals.fetch_add(1u, cuda::memory_order_acq_rel) == parts - 1;
      }
      __syncthreads();
      if (completes_slice) {
        const SplitPartial stats = combine_parts(partials + work.slice * parts, static_cast<int>(parts));
        if (threadIdx.x == 0) {
          slice_stats[work.slice] = stats;
          arrivals.fetch_add(1u, cuda::memory_order_release);  // parts + 1: the slice's statistics are out
        }
      }
    } else {
      if (threadIdx.x == 0) {
        while (arrivals.load(cuda::memory_order_acquire) <= parts) __nanosleep(128);
      }
      __syncthreads();
      const SplitPartial stats{__ldcg(&slice_stats[work.slice].count), __ldcg(&slice_stats[work.slice].mean),
                               __ldcg(&slice_stats[work.slice].m2)};
      const SliceAffine<Acc> affine = affine_of<Acc>(args, work.slice, stats, work.part == 0 && threadIdx.x == 0);
      stage.loaded.wait(std::move(token));
      Chunk{buf, range, len}.normalize(static_cast<T*>(args.y) + offset, affine, args.y_coaligned);
    }
    // Every thread is past its last read of buf and of current_item. The next item is taken only
    // now: a CTA holding an item it has not started would make every item that waits for that
    // one wait for this CTA's current item too (measured: a chain, one item time per slice).
    __syncthreads();
    if (threadIdx.x == 0) current_item = next_item.fetch_add(1u, cuda::memory_order_relaxed);
    __syncthreads();
  }
}

}  // namespace

Status launch_split(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    // A plan edited by hand must still hand out every statistics item of a slice before its
    // normalize items (or the grid could wait forever), count its items in 32 bits, cover the
    // slice with its parts, and hold a part (one stage at most) in its buffer.
    const int64_t parts = plan.parts_per_slice;
    const int64_t elem = static_cast<int64_t>(sizeof(T));
    if (!pipelined_items_fit(plan.num_slices, parts) || plan.chunk_len < 1 ||
        plan.chunk_len > static_cast<int64_t>(split_stage_len(sizeof(T))) ||
        plan.smem_bytes < plan.chunk_len * elem + 16 || (parts - 1) * plan.chunk_len >= plan.slice_len ||
        parts * plan.chunk_len < plan.slice_len || plan.pipeline_lead < parts ||
        plan.pipeline_lead > plan.num_slices * parts || plan.grid < 1) {
      return Status(StatusCode::kInvalidArgument, "inorm: the plan's split_pipelined items (" + plan.describe() +
                                                      ") are not ones the planner makes");
    }
    Status status = allow_max_dynamic_smem(reinterpret_cast<const void*>(&split_pipelined_kernel<T>));
    if (!status.ok()) return status;
    // The counters are contiguous: the next item, then each slice's arrivals.
    const std::size_t counter_bytes = static_cast<std::size_t>(plan.num_slices + 1) * sizeof(unsigned);
    status = cuda_status(cudaMemsetAsync(args.next_item, 0, counter_bytes, stream),
                         "cudaMemsetAsync(split_pipelined counters)");
    if (!status.ok()) return status;
    split_pipelined_kernel<T><<<static_cast<unsigned>(plan.grid), kSplitThreads, plan.smem_bytes, stream>>>(args);
    return cuda_status(cudaGetLastError(), "split_pipelined launch");
  });
}

}  // namespace inorm::detail
