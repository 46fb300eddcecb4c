// kSharedResident: each slice lives in shared memory between its reductions and its elementwise
// pass, so every input is read once and the output written once. A template over the op
// (kernels/forward_op.cuh: x in, statistics, y out; kernels/backward_op.cuh: x and dy in, three
// sums, dx out).
//
// A persistent grid of up to 6 CTAs per SM. A group of `ctas_per_slice` CTAs takes its slices one
// after another (in order from a counter where the grid runs several rounds, next_slice; else
// group, group + groups, ...), and each CTA holds the same chunk of every slice: one bulk async
// copy per input in (and, for plans with register parts, the chunk's end loaded into registers
// beside it), the op's reduction from shared memory, an exchange of the chunk partials within the
// group, a rank-ordered combination (every CTA computes the same bits), then 16-byte stores.
// The other CTAs on the SM overlap one CTA's reduction and exchange with their loads and stores;
// where the grid takes several rounds, its groups start a few hundred cycles apart so that they do
// not stay in step (config.h kSharedStaggerCycles).
// Two exchanges, one per template instance (the planner picks, planner.cpp choose_exchange):
// - cluster: the group is a thread-block cluster; thread 0 sends its chunk partial into every
//   peer's shared memory with st.async, which completes bytes on the peer's mbarrier, and each CTA
//   waits on its own barrier. Clusters share nothing but the slice counter, so no cooperative launch.
//   A slice may span several clusters (Plan::slice_clusters): each cluster then takes a part of a
//   slice at a time from the counter, in order, and its first CTA publishes the cluster's combined
//   partial through L2 as the L2 exchange does; a part waits only on parts already taken by
//   running clusters, so that too needs no cooperative launch.
// - global: through L2, a release counter per slice; the cooperative launch guarantees that every
//   CTA of a group is resident. Also the kernel for groups of one, which exchange nothing.
// dev/VARIANTS.md records the designs these beat (non-persistent clusters, double buffering inside
// a CTA, one-thread and tagged-word L2 exchanges).
// The kernels, compiled one element type a file (kernels/instances/); the launch and its checks:
// kernels/shared_resident.cu.
#pragma once

#include <cooperative_groups.h>

#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/ptx>

#include <type_traits>

#include "config.h"
#include "kernels/chunk.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

namespace cg = cooperative_groups;

// Sends thread 0's `mine` to every CTA of the cluster and waits until all `group_size` chunk
// partials of this round are in `inbox` (rank order). Two inboxes alternate by round: a peer can
// be at most one round ahead, since finishing a round needs this CTA's statistics of that round.
// `arrived` completes when this CTA has arrived (after writing its own slot) and every peer's
// st.async bytes have landed.
template <typename Partial>
__device__ __forceinline__ void exchange_in_cluster(const cg::cluster_group& cluster, int rank, int group_size,
                                                    const Partial& mine, Partial* inbox, uint64_t* arrived,
                                                    uint32_t parity) {
  constexpr int kPieces = sizeof(Partial) / 16;  // st.async moves 16 bytes at most
  static_assert(sizeof(Partial) % 16 == 0, "a chunk partial is a whole number of 16-byte pieces");
  if (threadIdx.x == 0) {
    // Its own slot by a plain store (compute-sanitizer rejects st.async in a one-CTA cluster),
    // released by this arrival; the peers' slots by st.async onto their barriers.
    inbox[rank] = mine;
    arrive_expecting(arrived, static_cast<uint32_t>((group_size - 1) * sizeof(mine)));
    uint32_t words[kPieces][4];
    memcpy(words, &mine, sizeof(words));
    for (int r = 0; r < group_size; ++r) {
      if (r == rank) continue;
      auto* slot = reinterpret_cast<uint32_t(*)[4]>(cluster.map_shared_rank(&inbox[rank], r));
      uint64_t* peer_arrived = cluster.map_shared_rank(arrived, r);
#pragma unroll
      for (int p = 0; p < kPieces; ++p) cuda::ptx::st_async(slot[p], words[p], peer_arrived);
    }
  }
  wait_phase(arrived, parity);
}

