// kSharedResident: a slice lives in the shared memory of one CTA or of a thread-block cluster of up
// to 16 CTAs between its statistics and its normalization, so x is read once and y written once.
//
// Per CTA: one bulk async copy brings the 16-byte-aligned body of its chunk into shared memory
// (ragged ends by ordinary loads); a corrected two-pass over shared memory gives the chunk's
// (count, mean, residual, M2); the CTAs of a cluster exchange these through distributed shared
// memory and combine them in rank order (Chan's formula around rank 0's mean, so every CTA gets
// the same bits); then each CTA normalizes its chunk from shared memory with 16-byte streaming
// stores. Several CTAs per SM (64 KiB each) overlap one chunk's loads with another's stores.
#include <cooperative_groups.h>

#include <cub/block/block_reduce.cuh>
#include <cuda/barrier>
#include <cuda/ptx>
#include <mutex>
#include <set>
#include <utility>

#include "config.h"
#include "kernels/common.cuh"
#include "kernels/launchers.h"

namespace cg = cooperative_groups;

namespace inorm::detail {
namespace {

template <typename Acc>
struct ChunkStats {
  Acc count;
  Acc mean;   // rounded mean of the chunk
  Acc resid;  // mean of (x - mean): what the rounding missed
  Acc m2;     // sum of squared deviations from the exact chunk mean
};

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads) shared_resident_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  constexpr int kVec = kVecOf<T>;
  using SumReduce = cub::BlockReduce<Acc, kThreads>;
  using PairReduce = cub::BlockReduce<PairSum<Acc>, kThreads>;

  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> loaded;
  __shared__ union {
    typename SumReduce::TempStorage sum;
    typename PairReduce::TempStorage pair;
  } reduce_storage;
  __shared__ ChunkStats<Acc> cluster_stats[kMaxClusterSize];
  __shared__ Acc chunk_sum;

  const cg::cluster_group cluster = cg::this_cluster();
  // Remote shared memory may be written only once every CTA of the cluster has started.
  auto cluster_started = cluster.barrier_arrive();
  const unsigned cluster_size = cluster.num_blocks();
  const unsigned rank = cluster.block_rank();

  const int64_t slice = blockIdx.x / cluster_size;
  const int64_t begin = min(args.slice_len, static_cast<int64_t>(rank) * args.chunk_len);
  const int64_t len = min(args.slice_len - begin, args.chunk_len);
  const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
  T* dst = static_cast<T*>(args.y) + slice * args.slice_len + begin;
  const RaggedRange<T> range(src, len);
  // buf[i] holds src[i] at the same address modulo 16, so buf + head is 16-byte aligned.
  T* buf = reinterpret_cast<T*>(smem) + range.misalign;
  const Pack<T>* body = reinterpret_cast<const Pack<T>*>(buf + range.head);

  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
  __syncthreads();
  cuda::barrier<cuda::thread_scope_block>::arrival_token token;
  if (threadIdx.x == 0 && range.body_vecs > 0) {
    const uint32_t bytes = static_cast<uint32_t>(range.body_vecs * 16);
    cuda::device::memcpy_async_tx(buf + range.head, src + range.head, cuda::aligned_size_t<16>(bytes),
                                  loaded);
    token = cuda::device::barrier_arrive_tx(loaded, 1, bytes);
  } else {
    const int e = static_cast<int>(threadIdx.x) - 1;
    if (e >= 0 && e < range.ragged()) buf[range.ragged_index(e)] = src[range.ragged_index(e)];
    token = loaded.arrive();
  }
  loaded.wait(std::move(token));

