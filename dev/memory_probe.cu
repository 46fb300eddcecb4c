// dev scratch (dev/VARIANTS.md, 9-13 and "The copy floor"): times, on the seed tensor (112x64x512x512
// float32), ways of moving data through the chip against cudaMemcpyAsync of the same tensor:
// copy kernels (register loads and stores of several cache flavours, TMA bulk rings, partitioned
// streams, the driver memcpy's own shape, the forward's skeleton striding or in order), and the shared_resident kernel with parts switched off or exchanged differently (bulk
// stores, one-thread and tagged L2 exchanges, a thread-block cluster exchanging through
// distributed shared memory, slices held in registers while the next one loads). Not library
// code: built by CI so it keeps compiling (target inorm-dev-probe), run by hand on a GPU.
#include <cooperative_groups.h>

#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/ptx>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "check_cuda.h"
#include "config.h"
#include "kernels/chunk.cuh"
#include "kernels/forward_op.cuh"

using namespace inorm::detail;
namespace cg = cooperative_groups;

struct Args {
  const float* x;
  float* y;
  int64_t num_slices, slice_len, chunk_len;
  int group;
  float* partials;
  unsigned* arrivals;
};

// Sums `mine` (valid in thread 0) over the group through L2, as the library does.
template <int kThreads>
__device__ float exchange(const Args& a, int64_t slice, int rank, float mine, float* peers) {
  float* partials = a.partials + slice * a.group;
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(a.arrivals[slice]);
  if (threadIdx.x == 0) {
    partials[rank] = mine;
    arrivals.fetch_add(1u, cuda::memory_order_release);
  }
  for (int r = threadIdx.x; r < a.group; r += kThreads) {
    while (arrivals.load(cuda::memory_order_acquire) < static_cast<unsigned>(a.group)) {
    }
    peers[r] = __ldcg(&partials[r]);
  }
  __syncthreads();
  float total = 0.f;
  for (int r = 0; r < a.group; ++r) total += peers[r];
  return total;
}

// The library's kernel arguments plus the shared-memory offset of f6cbc97's kernel, which kept the
// group's chunk statistics in dynamic shared memory before the chunk buffer.
struct ResidentArgs : KernelArgs {
  int slot_bytes;
};

// A peer's chunk statistics from L2, not a possibly stale L1 line.
template <typename Acc>
__device__ __forceinline__ ChunkStats<Acc> load_partial(const ChunkStats<Acc>* partial) {
  return ChunkStats<Acc>{__ldcg(&partial->count), __ldcg(&partial->mean), __ldcg(&partial->resid),
                         __ldcg(&partial->m2)};
}

