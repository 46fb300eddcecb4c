// Slices too large for the shared memory of the whole chip (and only those), one or many, of any
// length: most of their parts are read twice. A template over the op (kernels/forward_op.cuh,
// kernels/backward_op.cuh). One persistent grid takes items, a part's reduction or its
// elementwise pass, from a counter, in an order that runs the reductions a fixed lead ahead of
// the elementwise pass (plan_internal.h pipelined_item). Loads and stores of different slices
// overlap without a grid boundary between the passes. The last reduction CTA of a slice combines
// its partials once; elementwise items start their load first and then wait for that.
//
// The last plan.resident_parts parts of each slice are resident: the CTA that reduced one keeps it
// in shared memory, waits for the slice's statistics and writes its output, so those parts are
// read once. Everything else a CTA waits for was handed out before its item, except a slice's
// resident reductions, which wait for those after them: fewer of them than the grid's CTAs, all
// resident at once (a cooperative launch), leave a CTA free to take the rest. Without resident
// parts the counter alone rules out a deadlock, and the launch is plain. (The two-kernel
// split_slice it replaced: dev/VARIANTS.md 32-33.)
//
// Partials are the op's float64 sums of one part of one stage (the forward's (count, mean, M2),
// combined around the first part's mean), combined by block-wide sums in a fixed order, so the
// results are robust to data far from zero and the same from run to run.
#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/ptx>

#include "config.h"
#include "kernels/chunk.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

template <typename Op>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_pipelined_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  using Acc = typename Op::Acc;
  using SplitSums = typename Op::SplitPartial;
  constexpr int kInputs = Op::kInputs;
  using AllSum = BlockAllSum<Acc, kSplitThreads, typename Op::ExtraSum>;
  using CombineSum = BlockAllSum<double, kSplitThreads>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ typename AllSum::TempStorage reduce_storage;
  __shared__ typename CombineSum::TempStorage combine_storage;
  __shared__ unsigned current_item;
  __shared__ bool completes_slice;

  const int64_t parts = args.parts_per_slice;
  const int64_t resident = args.resident_parts;
  const int64_t items = pipelined_items(args.num_slices, parts, resident);
  const int64_t lead = args.pipeline_lead;
  // Each input's part has a region of the buffer (planner.cpp plan_split_pipelined).
  const int64_t region = shared_region_bytes(args.chunk_len * static_cast<int64_t>(sizeof(T)));
  const T* const inputs[2] = {static_cast<const T*>(args.x), static_cast<const T*>(args.dy)};
  auto* partials = static_cast<SplitSums*>(args.split_partials);
  auto* slice_stats = static_cast<SplitSums*>(args.split_slice_stats);
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> next_item(*args.next_item);
  if (threadIdx.x == 0) {
    init(&loaded, kSplitThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
    current_item = next_item.fetch_add(1u, cuda::memory_order_relaxed);
  }
  __syncthreads();
  for (;;) {
    const int64_t item = current_item;
    if (item >= items) break;
    const PipelinedItem work = pipelined_item(item, args.num_slices, parts, resident, lead, args.walk_back);
    const int64_t begin = work.part * args.chunk_len;
    const int64_t len = min(args.chunk_len, args.slice_len - begin);
    const int64_t offset = work.slice * args.slice_len + begin;
    Chunk<T, kSplitThreads, kInputs> chunk;
    const T* srcs[kInputs];
#pragma unroll
    for (int k = 0; k < kInputs; ++k) srcs[k] = inputs[k] + offset;
    // An elementwise item, or a resident part's reduction item, whose part is still in the buffer.
    const bool normalizes = work.elementwise || work.part >= parts - resident;
    // Read for the last time: evict-first where the plan says so (Plan::evict_first), as its output is.
    auto token = chunk.start_load(loaded, smem, region, srcs, len, args.coaligned, args.evict_first && normalizes);
    const typename Op::Context ctx = Op::context(args, work.slice, normalizes, begin);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[work.slice]);
    if (!work.elementwise) {
      loaded.wait(std::move(token));
      AllSum all_sum{reduce_storage};
      // Ends with a barrier after the last read of the buffer: the next item may overwrite it.
      const ChunkPlace place{work.slice, begin, work.part, threadIdx.x == 0};
      const SplitSums part = Op::to_split(Op::reduce(args, ctx, chunk, place, len, all_sum));
      if (threadIdx.x == 0) {
        partials[work.slice * parts + work.part] = part;
        completes_slice = arrivals.fetch_add(1u, cuda::memory_order_acq_rel) == parts - 1;
      }
      __syncthreads();
      if (completes_slice) {
        const SplitSums* slice_partials = partials + work.slice * parts;
        CombineSum combine_sum{combine_storage};
        const auto partial = [&](int i) { return load_l2<SplitSums>(slice_partials + i); };
        const SplitSums stats = Op::template combine_split<kSplitCombineInFlight>(
            partial, static_cast<int>(parts), threadIdx.x, kSplitThreads, combine_sum);
        if (threadIdx.x == 0) {
          slice_stats[work.slice] = stats;
          arrivals.fetch_add(1u, cuda::memory_order_release);  // parts + 1: the slice's sums are out
        }
      }
    }
    if (normalizes) {
      if (threadIdx.x == 0) {
        while (arrivals.load(cuda::memory_order_acquire) <= parts) __nanosleep(128);
      }
      __syncthreads();
      const SplitSums stats = load_l2<SplitSums>(&slice_stats[work.slice]);
      typename Op::Coefficients coefficients =
          Op::finish(args, work.slice, ctx, Op::from_split(stats), work.part == 0 && threadIdx.x == 0);
      ChannelWindow<Op> window(args, work.slice, coefficients, Op::window_channel(ctx));
      if (work.elementwise) loaded.wait(std::move(token));
      if (args.out != nullptr) {
        coefficients.visit([&](const auto& activation) {
          chunk.store_each(static_cast<T*>(args.out) + offset, args.coaligned, window, begin,
                           [&](const Acc(&v)[kInputs]) { return Op::apply(coefficients, activation, v); },
                           args.evict_first);
        });
      }
    }
    // Every thread is past its last read of the buffer and of current_item. The next item is taken
    // only now: a CTA holding an item it has not started would make every item that waits for that
    // one wait for this CTA's current item too (measured: a chain, one item time per slice).
    __syncthreads();
    if (threadIdx.x == 0) current_item = next_item.fetch_add(1u, cuda::memory_order_relaxed);
    __syncthreads();
  }
}

}  // namespace