  Acc sum = Acc(0);
  for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
    const Pack<T> pack = body[v];
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum += Traits<T>::to_acc(pack.v[k]);
  }
  if (threadIdx.x < range.ragged()) sum += Traits<T>::to_acc(buf[range.ragged_index(threadIdx.x)]);
  sum = SumReduce(reduce_storage.sum).Sum(sum);
  if (threadIdx.x == 0) chunk_sum = sum;
  __syncthreads();
  const Acc count = static_cast<Acc>(len);
  const Acc mean = len > 0 ? chunk_sum / count : Acc(0);

  PairSum<Acc> dev{Acc(0), Acc(0)};
  for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
    const Pack<T> pack = body[v];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const Acc d = Traits<T>::to_acc(pack.v[k]) - mean;
      dev.first += d;
      dev.second += d * d;
    }
  }
  if (threadIdx.x < range.ragged()) {
    const Acc d = Traits<T>::to_acc(buf[range.ragged_index(threadIdx.x)]) - mean;
    dev.first += d;
    dev.second += d * d;
  }
  dev = PairReduce(reduce_storage.pair).Reduce(dev, PairSumOp<Acc>{});

  cluster.barrier_wait(std::move(cluster_started));
  if (threadIdx.x == 0) {
    const Acc resid = len > 0 ? dev.first / count : Acc(0);
    const ChunkStats<Acc> mine{count, mean, resid, dev.second - dev.first * resid};
    for (unsigned r = 0; r < cluster_size; ++r) *cluster.map_shared_rank(&cluster_stats[rank], r) = mine;
  }
  cluster.sync();

  // Combine around rank 0's mean: the differences are small, so no digits are lost to the offset.
  const Acc base = cluster_stats[0].mean;
  Acc total = Acc(0);
  Acc weighted = Acc(0);
  for (unsigned r = 0; r < cluster_size; ++r) {
    const ChunkStats<Acc> s = cluster_stats[r];
    if (s.count == Acc(0)) continue;
    total += s.count;
    weighted += s.count * ((s.mean - base) + s.resid);
  }
  const Acc offset = weighted / total;
  Acc m2 = Acc(0);
  for (unsigned r = 0; r < cluster_size; ++r) {
    const ChunkStats<Acc> s = cluster_stats[r];
    if (s.count == Acc(0)) continue;
    const Acc d = (s.mean - base) + s.resid - offset;
    m2 += s.m2 + s.count * d * d;
  }
  const SliceAffine<Acc> affine =
      finish_slice<Acc>(args, slice, base, offset, m2, rank == 0 && threadIdx.x == 0);

  if (args.y_coaligned) {
    for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
      Pack<T> pack = body[v];
#pragma unroll
      for (int k = 0; k < kVec; ++k) pack.v[k] = Traits<T>::from_acc(affine.apply(Traits<T>::to_acc(pack.v[k])));
      store_pack_streaming(dst + range.head + v * kVec, pack);
    }
    if (threadIdx.x < range.ragged()) {
      const int64_t i = range.ragged_index(threadIdx.x);
      dst[i] = Traits<T>::from_acc(affine.apply(Traits<T>::to_acc(buf[i])));
    }
  } else {
    for (int64_t i = threadIdx.x; i < len; i += kThreads) {
      dst[i] = Traits<T>::from_acc(affine.apply(Traits<T>::to_acc(buf[i])));
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

// Lets a kernel use the device's whole opt-in shared memory and clusters of more than 8 CTAs;
// done once per kernel and device.
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
  status = cuda_status(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           optin - static_cast<int>(attributes.sharedSizeBytes)),
      "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  if (!status.ok()) return status;
  status = cuda_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                       "cudaFuncSetAttribute(NonPortableClusterSizeAllowed)");
  if (!status.ok()) return status;
  prepared.insert({kernel, device});
  return Status::Ok();
}

Status shared_launch_config(const Plan& plan, cudaStream_t stream,
                            KernelFn* kernel, cudaLaunchConfig_t* config,
                            cudaLaunchAttribute* cluster_attr) {
  Status status = dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    *kernel = shared_kernel_for<decltype(tag)>(plan.threads);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  if (*kernel == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan names a shared_resident thread count that is not compiled in");
  }
  status = prepare_kernel(reinterpret_cast<const void*>(*kernel));
  if (!status.ok()) return status;
  *config = cudaLaunchConfig_t{};
  config->gridDim = dim3(static_cast<unsigned>(plan.grid));
  config->blockDim = dim3(static_cast<unsigned>(plan.threads));
  config->dynamicSmemBytes = static_cast<std::size_t>(plan.smem_bytes);
  config->stream = stream;
  cluster_attr->id = cudaLaunchAttributeClusterDimension;
  cluster_attr->val.clusterDim.x = static_cast<unsigned>(plan.cluster_size);
  cluster_attr->val.clusterDim.y = 1;
  cluster_attr->val.clusterDim.z = 1;
  config->attrs = cluster_attr;
  config->numAttrs = plan.cluster_size > 1 ? 1 : 0;
  return Status::Ok();
}

}  // namespace

Status launch_shared(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  KernelFn kernel = nullptr;
  cudaLaunchConfig_t config;
  cudaLaunchAttribute cluster_attr;
  Status status = shared_launch_config(plan, stream, &kernel, &config, &cluster_attr);
  if (!status.ok()) return status;
  return cuda_status(cudaLaunchKernelEx(&config, kernel, args), "shared_resident launch");
}

Status shared_resident_clusters(const Plan& plan, int* clusters) {
  KernelFn kernel = nullptr;
  cudaLaunchConfig_t config;
  cudaLaunchAttribute cluster_attr;
  Status status = shared_launch_config(plan, nullptr, &kernel, &config, &cluster_attr);
  if (!status.ok()) return status;
  config.numAttrs = 1;  // the query needs the cluster shape, also for clusters of one CTA
  return cuda_status(cudaOccupancyMaxActiveClusters(clusters, kernel, &config),
                     "cudaOccupancyMaxActiveClusters");
}

}  // namespace inorm::detail