// A copy of the library's shared_resident kernel (src/kernels/shared_forward.cu at f6cbc97; a copy
// because the variants change its insides) with parts switched off for timing. kMode bits:
// 1 no second statistics pass, 2 no statistics at all, 4 no exchange (own chunk only), 8 bulk stores.
// kSpin: 0 the library's exchange, 1 one thread polls, > 1 one thread polls with pauses of kSpin
// ns, -1 tagged 64-bit words, < -1 tagged words with pauses of -kSpin ns.
template <int kThreads, int kMode, int kSpin = 0>
__global__ void __launch_bounds__(kThreads, kSharedThreadsPerSm / kThreads) real_kernel(const ResidentArgs args) {
  using T = float;
  using Acc = float;
  using AllSum = BlockAllSum<Acc, kThreads, ForwardOp<T, false>::ExtraSum>;
  constexpr bool kOnePass = kMode & 1, kNoStats = kMode & 2, kNoExchange = kMode & 4, kBulkStore = kMode & 8;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ typename AllSum::TempStorage reduce_storage;
  const int group_size = args.ctas_per_slice;
  const int64_t groups = gridDim.x / group_size;
  const int rank = static_cast<int>(blockIdx.x % group_size);
  const int64_t begin = min(args.slice_len, rank * args.chunk_len);
  const int64_t len = min(args.slice_len - begin, args.chunk_len);
  auto* peer_stats = reinterpret_cast<ChunkStats<Acc>*>(smem);
  unsigned char* buffer = smem + args.slot_bytes;
  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  for (int64_t slice = blockIdx.x / group_size; slice < args.num_slices; slice += groups) {
    const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
    T* dst = static_cast<T*>(args.out) + slice * args.slice_len + begin;
    const RaggedRange<T> range(src, len);
    T* buf = reinterpret_cast<T*>(buffer) + range.misalign;
    if (kBulkStore && threadIdx.x == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    loaded.wait(start_chunk_load(loaded, buf, src, range));
    Chunk<T, kThreads, 1> chunk;
    chunk.buf[0] = buf;
    chunk.range = range;
    chunk.len = len;
        AllSum all_sum{reduce_storage};
    ChunkStats<Acc> mine{static_cast<Acc>(len), 0.f, 0.f, static_cast<Acc>(len)};
    if (!kNoStats) {
      if (!kOnePass) {
        mine = ForwardOp<T, false>::reduce(KernelArgs{}, {}, chunk, ChunkPlace{}, len, all_sum);
      } else {
        Acc sum = 0.f;
        for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
          const Pack<T> p = chunk.body(0)[v];
          sum += p.v[0] + p.v[1] + p.v[2] + p.v[3];
        }
        sum = cub::BlockReduce<Acc, kThreads>(reduce_storage.reduce.one).Sum(sum);
        mine.mean = sum / len;
        __syncthreads();
      }
    }
    if (kNoExchange) {
      if (threadIdx.x == 0) peer_stats[0] = mine;
    } else {
      auto* partials = static_cast<ChunkStats<Acc>*>(args.chunk_partials) + slice * group_size;
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[slice]);
      if constexpr (kSpin == 0) {
        if (threadIdx.x == 0) {
          partials[rank] = mine;
          arrivals.fetch_add(1u, cuda::memory_order_release);
        }
        for (int r = threadIdx.x; r < group_size; r += kThreads) {
          while (arrivals.load(cuda::memory_order_acquire) < static_cast<unsigned>(group_size)) {
          }
          peer_stats[r] = load_partial(&partials[r]);
        }
      } else if constexpr (kSpin < 0) {
        // Tagged words: each 64-bit word carries 32 bits of the partial and a nonzero tag, stored
        // and polled with relaxed single-copy-atomic accesses: no counter, no fence.
        auto* words = static_cast<unsigned long long*>(args.chunk_partials) + (slice * group_size) * 4;
        if (threadIdx.x == 0) {
          const unsigned* payload = reinterpret_cast<const unsigned*>(&mine);
          for (int w = 0; w < 4; ++w) {
            cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> word(words[rank * 4 + w]);
            word.store((1ull << 32) | payload[w], cuda::memory_order_relaxed);
          }
        }
        if (threadIdx.x < group_size * 4) {
          cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> word(words[threadIdx.x]);
          unsigned long long value;
          while (((value = word.load(cuda::memory_order_relaxed)) >> 32) == 0) {
            if (kSpin < -1) __nanosleep(-kSpin);
          }
          reinterpret_cast<unsigned*>(peer_stats)[threadIdx.x] = static_cast<unsigned>(value);
        }
      } else {
        // One thread waits, relaxed polls with a pause, then one acquire fence; the CTA barrier
        // passes the ordering on to the threads that read the partials.
        if (threadIdx.x == 0) {
          partials[rank] = mine;
          arrivals.fetch_add(1u, cuda::memory_order_release);
          while (arrivals.load(cuda::memory_order_relaxed) < static_cast<unsigned>(group_size)) {
            if (kSpin > 1) __nanosleep(kSpin);
          }
          cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
        }
        __syncthreads();
        for (int r = threadIdx.x; r < group_size; r += kThreads) peer_stats[r] = load_partial(&partials[r]);
      }
    }
    __syncthreads();
    Acc mean_hi, mean_lo, m2;
    combine_chunks(peer_stats, kNoExchange ? 1 : group_size, &mean_hi, &mean_lo, &m2);
    if (kNoExchange) m2 *= group_size;
    const int64_t channel = first_channel(args, slice);
    const ChannelAffine<Acc> channel_params = channel_affine<Acc>(args, channel);
    SliceAffine<Acc> affine =
        finish_slice<Acc>(args, slice, channel_params.weight, channel_params.bias, mean_hi, mean_lo, m2,
                          rank == 0 && threadIdx.x == 0);
    if (kNoStats) affine = SliceAffine<Acc>{0.f, 0.f, 1.f, 0.f};
    if (kBulkStore) {
      Pack<T>* body = reinterpret_cast<Pack<T>*>(buf + range.head);
      for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
        Pack<T> p = body[v];
#pragma unroll
        for (int k = 0; k < 4; ++k) p.v[k] = affine.apply(p.v[k]);
        body[v] = p;
      }
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
      __syncthreads();
      if (threadIdx.x == 0 && range.body_vecs > 0) {
        cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, dst + range.head,
                                 buf + range.head, static_cast<uint32_t>(range.body_vecs * 16));
        cuda::ptx::cp_async_bulk_commit_group();
      }
    } else {
      chunk.store_each(dst, args.coaligned, WholeSliceWindow{}, 0, [&](const Acc(&v)[1]) { return affine.apply(v[0]); });
    }
    __syncthreads();
  }
  if (kBulkStore && threadIdx.x == 0) cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
}


