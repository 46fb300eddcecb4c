// kSharedResident: each slice lives in shared memory between its statistics and its
// normalization, so x is read once and y written once.
//
// A persistent grid of up to 6 CTAs per SM. Each thread-block cluster of `ctas_per_slice` CTAs
// walks its slices (cluster, cluster + clusters, ...) and each CTA holds the same chunk of every
// slice: one bulk async copy in, corrected two-pass statistics from shared memory, then thread 0
// sends the chunk statistics into every peer's shared memory with st.async, which completes bytes
// on the peer's mbarrier; each CTA waits on its own barrier, combines the chunks in rank order
// (every CTA computes the same bits), then stores with 16-byte stores. The other CTAs on the SM
// overlap one CTA's reduction and exchange with their loads and stores. Clusters share nothing,
// so the grid needs no cooperative launch. dev/VARIANTS.md records the designs this one beat (an
// exchange through L2 with a release counter per slice: seed fp32 1.17x copy against 1.12x in the
// same process; non-persistent clusters; double buffering inside a CTA).
#include <cooperative_groups.h>

#include <cuda/barrier>
#include <cuda/ptx>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "config.h"
#include "kernels/chunk_stats.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"

namespace inorm::detail {
namespace {

namespace cg = cooperative_groups;
using Barrier = cuda::barrier<cuda::thread_scope_block>;

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads, kSharedThreadsPerSm / kThreads)
    shared_resident_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Chunk = ChunkView<T, kThreads>;
  // Chunk statistics travel as 16-byte st.async pieces.
  constexpr int kPieces = sizeof(ChunkStats<Acc>) / 16;
  static_assert(sizeof(ChunkStats<Acc>) % 16 == 0, "ChunkStats is a whole number of 16-byte pieces");
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ typename Chunk::TempStorage reduce_storage;
  __shared__ Acc broadcast;
  // Two inboxes alternate: a peer can be at most one round ahead, since finishing a round needs
  // this CTA's statistics of that round. arrived[b] completes when this CTA has arrived (after
  // writing its own slot) and every peer's st.async bytes have landed.
  __shared__ alignas(16) ChunkStats<Acc> inbox[2][kSharedMaxCtasPerSlice];
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
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);  // peers see them
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
  cluster.sync();  // every CTA's barriers are initialized before anyone sends

  int round = 0;
  for (int64_t slice = blockIdx.x / group_size; slice < args.num_slices; slice += groups, ++round) {
    const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
    T* dst = static_cast<T*>(args.y) + slice * args.slice_len + begin;
    const RaggedRange<T> range(src, len);
    // buf[i] holds src[i] at the same address modulo 16, so the body is 16-byte aligned.
    T* buf = reinterpret_cast<T*>(smem) + range.misalign;
    loaded.wait(start_chunk_load(loaded, buf, src, range));
    const Chunk chunk{buf, range, len};
    const ChunkStats<Acc> mine = chunk.statistics(reduce_storage, broadcast);
    const int b = round & 1;
    if (threadIdx.x == 0) {
      // Its own slot by a plain store (compute-sanitizer rejects st.async in a one-CTA cluster),
      // released by this arrival; the peers' slots by st.async onto their barriers.
      inbox[b][rank] = mine;
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &arrived[b], static_cast<uint32_t>((group_size - 1) * sizeof(mine)));
      uint32_t words[kPieces][4];
      memcpy(words, &mine, sizeof(words));
      for (int r = 0; r < group_size; ++r) {
        if (r == rank) continue;
        auto* slot = reinterpret_cast<uint32_t(*)[4]>(cluster.map_shared_rank(&inbox[b][rank], r));
        uint64_t* peer_arrived = cluster.map_shared_rank(&arrived[b], r);
#pragma unroll
        for (int p = 0; p < kPieces; ++p) cuda::ptx::st_async(slot[p], words[p], peer_arrived);
      }
    }
    while (!cuda::ptx::mbarrier_try_wait_parity(&arrived[b], static_cast<uint32_t>((round >> 1) & 1))) {
    }
    Acc mean_hi, mean_lo, m2;
    combine_chunks(inbox[b], group_size, &mean_hi, &mean_lo, &m2);
    const SliceAffine<Acc> affine =
        finish_slice<Acc>(args, slice, mean_hi, mean_lo, m2, rank == 0 && threadIdx.x == 0);
    chunk.normalize(dst, affine, args.y_coaligned);
    __syncthreads();  // the buffer is free for the next slice
  }
  cluster.sync();  // no CTA exits while a peer may still address its shared memory
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
  // Clusters of up to kSharedMaxCtasPerSlice CTAs; above 8 they are "non-portable" on sm_90.
  return allow_max_dynamic_smem(reinterpret_cast<const void*>(*kernel), /*non_portable_clusters=*/true);
}

cudaLaunchConfig_t launch_config(const Plan& plan, cudaLaunchAttribute* cluster, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.grid));
  config.blockDim = dim3(static_cast<unsigned>(plan.threads));
  config.dynamicSmemBytes = static_cast<std::size_t>(plan.smem_bytes);
  config.stream = stream;
  cluster->id = cudaLaunchAttributeClusterDimension;
  cluster->val.clusterDim.x = static_cast<unsigned>(plan.ctas_per_slice);
  cluster->val.clusterDim.y = 1;
  cluster->val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  return config;
}

}  // namespace

Status launch_shared(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  KernelFn kernel = nullptr;
  const Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  cudaLaunchAttribute cluster{};
  const cudaLaunchConfig_t config = launch_config(plan, &cluster, stream);
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

Status shared_resident_clusters(const Plan& plan, int* clusters) {
  KernelFn kernel = nullptr;
  const Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  // The answer depends only on the kernel, its launch shape and the device: asked once each.
  using Key = std::tuple<const void*, int, int, int, int>;
  static std::mutex mutex;
  static std::map<Key, int> known;
  int device = 0;
  Status queried = cuda_status(cudaGetDevice(&device), "cudaGetDevice");
  if (!queried.ok()) return queried;
  const Key key{reinterpret_cast<const void*>(kernel), device, plan.threads, plan.smem_bytes, plan.ctas_per_slice};
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = known.find(key);
  if (found != known.end()) {
    *clusters = found->second;
    return Status::Ok();
  }
  cudaLaunchAttribute cluster{};
  const cudaLaunchConfig_t config = launch_config(plan, &cluster, nullptr);
  queried = cuda_status(cudaOccupancyMaxActiveClusters(clusters, kernel, &config), "cudaOccupancyMaxActiveClusters");
  if (queried.ok()) known.emplace(key, *clusters);
  return queried;
}

}  // namespace inorm::detail
