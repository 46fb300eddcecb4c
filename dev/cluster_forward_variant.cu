// dev scratch: variant 1 of the slice-resident forward (see dev/VARIANTS.md), kept because it lost.
// One CTA per (slice, rank) of a thread-block cluster of up to 16 CTAs, not persistent: one bulk
// async copy in, statistics from shared memory, partials exchanged through distributed shared
// memory, stores out, exit. Compiled by CI (target inorm_dev_variants) so it does not rot; not
// linked into the library. Measured on the H200 (seed fp32): 1.34x copy at best (cluster 10),
// 1.68x at cluster 16 (only 14 clusters resident); every CTA loads, syncs and stores in lockstep.
#include <cooperative_groups.h>

#include <cuda/barrier>
#include <cuda/ptx>

#include "kernels/chunk.cuh"
#include "kernels/forward_op.cuh"

namespace cg = cooperative_groups;

namespace inorm::detail {

inline constexpr int kVariantMaxClusterSize = 16;

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads) cluster_resident_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using AllSum = BlockAllSum<Acc, kThreads, typename ForwardOp<T, false>::ExtraSum>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> loaded;
  __shared__ typename AllSum::TempStorage reduce_storage;
  __shared__ ChunkStats<Acc> cluster_stats[kVariantMaxClusterSize];

  const cg::cluster_group cluster = cg::this_cluster();
  auto cluster_started = cluster.barrier_arrive();  // remote smem is writable once all CTAs run
  const unsigned cluster_size = cluster.num_blocks();
  const unsigned rank = cluster.block_rank();
  const int64_t slice = blockIdx.x / cluster_size;
  const int64_t begin = min(args.slice_len, static_cast<int64_t>(rank) * args.chunk_len);
  const int64_t len = min(args.slice_len - begin, args.chunk_len);
  const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
  const RaggedRange<T> range(src, len);
  T* buf = reinterpret_cast<T*>(smem) + range.misalign;
  Chunk<T, kThreads, 1> chunk;
  chunk.buf[0] = buf;
  chunk.range = range;
  chunk.len = len;
  
  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  loaded.wait(start_chunk_load(loaded, buf, src, range));

  AllSum all_sum{reduce_storage};
  const ChunkStats<Acc> mine =
      ForwardOp<T, false>::reduce(args, {}, chunk, ChunkPlace{slice, begin, rank, threadIdx.x == 0}, len, all_sum);
  cluster.barrier_wait(std::move(cluster_started));
  if (threadIdx.x == 0) {
    for (unsigned r = 0; r < cluster_size; ++r) *cluster.map_shared_rank(&cluster_stats[rank], r) = mine;
  }
  cluster.sync();
  Acc mean_hi, mean_lo, m2;
  combine_chunks(cluster_stats, static_cast<int>(cluster_size), &mean_hi, &mean_lo, &m2);
  const int64_t channel = first_channel(args, slice);
  const ChannelAffine<Acc> channel_params = channel_affine<Acc>(args, channel);
  const SliceAffine<Acc> affine =
      finish_slice<Acc>(args, slice, channel_params.weight, channel_params.bias, mean_hi, mean_lo, m2,
                        rank == 0 && threadIdx.x == 0);
  chunk.store_each(static_cast<T*>(args.out) + slice * args.slice_len + begin, args.coaligned, WholeSliceWindow{},
                   begin, [&](const Acc(&v)[1]) { return affine.apply(v[0]); });
}

template __global__ void cluster_resident_kernel<float, 512>(KernelArgs);
template __global__ void cluster_resident_kernel<__nv_bfloat16, 512>(KernelArgs);

}  // namespace inorm::detail