// The chunk of slice k moves from shared memory to registers, the copy of slice k+1 starts at once,
// then slice k's reduction, exchange and stores run from registers. kMode 1: with sum + exchange.
template <int kThreads, int kVec, int kMinBlocks, int kMode>
__global__ void __launch_bounds__(kThreads, kMinBlocks) reg_kernel(const Args a) {
  constexpr bool kExchange = kMode & 1;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ typename cub::BlockReduce<float, kThreads>::TempStorage reduce;
  __shared__ float peers[32];
  const int group = a.group;
  const int64_t groups = gridDim.x / group;
  const int rank = blockIdx.x % group;
  const int64_t begin = min(a.slice_len, rank * a.chunk_len);
  const int64_t len = min(a.slice_len - begin, a.chunk_len);
  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  int64_t slice = blockIdx.x / group;
  if (slice >= a.num_slices) return;
  const RaggedRange<float> range(a.x + slice * a.slice_len + begin, len);  // aligned alike every slice here
  float* buf = reinterpret_cast<float*>(smem) + range.misalign;
  Barrier::arrival_token token = start_chunk_load(loaded, buf, a.x + slice * a.slice_len + begin, range);
  for (; slice < a.num_slices; slice += groups) {
    loaded.wait(std::move(token));
    Pack<float> r[kVec];
    const Pack<float>* body = reinterpret_cast<const Pack<float>*>(buf + range.head);
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const int64_t v = threadIdx.x + i * kThreads;
      if (v < range.body_vecs) r[i] = body[v];
    }
    __syncthreads();
    const int64_t next = slice + groups;
    if (next < a.num_slices) token = start_chunk_load(loaded, buf, a.x + next * a.slice_len + begin, range);
    float scale = 1.f;
    if (kExchange) {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        const int64_t v = threadIdx.x + i * kThreads;
        if (v < range.body_vecs) s += r[i].v[0] + r[i].v[1] + r[i].v[2] + r[i].v[3];
      }
      s = cub::BlockReduce<float, kThreads>(reduce).Sum(s);
      scale = 1.f + 1e-30f * exchange<kThreads>(a, slice, rank, s, peers);
    }
    float* dst = a.y + slice * a.slice_len + begin + range.head;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const int64_t v = threadIdx.x + i * kThreads;
      if (v < range.body_vecs) {
#pragma unroll
        for (int k = 0; k < 4; ++k) r[i].v[k] *= scale;
        store_pack_l2(dst + v * 4, r[i]);
      }
    }
  }
}

// Load flavours: 0 ld.global.cs, 1 ld.global.nc (ldg), 2 plain ld; store flavours: 0 st.cg, 1 st.cs, 2 plain st.
template <int kLoad>
__device__ __forceinline__ float4 ld(const float4* p) {
  if constexpr (kLoad == 0) return __ldcs(p);
  else if constexpr (kLoad == 1) return __ldg(p);
  else return *p;
}
template <int kStore>
__device__ __forceinline__ void st(float4* p, float4 v) {
  if constexpr (kStore == 0) __stcg(p, v);
  else if constexpr (kStore == 1) __stcs(p, v);
  else *p = v;
}
template <int kUnroll, int kLoad, int kStore>
__global__ void plain_copy(const float4* x, float4* y, int64_t n) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += kUnroll * stride) {
    float4 v[kUnroll];
#pragma unroll
    for (int b = 0; b < kUnroll; ++b)
      if (i + b * stride < n) v[b] = ld<kLoad>(x + i + b * stride);
#pragma unroll
    for (int b = 0; b < kUnroll; ++b)
      if (i + b * stride < n) st<kStore>(y + i + b * stride, v[b]);
  }
}