// Publishes thread 0's `mine` for `slice` in L2 (where `publishes`: one CTA of each of the
// group's `group_size` members, CTAs or clusters) and copies the members' partials into `stats`
// (rank order) once all have arrived; a group of one just keeps its own.
template <typename Partial>
__device__ __forceinline__ void exchange_through_l2(const KernelArgs& args, int64_t slice, int rank,
                                                    int group_size, const Partial& mine, Partial* stats,
                                                    bool publishes = true) {
  static_assert(sizeof(Partial) % 16 == 0, "a chunk partial is a whole number of 16-byte pieces");
  if (group_size == 1) {
    if (threadIdx.x == 0) stats[0] = mine;
  } else {
    auto* partials = static_cast<Partial*>(args.chunk_partials) + slice * group_size;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[slice]);
    if (threadIdx.x == 0 && publishes) {
      partials[rank] = mine;
      arrivals.fetch_add(1u, cuda::memory_order_release);
    }
    for (int r = threadIdx.x; r < group_size; r += blockDim.x) {
      while (arrivals.load(cuda::memory_order_acquire) < static_cast<unsigned>(group_size)) {
      }
      // L2, not a possibly stale L1 line shared with another slice's partials.
      uint4 pieces[sizeof(Partial) / 16];
#pragma unroll
      for (int p = 0; p < static_cast<int>(sizeof(Partial) / 16); ++p) {
        pieces[p] = __ldcg(reinterpret_cast<const uint4*>(&partials[r]) + p);
      }
      memcpy(&stats[r], pieces, sizeof(Partial));
    }
  }
  __syncthreads();
}

// The slice (or a slice's part, where slices span clusters) after every group's first, from the counter.
__device__ __forceinline__ int64_t take_slice(const KernelArgs& args, int64_t groups) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> counter(*args.slice_counter);
  return groups + static_cast<int64_t>(counter.fetch_add(1ull, cuda::memory_order_relaxed));
}

// The group's next slice (or next part of a slice, where slices span clusters: the same walk over
// slices x parts). Without a counter (planner.cpp shared_slices_in_order: few rounds or
// short slices, or the L2 exchange) the persistent stride; with one, the next slice in order: the
// group's first CTA takes it after its stores and a cluster sends it to every peer (st.async onto
// the peer's `dispatched` barrier), so that the slices in flight stay adjacent in memory. A
// strided walk lets groups drift apart and spreads the addresses in flight: its memory skeleton
// (bulk copy in, 16-byte stores out) ran 1.09x a device copy, slices taken in order 1.045x
// (dev/VARIANTS.md 34). Two slots and barriers alternate by round: the first CTA sends round
// k + 2's slice only after round k + 1's exchange, which every peer enters after its wait of
// round k, so a slot is never written while a peer still waits on it (the exchange is what bounds
// that lead). The caller synchronizes the CTA before reading `*slot` when there is no cluster.
// `taken` >= 0: the slice the first CTA already took (args.take_slices_early).
template <bool kCluster>
__device__ __forceinline__ int64_t next_slice(const cg::cluster_group& cluster, const KernelArgs& args, int64_t slice,
                                              int64_t groups, int rank, int group_size, int64_t* slot,
                                              uint64_t* dispatched, uint32_t parity, int64_t taken) {
  if (args.slice_counter == nullptr) return slice + groups;
  if (threadIdx.x == 0) {
    if (rank == 0) {
      const int64_t next = taken >= 0 ? taken : take_slice(args, groups);
      *slot = next;
      if constexpr (kCluster) {
        for (int r = 1; r < group_size; ++r) {
          cuda::ptx::st_async(cluster.map_shared_rank(slot, r), next, cluster.map_shared_rank(dispatched, r));
        }
      }
    }
    if constexpr (kCluster) {
      arrive_expecting(dispatched, rank == 0 ? 0u : static_cast<uint32_t>(sizeof(int64_t)));
    }
  }
  if constexpr (kCluster) {
    wait_phase(dispatched, parity);
    return *slot;
  }
  return -1;  // read from the slot after the caller's barrier
}

// Whether an op applies the runtime epilogue (an activation; in the forward, a channel affine):
// plan_internal.h runs_runtime_epilogue.
template <typename Op>
inline constexpr bool kRuntimeEpilogue = !std::is_same_v<typename Op::Epilogue, IdentityEpilogue<typename Op::Acc>>;

