// kSharedResident: each slice lives in shared memory between its statistics and its
// normalization, so x is read once and y written once.
//
// A persistent grid of up to 6 CTAs per SM. Consecutive CTAs form groups of `ctas_per_slice`; a
// group walks its slices (group, group + groups, ...) and each CTA holds the same chunk of every
// slice: bulk async copies in, corrected two-pass statistics from shared memory, an exchange of
// chunk statistics within the group through L2 (a release counter per slice; the cooperative launch
// guarantees that every CTA of a group is resident), a rank-ordered combination (every CTA computes
// the same bits), then 16-byte streaming stores, piece by piece, each piece's buffer refilled with
// the next slice's copy as soon as it is stored. The other CTAs on the SM overlap one CTA's
// reduction and exchange with their loads and stores. dev/VARIANTS.md records the designs this one
// beat (clusters with distributed shared memory, double buffering inside a CTA).
#include <cuda/atomic>
#include <cuda/ptx>
#include <mutex>
#include <set>
#include <utility>

#include "config.h"
#include "kernels/chunk_stats.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"

namespace inorm::detail {
namespace {

// A CTA's chunk of one slice, in shared memory: the body arrives as kSharedLoadPieces bulk async
// copies, each completing its own mbarrier, the ragged ends by ordinary loads.
template <typename T>
struct ChunkSlot {
  const T* src;
  RaggedRange<T> range;
  T* buf;  // mirrors src modulo 16 bytes, so the body is 16-byte aligned
  int64_t piece_vecs;

  __device__ __forceinline__ ChunkSlot(const T* chunk_src, int64_t len, unsigned char* buffer)
      : src(chunk_src), range(chunk_src, len) {
    buf = reinterpret_cast<T*>(buffer) + range.misalign;
    piece_vecs = (range.body_vecs + kSharedLoadPieces - 1) / kSharedLoadPieces;
  }
  __device__ __forceinline__ int64_t piece_begin(int piece) const { return min(range.body_vecs, piece * piece_vecs); }
  __device__ __forceinline__ int64_t piece_end(int piece) const { return piece_begin(piece + 1); }

  // Thread 0 only. The piece's previous contents must have been read by every thread (a barrier
  // before this); the proxy fence orders those generic reads before the copy engine's writes.
  __device__ __forceinline__ void start_piece(int piece, uint64_t* loaded) const {
    const int64_t first = piece_begin(piece);
    const uint32_t bytes = static_cast<uint32_t>((piece_end(piece) - first) * 16);
    if (bytes == 0) return;
    const int64_t offset = range.head + first * kVecOf<T>;
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         &loaded[piece], bytes);
    cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, buf + offset, src + offset, bytes,
                             &loaded[piece]);
  }

  // Every thread: loads its ragged element, waits for the pieces (the `parity` phase of each
  // piece's barrier), then a CTA barrier makes the ragged stores visible.
  __device__ __forceinline__ void finish_load(const uint64_t* loaded, uint32_t parity) const {
    if (threadIdx.x < range.ragged()) buf[range.ragged_index(threadIdx.x)] = src[range.ragged_index(threadIdx.x)];
    for (int piece = 0; piece < kSharedLoadPieces; ++piece) {
      if (piece_end(piece) == piece_begin(piece)) continue;
      while (!cuda::ptx::mbarrier_try_wait_parity(const_cast<uint64_t*>(&loaded[piece]), parity)) {
      }
    }
    __syncthreads();
  }
};

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads, kSharedThreadsPerSm / kThreads)
    shared_resident_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Chunk = ChunkView<T, kThreads>;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t piece_loaded[kSharedLoadPieces];
  __shared__ typename Chunk::TempStorage reduce_storage;
  __shared__ Acc broadcast;

  const int group_size = args.ctas_per_slice;
  const int64_t groups = gridDim.x / group_size;
  const int rank = static_cast<int>(blockIdx.x % group_size);
  const int64_t begin = min(args.slice_len, rank * args.chunk_len);
  const int64_t len = min(args.slice_len - begin, args.chunk_len);
  auto* peer_stats = reinterpret_cast<ChunkStats<Acc>*>(smem);
  unsigned char* buffer = smem + args.slot_bytes;
  const T* x = static_cast<const T*>(args.x);
  // When every slice's chunk sits alike modulo 16 bytes (and y like x), piece p of the next slice
  // lands exactly where piece p of this one was: it is loaded as soon as p is normalized, so the
  // next slice's loads overlap this slice's stores. Otherwise the next slice loads afterwards.
  const bool overlap_next_load = args.y_coaligned && (args.slice_len * sizeof(T)) % 16 == 0;

  if (threadIdx.x == 0) {
    for (int piece = 0; piece < kSharedLoadPieces; ++piece) cuda::ptx::mbarrier_init(&piece_loaded[piece], 1);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barriers
  }
  __syncthreads();

  int64_t slice = blockIdx.x / group_size;
  if (threadIdx.x == 0 && slice < args.num_slices) {
    const ChunkSlot<T> first(x + slice * args.slice_len + begin, len, buffer);
    for (int piece = 0; piece < kSharedLoadPieces; ++piece) first.start_piece(piece, piece_loaded);
  }
  for (uint32_t parity = 0; slice < args.num_slices; slice += groups, parity ^= 1u) {
    const ChunkSlot<T> slot(x + slice * args.slice_len + begin, len, buffer);
    slot.finish_load(piece_loaded, parity);
    const Chunk chunk{slot.buf, slot.range, len};
    const ChunkStats<Acc> mine = chunk.statistics(reduce_storage, broadcast);

    if (group_size == 1) {
      if (threadIdx.x == 0) peer_stats[0] = mine;
    } else {
      auto* partials = static_cast<ChunkStats<Acc>*>(args.chunk_partials) + slice * group_size;
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[slice]);
      if (threadIdx.x == 0) {
        partials[rank] = mine;
        arrivals.fetch_add(1u, cuda::memory_order_release);
      }
      for (int r = threadIdx.x; r < group_size; r += kThreads) {
        while (arrivals.load(cuda::memory_order_acquire) < static_cast<unsigned>(group_size)) {
        }
        // L2, not a possibly stale L1 line shared with another slice's partials.
        ChunkStats<Acc> peer;
        peer.count = __ldcg(&partials[r].count);
        peer.mean = __ldcg(&partials[r].mean);
        peer.resid = __ldcg(&partials[r].resid);
        peer.m2 = __ldcg(&partials[r].m2);
        peer_stats[r] = peer;
      }
    }
    __syncthreads();
    Acc mean_hi, mean_lo, m2;
    combine_chunks(peer_stats, group_size, &mean_hi, &mean_lo, &m2);
    const SliceAffine<Acc> affine =
        finish_slice<Acc>(args, slice, mean_hi, mean_lo, m2, rank == 0 && threadIdx.x == 0);
    T* dst = static_cast<T*>(args.y) + slice * args.slice_len + begin;
    const int64_t next = slice + groups;
    if (overlap_next_load) {
      const ChunkSlot<T> next_slot(x + min(next, args.num_slices - 1) * args.slice_len + begin, len, buffer);
      chunk.normalize_ragged(dst, affine);
      for (int piece = 0; piece < kSharedLoadPieces; ++piece) {
        chunk.normalize_body(dst, affine, slot.piece_begin(piece), slot.piece_end(piece));
        __syncthreads();  // piece read by every thread (and, after the last, peer_stats too)
        if (threadIdx.x == 0 && next < args.num_slices) next_slot.start_piece(piece, piece_loaded);
      }
    } else {
      chunk.normalize(dst, affine, args.y_coaligned);
      __syncthreads();  // the buffer and peer_stats are free for the next slice
      if (threadIdx.x == 0 && next < args.num_slices) {
        const ChunkSlot<T> next_slot(x + next * args.slice_len + begin, len, buffer);
        for (int piece = 0; piece < kSharedLoadPieces; ++piece) next_slot.start_piece(piece, piece_loaded);
      }
    }
  }
}