template <int kHint>
__global__ void hinted_copy(const float4* x, float4* y, int64_t n) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += 4 * stride) {
    float4 v[4];
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      if (i + b * stride < n) {
        const float4* p = x + i + b * stride;
        if constexpr (kHint == 256)
          asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v[b].x), "=f"(v[b].y), "=f"(v[b].z), "=f"(v[b].w) : "l"(p));
        else
          asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v[b].x), "=f"(v[b].y), "=f"(v[b].z), "=f"(v[b].w) : "l"(p));
      }
    }
#pragma unroll
    for (int b = 0; b < 4; ++b)
      if (i + b * stride < n) __stcg(y + i + b * stride, v[b]);
  }
}
// Each warp copies a contiguous block of kBlock 16-byte vectors per step.
template <int kBlock>
__global__ void warp_block_copy(const float4* x, float4* y, int64_t n) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t base = warp * kBlock; base < n; base += warps * kBlock) {
    float4 v[kBlock / 32];
#pragma unroll
    for (int b = 0; b < kBlock / 32; ++b)
      if (base + b * 32 + lane < n) v[b] = __ldg(x + base + b * 32 + lane);
#pragma unroll
    for (int b = 0; b < kBlock / 32; ++b)
      if (base + b * 32 + lane < n) __stcg(y + base + b * 32 + lane, v[b]);
  }
}
// Each CTA streams its own contiguous share of the tensor.
template <int kUnroll>
__global__ void partitioned_copy(const float4* x, float4* y, int64_t n) {
  const int64_t share = (n + gridDim.x - 1) / gridDim.x;
  const int64_t begin = blockIdx.x * share, end = min(n, begin + share);
  for (int64_t i = begin + threadIdx.x; i < end; i += kUnroll * int64_t{blockDim.x}) {
    float4 v[kUnroll];
#pragma unroll
    for (int b = 0; b < kUnroll; ++b)
      if (i + b * blockDim.x < end) v[b] = __ldg(x + i + b * blockDim.x);
#pragma unroll
    for (int b = 0; b < kUnroll; ++b)
      if (i + b * blockDim.x < end) __stcg(y + i + b * blockDim.x, v[b]);
  }
}
// One thread per CTA moves tiles of `tile_bytes` through kStages shared-memory stages with bulk
// copies: loads of the next kStages-1 tiles in flight while the current tile is stored.
template <int kStages>
__global__ void tma_ring_copy(const char* x, char* y, int64_t bytes, int tile_bytes) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full[kStages];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < kStages; ++s) cuda::ptx::mbarrier_init(&full[s], 1);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  const int64_t tiles = bytes / tile_bytes;
  auto tile_of = [&](int64_t t) { return blockIdx.x + t * gridDim.x; };
  auto issue_load = [&](int64_t t) {
    const int64_t tile = tile_of(t);
    if (tile >= tiles) return;
    const int s = t % kStages;
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &full[s], tile_bytes);
    cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem + int64_t{s} * tile_bytes,
                             x + tile * tile_bytes, tile_bytes, &full[s]);
  };
  for (int t = 0; t < kStages - 1; ++t) issue_load(t);
  for (int64_t t = 0; tile_of(t) < tiles; ++t) {
    if (t > 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    issue_load(t + kStages - 1);
    const int s = t % kStages;
    const uint32_t parity = (t / kStages) & 1;
    while (!cuda::ptx::mbarrier_try_wait_parity(&full[s], parity)) {
    }
    cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, y + tile_of(t) * tile_bytes,
                             smem + int64_t{s} * tile_bytes, tile_bytes);
    cuda::ptx::cp_async_bulk_commit_group();
  }
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
}