// kRegisterVecs > 0: each chunk of each input ends in a part held in registers (RegisterPart), at
// kSharedRegisterCtasPerSm CTAs per SM, whose registers that leaves room for. kSpansClusters: a
// slice spans args.slice_clusters clusters (an instance of its own: walking parts of slices cost
// the one-cluster kernels 4-150 bytes of spills, ptxas -v), or one (the forward's general op,
// whose one-cluster instance spilled: shared_kernel_for).
template <typename Op, int kThreads, bool kCluster, int kRegisterVecs, bool kSpansClusters = false>
__global__ void __launch_bounds__(kThreads, kRegisterVecs > 0 ? kSharedRegisterCtasPerSm : kSharedThreadsPerSm / kThreads)
    shared_resident_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  using Acc = typename Op::Acc;
  using Partial = typename Op::Partial;
  constexpr int kInputs = Op::kInputs;
  using AllSum = BlockAllSum<Acc, kThreads, typename Op::ExtraSum>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ typename AllSum::TempStorage reduce_storage;
  // The group's chunk partials of a round; the cluster exchange alternates two inboxes.
  // (Where a slice spans clusters, the second exchange fills it with the slice's cluster partials.)
  __shared__ alignas(16) Partial inbox[kCluster ? 2 : 1][!kCluster      ? kSharedMaxCtasPerSlice
                                                         : kSpansClusters ? shared_max_slice_clusters(kRuntimeEpilogue<Op>)
                                                                          : kSharedMaxClusterCtas];
  __shared__ uint64_t arrived[2];  // the cluster exchange's barriers, one per inbox
  // The next slice from the counter, alternating by round like the inbox, and its barriers.
  __shared__ int64_t next_slot[2];
  __shared__ uint64_t dispatched[2];

  const cg::cluster_group cluster = cg::this_cluster();
  // A cluster's CTAs, where a slice spans slice_clusters clusters (each then takes one part of a
  // slice at a time: `units` are slices x parts).
  const int group_size = kCluster ? static_cast<int>(cluster.num_blocks()) : args.ctas_per_slice;
  const int rank = kCluster ? static_cast<int>(cluster.block_rank()) : static_cast<int>(blockIdx.x % group_size);
  const int slice_clusters = kSpansClusters ? args.slice_clusters : 1;
  const int64_t groups = gridDim.x / group_size;
  const int64_t units = args.num_slices * slice_clusters;
  // The chunk of each slice a CTA holds where a group is one cluster: the same every round.
  const int64_t rank_begin = min(args.slice_len, rank * args.chunk_len);
  const int64_t rank_len = min(args.slice_len - rank_begin, args.chunk_len);
  const int64_t rank_shared_len = min(rank_len, args.chunk_len - args.register_len);  // the rest in registers
  // Each input's chunk has a region of the buffer (planner.cpp chunks_for).
  const int64_t region = shared_region_bytes((args.chunk_len - args.register_len) * static_cast<int64_t>(sizeof(T)));
  const T* const inputs[2] = {static_cast<const T*>(args.x), static_cast<const T*>(args.dy)};

  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    if constexpr (kCluster) {
      cuda::ptx::mbarrier_init(&arrived[0], 1);
      cuda::ptx::mbarrier_init(&arrived[1], 1);
      cuda::ptx::mbarrier_init(&dispatched[0], 1);
      cuda::ptx::mbarrier_init(&dispatched[1], 1);
      cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);  // peers see them
    }
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
  __syncthreads();  // `loaded` is initialized before any thread waits on it
  // The peers' barriers are initialized (the fence above) once every CTA of the cluster has
  // arrived; the wait comes before the first send, so the first chunk's load and reduction run
  // under it (dev/VARIANTS.md 101).
  if constexpr (kCluster) cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_relaxed);

  int64_t unit = blockIdx.x / group_size;
  // Groups started together would load, exchange and store in step (config.h kSharedStaggerCycles).
  stagger_start(args, unit);
  for (int round = 0; unit < units; ++round) {
    const int64_t slice = kSpansClusters ? unit / slice_clusters : unit;
    const int part = kSpansClusters ? static_cast<int>(unit - slice * slice_clusters) : 0;
    const int64_t chunk_index = kSpansClusters ? static_cast<int64_t>(part) * group_size + rank : rank;
    const int64_t begin = kSpansClusters ? min(args.slice_len, chunk_index * args.chunk_len) : rank_begin;
    const int64_t len = kSpansClusters ? min(args.slice_len - begin, args.chunk_len) : rank_len;
    const int64_t shared_len = kSpansClusters ? min(len, args.chunk_len - args.register_len) : rank_shared_len;
    const int64_t offset = slice * args.slice_len + begin;
    Chunk<T, kThreads, kInputs, kRegisterVecs> chunk;
    const T* srcs[kInputs];
#pragma unroll
    for (int k = 0; k < kInputs; ++k) srcs[k] = inputs[k] + offset;
    auto load_token = chunk.start_load(loaded, smem, region, srcs, shared_len, args.coaligned);
#pragma unroll
    for (int k = 0; k < kInputs; ++k) chunk.part[k].load(srcs[k] + shared_len, len - shared_len);  // beside the copy
    const typename Op::Context ctx = Op::context(args, slice, true, begin);
    loaded.wait(std::move(load_token));
    AllSum all_sum{reduce_storage};
    const Partial mine =
        Op::reduce(args, ctx, chunk, ChunkPlace{slice, begin, chunk_index, threadIdx.x == 0}, len, all_sum);
    Partial* stats = inbox[kCluster ? (round & 1) : 0];
    if constexpr (kCluster) {
      if (round == 0) cuda::ptx::barrier_cluster_wait();
      exchange_in_cluster(cluster, rank, group_size, mine, stats, &arrived[round & 1],
                          static_cast<uint32_t>((round >> 1) & 1));
    } else {
      exchange_through_l2(args, slice, rank, group_size, mine, stats);
    }
    typename Op::Totals totals = Op::combine(stats, group_size);
    if (kSpansClusters && slice_clusters > 1) {  // the cluster's totals as one partial of the slice's, through L2
      const int64_t cluster_begin = min(args.slice_len, static_cast<int64_t>(part) * group_size * args.chunk_len);
      const Partial cluster_partial =
          Op::to_partial(totals, min(args.slice_len - cluster_begin, group_size * args.chunk_len));
      __syncthreads();  // every thread has combined `stats` before they are refilled
      exchange_through_l2(args, slice, part, slice_clusters, cluster_partial, stats, rank == 0);
      totals = Op::combine(stats, slice_clusters);
    }
    typename Op::Coefficients coefficients =
        Op::finish(args, slice, ctx, totals, chunk_index == 0 && threadIdx.x == 0);
    ChannelWindow<Op> window(args, slice, coefficients, Op::window_channel(ctx));
    // Taken early, the counter's latency hides under the stores; it is sent to the peers after them
    // as always (config.h kSharedEarlyDispatchMinRounds says where this wins).
    const int64_t taken = args.take_slices_early && rank == 0 && threadIdx.x == 0 ? take_slice(args, groups) : -1;
    if (args.out != nullptr) {  // (the offset again: kept live across the exchange, it cost a spill)
      // The activation fixed around the loop (the register part's too).
      coefficients.visit([&](const auto& activation) {
        chunk.store_each(static_cast<T*>(args.out) + slice * args.slice_len + begin, args.coaligned, window, begin,
                         [&](const Acc(&v)[kInputs]) { return Op::apply(coefficients, activation, v); });
      });
    }
    const int64_t next = next_slice<kCluster>(cluster, args, unit, groups, rank, group_size, &next_slot[round & 1],
                                              &dispatched[round & 1], static_cast<uint32_t>((round >> 1) & 1), taken);
    __syncthreads();  // the buffer and the inbox are free for the next slice
    unit = kCluster || args.slice_counter == nullptr ? next : next_slot[round & 1];
  }
  // No cluster barrier at exit (its release fence drained the CTA's stores first: dev/VARIANTS.md
  // 101): every st.async into a CTA's shared memory, the exchange's and the next slice's, lands on
  // one of its own barriers, which it waits on in every round, the last included, so no peer
  // addresses its shared memory once it leaves the loop.
}