Status launch_split(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_op</*kGroupNorm=*/true, /*kChunkAffine=*/true>(plan, [&](auto op) -> Status {
    using Op = decltype(op);
    using T = typename Op::Elem;
    // A plan edited by hand must still hand out every reduction item of a slice before its
    // elementwise items and leave a CTA free of the resident parts' waits (or the grid could wait
    // forever), count its items in 32 bits, cover the slice with its parts, and hold a part (one
    // stage at most) of every input in its buffer.
    const int64_t parts = plan.parts_per_slice;
    const int64_t elem = static_cast<int64_t>(sizeof(T));
    if (!pipelined_items_fit(plan.num_slices, parts) || plan.resident_parts < 0 || plan.resident_parts > parts ||
        plan.resident_parts >= plan.grid || plan.chunk_len < 1 ||
        plan.chunk_len > static_cast<int64_t>(split_stage_len(sizeof(T), Op::kInputs)) ||
        plan.smem_bytes < shared_buffer_bytes(plan.chunk_len * elem, Op::kInputs) ||
        (parts - 1) * plan.chunk_len >= plan.slice_len || parts * plan.chunk_len < plan.slice_len ||
        plan.pipeline_lead < parts || plan.pipeline_lead > plan.num_slices * parts || plan.grid < 1) {
      return Status(StatusCode::kInvalidArgument, "inorm: the plan's split_pipelined items (" + plan.describe() +
                                                      ") are not ones the planner makes");
    }
    Status status = allow_max_dynamic_smem(reinterpret_cast<const void*>(&split_pipelined_kernel<Op>));
    if (!status.ok()) return status;
    // The counters are contiguous: the next item, then each slice's arrivals.
    const std::size_t counter_bytes = static_cast<std::size_t>(plan.num_slices + 1) * sizeof(unsigned);
    status = cuda_status(cudaMemsetAsync(args.next_item, 0, counter_bytes, stream),
                         "cudaMemsetAsync(split_pipelined counters)");
    if (!status.ok()) return status;
    // Resident parts wait for reductions handed out after them.
    return launch_co_resident("split_pipelined launch", &split_pipelined_kernel<Op>, static_cast<unsigned>(plan.grid),
                              kSplitThreads, static_cast<std::size_t>(plan.smem_bytes), stream, args,
                              /*cooperative=*/plan.resident_parts > 0);
  });
}

}  // namespace inorm::detail
