// kSplitSlice: slices too large for the shared memory of the whole chip (and only those).
// Two kernels: partial statistics per (slice, part), then normalization of each part after
// combining its slice's partials. x is read twice; the second kernel walks the parts in reverse so
// its first reads find what the first kernel read last still in L2.
//
// Partials are (count, mean, M2) in float64, merged with Chan's formula in a fixed order, so the
// statistics are robust to data far from zero and the same from run to run.
#include <cub/block/block_reduce.cuh>

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

// Exact two-pass statistics of a few values held in registers, as a partial.
template <typename Acc, int kCount>
__device__ __forceinline__ SplitPartial batch_partial(const Acc (&values)[kCount], int valid) {
  Acc sum = Acc(0);
#pragma unroll
  for (int i = 0; i < kCount; ++i) sum += i < valid ? values[i] : Acc(0);
  const Acc mean = sum / static_cast<Acc>(valid);
  Acc m2 = Acc(0);
#pragma unroll
  for (int i = 0; i < kCount; ++i) {
    const Acc d = values[i] - mean;
    m2 += i < valid ? d * d : Acc(0);
  }
  return {static_cast<double>(valid), static_cast<double>(mean), static_cast<double>(m2)};
}

template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_stats_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  constexpr int kVec = kVecOf<T>;
  constexpr int kBatch = 4;  // vectors in flight per thread
  using Reduce = cub::BlockReduce<SplitPartial, kSplitThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;

  const int64_t slice = blockIdx.x / args.parts_per_slice;
  const int64_t begin = (blockIdx.x % args.parts_per_slice) * args.chunk_len;
  const int64_t len = min(args.chunk_len, args.slice_len - begin);
  const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
  const RaggedRange<T> range(src, len);
  const Pack<T>* body = reinterpret_cast<const Pack<T>*>(src + range.head);

  SplitPartial acc{0.0, 0.0, 0.0};
  for (int64_t first = threadIdx.x; first < range.body_vecs; first += kSplitThreads * kBatch) {
    Acc values[kBatch * kVec];
    int valid_vecs = 0;
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int64_t v = first + b * kSplitThreads;
      Pack<T> pack{};
      if (v < range.body_vecs) {
        pack = body[v];  // default caching: the second kernel wants these in L2
        ++valid_vecs;
      }
#pragma unroll
      for (int k = 0; k < kVec; ++k) values[b * kVec + k] = Traits<T>::to_acc(pack.v[k]);
    }
    acc = merge(acc, batch_partial(values, valid_vecs * kVec));
  }
  if (threadIdx.x < range.ragged()) {
    const double value = static_cast<double>(Traits<T>::to_acc(src[range.ragged_index(threadIdx.x)]));
    acc = merge(acc, SplitPartial{1.0, value, 0.0});
  }
  acc = Reduce(reduce_storage).Reduce(acc, MergeOp{});
  if (threadIdx.x == 0) static_cast<SplitPartial*>(args.split_partials)[blockIdx.x] = acc;
}

template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_normalize_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Reduce = cub::BlockReduce<SplitPartial, kSplitThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  __shared__ SplitPartial slice_stats;

  const int64_t block = static_cast<int64_t>(gridDim.x) - 1 - blockIdx.x;  // reverse order
  const int64_t slice = block / args.parts_per_slice;
  const int part = static_cast<int>(block % args.parts_per_slice);

  // Every CTA of the slice merges the same partials in the same order: identical statistics.
  const SplitPartial* partials =
      static_cast<const SplitPartial*>(args.split_partials) + slice * args.parts_per_slice;
  SplitPartial acc{0.0, 0.0, 0.0};
  for (int i = threadIdx.x; i < args.parts_per_slice; i += kSplitThreads) acc = merge(acc, partials[i]);
  acc = Reduce(reduce_storage).Reduce(acc, MergeOp{});
  if (threadIdx.x == 0) slice_stats = acc;
  __syncthreads();
  const double mean = slice_stats.mean;
  const Acc mean_hi = static_cast<Acc>(mean);
  const SliceAffine<Acc> affine =
      finish_slice<Acc>(args, slice, mean_hi, static_cast<Acc>(mean - static_cast<double>(mean_hi)),
                        static_cast<Acc>(slice_stats.m2), part == 0 && threadIdx.x == 0);

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
    split_stats_kernel<T><<<grid, kSplitThreads, 0, stream>>>(args);
    Status status = cuda_status(cudaGetLastError(), "split_slice statistics launch");
    if (!status.ok()) return status;
    split_normalize_kernel<T><<<grid, kSplitThreads, 0, stream>>>(args);
    return cuda_status(cudaGetLastError(), "split_slice normalize launch");
  });
}

}  // namespace inorm::detail