// Which ops run with register parts (config.h shared_register_part_max_group): every forward, and
// the backward without the runtime epilogue (whose register parts took an activation's branch per
// element); the others are not compiled with them.
template <typename Op>
inline constexpr bool kTakesRegisterParts = Op::kInputs == 1 || !kRuntimeEpilogue<Op>;

// A wide register part (config.h kSharedWideRegisterVecs) only for the forward's plain op (the
// general op's spilled 8-676 bytes at 128 registers, ptxas --resource-usage).
template <typename Op>
inline constexpr bool kTakesWideRegisterParts = Op::kInputs == 1 && !kRuntimeEpilogue<Op>;

// A slice spanning clusters (spans_clusters) runs at kSharedRegisterCtasPerSm CTAs an SM, with or
// without register parts (planner.cpp plan_shared); only those instances are compiled.
template <typename Op, bool kCluster>
KernelFn shared_kernel_for(int threads, bool register_part, bool wide_registers, bool spans_clusters) {
  constexpr int kTwoPerSmThreads = shared_threads_for(kSharedRegisterCtasPerSm);
  if (register_part) {  // planned only for clusters (planner.cpp plan_shared)
    if constexpr (kCluster && kTakesRegisterParts<Op>) {
      if (threads == kSharedRegisterThreads && !wide_registers) {
        constexpr int kVecs = kSharedRegisterVecs / Op::kInputs;
        // The forward's general op runs one cluster a slice in the spanning instance too: the
        // one-cluster instance spilled 80-356 bytes at 128 registers (ptxas --resource-usage; 1 MiB
        // float16 slices + LeakyReLU 1.72x a copy against 1.37x), the spanning one none.
        if constexpr (kRuntimeEpilogue<Op>) {
          return &shared_resident_kernel<Op, kSharedRegisterThreads, true, kVecs, true>;
        } else {
          return spans_clusters ? &shared_resident_kernel<Op, kSharedRegisterThreads, true, kVecs, true>
                                : &shared_resident_kernel<Op, kSharedRegisterThreads, true, kVecs>;
        }
      }
    }
    if constexpr (kCluster && kTakesWideRegisterParts<Op>) {
      if (threads == kSharedRegisterThreads && wide_registers) {
        return spans_clusters ? &shared_resident_kernel<Op, kSharedRegisterThreads, true, kSharedWideRegisterVecs, true>
                              : &shared_resident_kernel<Op, kSharedRegisterThreads, true, kSharedWideRegisterVecs>;
      }
    }
    return nullptr;
  }
  if (spans_clusters) {
    if constexpr (kCluster) {
      if (threads == kTwoPerSmThreads) return &shared_resident_kernel<Op, kTwoPerSmThreads, true, 0, true>;
    }
    return nullptr;
  }
  switch (threads) {
    case 128: return &shared_resident_kernel<Op, 128, kCluster, 0>;
    case 256: return &shared_resident_kernel<Op, 256, kCluster, 0>;
    case 512: return &shared_resident_kernel<Op, 512, kCluster, 0>;
  }
  return nullptr;
}
static_assert(kSharedMinThreads == 128 && kSharedMaxThreads == 512,
              "shared_kernel_for lists every power of two the planner may choose");

// The plan's kernel for element type T, or null where none is compiled for it (launchers.h
// shared_kernel_of; the launch checks the plan first: shared_resident.cu).
template <typename T>
KernelFn shared_kernel_typed(const Plan& plan) {
  const bool cluster = plan.exchange == Exchange::kCluster;
  const bool register_part = plan.register_len > 0;
  const bool wide_registers = holds_wide_register_part(plan);
  const bool spans_clusters = plan.slice_clusters > 1;
  KernelFn kernel = nullptr;
  const Status status = dispatch_op_of<T, /*kGroupNorm=*/true, /*kChunkAffine=*/true>(plan, [&](auto op) -> Status {
    using Op = decltype(op);
    kernel = cluster ? shared_kernel_for<Op, true>(plan.threads, register_part, wide_registers, spans_clusters)
                     : shared_kernel_for<Op, false>(plan.threads, register_part, wide_registers, spans_clusters);
    return Status::Ok();
  });
  return status.ok() ? kernel : nullptr;
}

}  // namespace
}  // namespace inorm::detail