// The driver's device-to-device memcpy as ncu's app-range replay counts it (bench/results/
// 2026-11-30-h200-8f37e66/sweeps/): one 256-thread CTA per 4 KiB, four 4-byte loads and stores a thread,
// no loop. The hardware hands the CTAs out in order, so the addresses in flight stay together.
template <typename V, int kPer>
__global__ void tile_copy(const V* __restrict__ x, V* __restrict__ y, int64_t n) {
  const int64_t base = int64_t{blockIdx.x} * blockDim.x * kPer + threadIdx.x;
  V v[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k)
    if (base + k * blockDim.x < n) v[k] = x[base + k * blockDim.x];
#pragma unroll
  for (int k = 0; k < kPer; ++k)
    if (base + k * blockDim.x < n) y[base + k * blockDim.x] = v[k];
}
// The forward's memory skeleton: a bulk copy of a `chunk`-byte tile into shared memory, then
// 16-byte stores. Tiles blockIdx.x, + gridDim.x, ... (non-persistent when the grid covers them),
// or, with `counter`, the next tile from a counter taken after the stores (persistent, in order).
__global__ void skeleton_copy(const char* x, char* y, int64_t bytes, int chunk, unsigned* counter) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full;
  __shared__ int64_t next;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&full, 1);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  uint32_t parity = 0;
  for (int64_t t = blockIdx.x; t * chunk < bytes; parity ^= 1) {
    if (threadIdx.x == 0) {
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &full,
                                           chunk);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem, x + t * chunk, chunk, &full);
    }
    while (!cuda::ptx::mbarrier_try_wait_parity(&full, parity)) {
    }
    const float4* s = reinterpret_cast<const float4*>(smem);
    float4* d = reinterpret_cast<float4*>(y + t * chunk);
    for (int i = threadIdx.x; i < chunk / 16; i += blockDim.x) __stcg(d + i, s[i]);
    if (threadIdx.x == 0) next = counter != nullptr ? gridDim.x + atomicAdd(counter, 1u) : t + gridDim.x;
    __syncthreads();
    t = next;
    __syncthreads();
  }
}

// The shared_resident kernel with its group as a thread-block cluster: every CTA sends its chunk
// statistics into every peer's shared memory with st.async, which completes bytes on the peer's
// mbarrier; each CTA waits on its own barrier (no L2 traffic, no polling of global memory).
template <int kThreads>
__global__ void __launch_bounds__(kThreads, kSharedThreadsPerSm / kThreads) cluster_kernel(const KernelArgs args) {
  using T = float;
  using Acc = float;
  using AllSum = BlockAllSum<Acc, kThreads, ForwardOp<T, false>::ExtraSum>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ typename AllSum::TempStorage reduce_storage;
  __shared__ alignas(16) ChunkStats<Acc> peers[2][16];
  __shared__ uint64_t arrived[2];
  const cg::cluster_group cluster = cg::this_cluster();
  const int group_size = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int64_t groups = gridDim.x / group_size;
  const int64_t begin = min(args.slice_len, rank * args.chunk_len);
  const int64_t len = min(args.slice_len - begin, args.chunk_len);
  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    cuda::ptx::mbarrier_init(&arrived[0], 1);
    cuda::ptx::mbarrier_init(&arrived[1], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  cluster.sync();
  int step = 0;
  for (int64_t slice = blockIdx.x / group_size; slice < args.num_slices; slice += groups, ++step) {
    const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
    T* dst = static_cast<T*>(args.out) + slice * args.slice_len + begin;
    const RaggedRange<T> range(src, len);
    T* buf = reinterpret_cast<T*>(smem) + range.misalign;
    loaded.wait(start_chunk_load(loaded, buf, src, range));
    Chunk<T, kThreads, 1> chunk;
    chunk.buf[0] = buf;
    chunk.range = range;
    chunk.len = len;
        AllSum all_sum{reduce_storage};
    const ChunkStats<Acc> mine = ForwardOp<T, false>::reduce(KernelArgs{}, {}, chunk, ChunkPlace{}, len, all_sum);
    const int b = step & 1;
    if (threadIdx.x == 0) {
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &arrived[b], static_cast<uint32_t>(group_size * sizeof(ChunkStats<Acc>)));
      uint32_t words[4];
      memcpy(words, &mine, sizeof(words));
      for (int r = 0; r < group_size; ++r) {
        auto* remote = reinterpret_cast<uint32_t*>(cluster.map_shared_rank(&peers[b][rank], r));
        uint64_t* remote_bar = cluster.map_shared_rank(&arrived[b], r);
        cuda::ptx::st_async(remote, words, remote_bar);
      }
    }
    while (!cuda::ptx::mbarrier_try_wait_parity(&arrived[b], static_cast<uint32_t>((step >> 1) & 1))) {
    }
    Acc mean_hi, mean_lo, m2;
    combine_chunks(peers[b], group_size, &mean_hi, &mean_lo, &m2);
    const int64_t channel = first_channel(args, slice);
    const ChannelAffine<Acc> channel_params = channel_affine<Acc>(args, channel);
    const SliceAffine<Acc> affine =
        finish_slice<Acc>(args, slice, channel_params.weight, channel_params.bias, mean_hi, mean_lo, m2,
                          rank == 0 && threadIdx.x == 0);
    chunk.store_each(dst, args.coaligned, WholeSliceWindow{}, 0, [&](const Acc(&v)[1]) { return affine.apply(v[0]); });
    __syncthreads();
  }
  cluster.sync();  // no CTA exits while a peer may still address its shared memory
}