using KernelFn = void (*)(KernelArgs);

template <typename T>
KernelFn shared_kernel_for(int threads) {
  switch (threads) {
    case 128: return &shared_resident_kernel<T, 128>;
    case 256: return &shared_resident_kernel<T, 256>;
    case 512: return &shared_resident_kernel<T, 512>;
  }
  return nullptr;
}
static_assert(kSharedMinThreads == 128 && kSharedMaxThreads == 512,
              "shared_kernel_for lists every power of two the planner may choose");

// Lets a kernel use the device's whole opt-in shared memory; done once per kernel and device.
Status prepare_kernel(const void* kernel) {
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> prepared;
  int device = 0;
  Status status = cuda_status(cudaGetDevice(&device), "cudaGetDevice");
  if (!status.ok()) return status;
  const std::lock_guard<std::mutex> lock(mutex);
  if (prepared.count({kernel, device}) != 0) return Status::Ok();
  int optin = 0;
  status = cuda_status(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                       "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  if (!status.ok()) return status;
  cudaFuncAttributes attributes{};
  status = cuda_status(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes");
  if (!status.ok()) return status;
  status = cuda_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            optin - static_cast<int>(attributes.sharedSizeBytes)),
                       "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  if (!status.ok()) return status;
  prepared.insert({kernel, device});
  return Status::Ok();
}

Status shared_kernel(const Plan& plan, KernelFn* kernel) {
  const Status status = dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    *kernel = shared_kernel_for<decltype(tag)>(plan.threads);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  if (*kernel == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan names a shared_resident thread count that is not compiled in");
  }
  return prepare_kernel(reinterpret_cast<const void*>(*kernel));
}

}  // namespace

Status launch_shared(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  KernelFn kernel = nullptr;
  Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  if (plan.ctas_per_slice > 1) {
    status = cuda_status(cudaMemsetAsync(args.slice_arrivals, 0,
                                         static_cast<std::size_t>(plan.num_slices) * sizeof(unsigned), stream),
                         "cudaMemsetAsync(slice arrivals)");
    if (!status.ok()) return status;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.grid));
  config.blockDim = dim3(static_cast<unsigned>(plan.threads));
  config.dynamicSmemBytes = static_cast<std::size_t>(plan.smem_bytes);
  config.stream = stream;
  // CTAs of a group wait for each other: they must all be resident, which a cooperative launch
  // guarantees (or refuses with an error instead of hanging).
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  config.attrs = &cooperative;
  config.numAttrs = plan.ctas_per_slice > 1 ? 1 : 0;
  return cuda_status(cudaLaunchKernelEx(&config, kernel, args), "shared_resident launch");
}

Status shared_resident_ctas_per_sm(const Plan& plan, int* ctas_per_sm) {
  KernelFn kernel = nullptr;
  const Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  return cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas_per_sm, kernel, plan.threads,
                                                                   static_cast<std::size_t>(plan.smem_bytes)),
                     "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
}

}  // namespace inorm::detail