__global__ void count_far(const float* a, const float* b, int64_t n, unsigned long long* bad) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    local += !(fabsf(a[i] - b[i]) <= 1e-4f);
  atomicAdd(bad, local);
}
__global__ void fill(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) * 40503u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = (h >> 8) * (1.0f / 16777216.0f);
  }
}
__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// A cooperative launch: the CTAs of a group wait for each other, so the grid must be resident.
template <typename Kernel, typename KernelArguments>
cudaError_t launch_cooperative(Kernel kernel, int grid, int threads, int smem_bytes, const KernelArguments& args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem_bytes;
  cudaLaunchAttribute coop{};
  coop.id = cudaLaunchAttributeCooperative;
  coop.val.cooperative = 1;
  config.attrs = &coop;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args);
}

int main() {
  const int64_t slices = 112 * 64, slice_len = 512 * 512, n = slices * slice_len;
  float *x, *y, *y_ref;
  void* ws;
  unsigned long long* bad;
  CK(cudaMalloc(&x, n * 4));
  CK(cudaMalloc(&y, n * 4));
  CK(cudaMalloc(&y_ref, n * 4));
  CK(cudaMalloc(&ws, slices * 32 * 32 + slices * 4));
  CK(cudaMalloc(&bad, 8));
  fill<<<132 * 8, 256>>>(x, n);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // One run between two CUDA events, in ms.
  auto once = [&](const std::function<cudaError_t()>& run) {
    cudaEventRecord(e0);
    run();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    return t;
  };
  // Median of 20 runs after 3 warm-ups.
  // A failed launch is reported: its time would be that of doing nothing.
  auto time = [&](const std::function<cudaError_t()>& run) -> double {
    cudaError_t err = cudaSuccess;
    for (int i = 0; i < 3; ++i) err = err != cudaSuccess ? err : run();
    std::vector<float> ms;
    for (int i = 0; i < 20; ++i) ms.push_back(once(run));
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err != cudaSuccess) std::printf("  !! %s\n", cudaGetErrorString(err));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  auto memcpy_run = [&] { return cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); };
  const double copy = time(memcpy_run);
  auto report = [&](const std::string& name, double ms) {
    std::printf("%-48s %8.3f ms  %.3fx\n", name.c_str(), ms, ms / copy);
    std::fflush(stdout);
  };
  // Counts outputs of a copy kernel that are not x, or of a forward variant that differ from the
  // library-equivalent kernel's (y_ref) by more than 1e-4.
  auto check = [&](const std::string& name, const float* want) {
    cudaMemset(bad, 0, 8);
    count_far<<<132 * 8, 256>>>(y, want, n, bad);
    unsigned long long h = 0;
    cudaMemcpy(&h, bad, 8, cudaMemcpyDeviceToHost);
    if (h != 0) std::printf("%-48s !! %llu outputs wrong\n", name.c_str(), h);
  };
  report("cudaMemcpyAsync device to device", copy);

  // The copy floor. Is the device-to-device memcpy a kernel on the SMs? Run it while a kernel
  // holds every SM for about 40 ms (two waves of 20 ms): a copy engine would not wait.
  {
    cudaStream_t side;
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    spin<<<sms * 64, 32, 0, side>>>(2000000LL * 20);
    std::printf("%-48s %8.3f ms\n", "memcpy queued behind a kernel on every SM", once(memcpy_run));
    CK(cudaDeviceSynchronize());
  }
  auto copy_kernel = [&](const std::string& name, auto kernel, int per_sm, int threads = 256) {
    report(name, time([&] {
      kernel<<<sms * per_sm, threads>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n / 4);
      return cudaGetLastError();
    }));
    check(name, x);
  };
  copy_kernel("copy ld.cs / st.cg, 4 in flight, 4 CTAs/SM", plain_copy<4, 0, 0>, 4);
  copy_kernel("copy ld.nc / st.cg, 4 in flight, 4 CTAs/SM", plain_copy<4, 1, 0>, 4);
  copy_kernel("copy ld / st, 4 in flight, 4 CTAs/SM", plain_copy<4, 2, 2>, 4);
  copy_kernel("copy ld.cs / st.cg, 8 in flight, 8 CTAs/SM", plain_copy<8, 0, 0>, 8);
  copy_kernel("copy ld.nc.L2::256B / st.cg, 4 CTAs/SM", hinted_copy<256>, 4);
  copy_kernel("copy warp blocks of 4 KiB, 4 CTAs/SM", warp_block_copy<256>, 4);
  copy_kernel("copy, each CTA its own share, 4 CTAs/SM", partitioned_copy<4>, 4);
  // The shape of NVIDIA's nvbandwidth SM copy: one CTA of 512 per SM, 12 plain loads in flight.
  copy_kernel("copy ld / st, 12 in flight, 1 CTA of 512/SM", plain_copy<12, 2, 2>, 1, 512);
  copy_kernel("copy ld / st, 12 in flight, 2 CTAs of 512/SM", plain_copy<12, 2, 2>, 2, 512);
  copy_kernel("copy ld.cs / st.cg, 12 in flight, 1 CTA of 512/SM", plain_copy<12, 0, 0>, 1, 512);
  copy_kernel("copy ld / st, 16 in flight, 1 CTA of 512/SM", plain_copy<16, 2, 2>, 1, 512);
  // The driver memcpy's shape, then the forward's skeleton walked three ways (VARIANTS 34).
  report("copy, memcpy's shape: a CTA per 4 KiB, 4 x 4 B", time([&] {
    tile_copy<float, 4><<<n / 1024, 256>>>(x, y, n);
    return cudaGetLastError();
  }));
  check("memcpy's shape", x);
  report("copy, a CTA per 4 KiB, 16 B a thread", time([&] {
    tile_copy<float4, 1><<<n / 1024, 256>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n / 4);
    return cudaGetLastError();
  }));
  {
    constexpr int kChunk = 64 * 1024;
    unsigned* tiles = nullptr;
    CK(cudaMalloc(&tiles, 4));
    cudaFuncSetAttribute(skeleton_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, kChunk);
    const auto* xb = reinterpret_cast<const char*>(x);
    auto* yb = reinterpret_cast<char*>(y);
    report("skeleton 64 KiB tiles, a CTA per tile", time([&] {
      skeleton_copy<<<n * 4 / kChunk, 256, kChunk>>>(xb, yb, n * 4, kChunk, nullptr);
      return cudaGetLastError();
    }));
    report("skeleton 64 KiB tiles, 3/SM striding", time([&] {
      skeleton_copy<<<sms * 3, 256, kChunk>>>(xb, yb, n * 4, kChunk, nullptr);
      return cudaGetLastError();
    }));
    report("skeleton 64 KiB tiles, 3/SM in order", time([&] {
      cudaMemsetAsync(tiles, 0, 4);
      skeleton_copy<<<sms * 3, 256, kChunk>>>(xb, yb, n * 4, kChunk, tiles);
      return cudaGetLastError();
    }));
    check("skeleton in order", x);
    CK(cudaFree(tiles));
  }
  {
    constexpr int kStages = 3, kTile = 64 * 1024;
    cudaFuncSetAttribute(tma_ring_copy<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, kStages * kTile);
    report("copy by bulk copies, 3 x 64 KiB stages, 1 CTA/SM", time([&] {
      tma_ring_copy<kStages><<<sms, 32, kStages * kTile>>>(reinterpret_cast<const char*>(x), reinterpret_cast<char*>(y),
                                                         n * 4, kTile);
      return cudaGetLastError();
    }));
    check("tma ring", x);
  }

  // Forward variants (fp32 seed; group = CTAs per slice, per_sm = CTAs per SM).
  auto forward_args = [&](int group) {
    ResidentArgs a{};
    a.x = x;
    a.out = y;
    a.num_slices = slices;
    a.channels = 64;
    a.slice_len = slice_len;
    a.slice_channels = 1;
    a.groups = 64;
    a.channel_len = slice_len;
    a.eps = 1e-5;
    a.param_dtype = inorm::DType::kFloat32;
    a.chunk_len = ((slice_len + group - 1) / group + 3) / 4 * 4;
    a.coaligned = true;
    a.ctas_per_slice = group;
    a.slot_bytes = (group * 16 + 127) / 128 * 128;
    a.chunk_partials = ws;
    a.slice_arrivals = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + slices * 32 * 32);
    return a;
  };
  auto run = [&](const std::string& name, auto kernel, int threads, int per_sm, int group) {
    const ResidentArgs a = forward_args(group);
    const int smem_bytes = a.slot_bytes + static_cast<int>((a.chunk_len * 4 + 16 + 127) / 128 * 128);
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    int resident = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, threads, smem_bytes);
    if (resident < per_sm) {
      std::printf("%-48s only %d CTAs per SM fit\n", name.c_str(), resident);
      return;
    }
    const int grid = sms * per_sm / group * group;
    report(name, time([=] {
      cudaMemsetAsync(a.slice_arrivals, 0, slices * 4);
      cudaMemsetAsync(ws, 0, slices * group * 32);
      return launch_cooperative(kernel, grid, threads, smem_bytes, a);
    }));
  };
  auto run_cluster = [&](const std::string& name, auto kernel, int threads, int group) {
    const ResidentArgs a = forward_args(group);
    const int smem_bytes = static_cast<int>((a.chunk_len * 4 + 16 + 127) / 128 * 128);
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaLaunchConfig_t config{};
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem_bytes;
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = group;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
    config.gridDim = dim3(group * 64);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess || clusters == 0) {
      std::printf("%-48s no cluster of %d fits\n", name.c_str(), group);
      cudaGetLastError();
      return;
    }
    config.gridDim = dim3(group * clusters);
    report(name + " (" + std::to_string(clusters) + " clusters)", time([=] { return cudaLaunchKernelEx(&config, kernel, a); }));
    check(name, y_ref);
  };
  run("L2 exchange, 16 CTAs/slice, 3/SM (library f6cbc97)", real_kernel<256, 0>, 256, 3, 16);
  CK(cudaMemcpy(y_ref, y, n * 4, cudaMemcpyDeviceToDevice));
  run("  no exchange (wrong output)", real_kernel<256, 4>, 256, 3, 16);
  run("  bulk stores", real_kernel<256, 8>, 256, 3, 16);
  run("  bulk stores, no exchange (wrong output)", real_kernel<256, 12>, 256, 3, 16);
  run("  one thread polls, 128 ns pauses", real_kernel<256, 0, 128>, 256, 3, 16);
  run("  tagged 64-bit words, no counter", real_kernel<256, 0, -1>, 256, 3, 16);
  run_cluster("cluster of 16, distributed shared memory", cluster_kernel<256>, 256, 16);
  run_cluster("cluster of 8, distributed shared memory", cluster_kernel<256>, 256, 8);
  run("L2 exchange, 11 CTAs/slice, 2/SM (library 43539ca)", real_kernel<512, 0>, 512, 2, 11);
  run("  one pass of statistics (wrong output)", real_kernel<512, 1>, 512, 2, 11);
  run("  no statistics (wrong output)", real_kernel<512, 2>, 512, 2, 11);
  run("  no exchange (wrong output)", real_kernel<512, 4>, 512, 2, 11);
  run("  no statistics, no exchange (wrong output)", real_kernel<512, 6>, 512, 2, 11);
  {  // Slice k in registers while slice k+1 loads into shared memory (one CTA per SM).
    constexpr int kGroup = 11;
    const Args a{x, y, slices, slice_len, ((slice_len + kGroup - 1) / kGroup + 3) / 4 * 4, kGroup,
                 static_cast<float*>(ws), reinterpret_cast<unsigned*>(static_cast<char*>(ws) + slices * 32 * 32)};
    const int smem_bytes = static_cast<int>(a.chunk_len * 4 + 16);
    auto kernel = reg_kernel<1024, 6, 1, 1>;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    report("registers + next slice loading (sum only, wrong output)", time([=] {
      cudaMemsetAsync(a.arrivals, 0, slices * 4);
      return launch_cooperative(kernel, sms / kGroup * kGroup, 1024, smem_bytes, a);
    }));
  }
  report("cudaMemcpyAsync again", time(memcpy_run));
  return 0;
}
