// A CTA's chunk of a slice: its load into shared memory, its statistics, their combination
// across the CTAs of a slice, and its normalization back to global memory.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cuda/barrier>
#include <utility>

#include "kernels/common.cuh"

namespace inorm::detail {

// Corrected two-pass statistics of one chunk.
template <typename Acc>
struct ChunkStats {
  Acc count;
  Acc mean;   // rounded mean of the chunk
  Acc resid;  // mean of (x - mean): what the rounding missed
  Acc m2;     // sum of squared deviations from the exact chunk mean
};
static_assert(sizeof(ChunkStats<float>) == 16 && sizeof(ChunkStats<double>) == 32,
              "plan_internal.h chunk_stats_bytes sizes the workspace from four fields");

// The part of a CTA's chunk held in registers, after its part in shared memory: kVecs 16-byte
// vectors a thread, vector k of thread t at element (k * kThreads + t) * kVec of the part, `len`
// elements in all (whole vectors, 16-byte aligned in x and y). With it a CTA holds more of a slice
// than its share of shared memory (dev/VARIANTS.md 35); kVecs = 0 holds nothing.
template <typename T, int kThreads, int kVecs>
struct RegisterPart {
  using Acc = AccOf<T>;
  static constexpr int kVec = kVecOf<T>;
  Pack<T> packs[kVecs > 0 ? kVecs : 1];
  int64_t len = 0;

  __device__ __forceinline__ int64_t offset(int k) const {
    return (static_cast<int64_t>(k) * kThreads + threadIdx.x) * kVec;
  }
  // Issues the loads (L2 only, like the bulk copy); each value is waited for where first used.
  __device__ __forceinline__ void load(const T* src, int64_t part_len) {
    len = part_len;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (offset(k) < len) packs[k] = load_pack_l2(src + offset(k));
    }
  }
  __device__ __forceinline__ void add_sum(Acc& sum) const {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (offset(k) >= len) continue;
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += Traits<T>::to_acc(packs[k].v[e]);
    }
  }
  __device__ __forceinline__ void add_deviations(PairSum<Acc>& dev, Acc mean) const {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (offset(k) >= len) continue;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const Acc d = Traits<T>::to_acc(packs[k].v[e]) - mean;
        dev.first += d;
        dev.second += d * d;
      }
    }
  }
  __device__ __forceinline__ void normalize(T* dst, const SliceAffine<Acc>& affine) const {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (offset(k) >= len) continue;
      Pack<T> pack = packs[k];
#pragma unroll
      for (int e = 0; e < kVec; ++e) pack.v[e] = Traits<T>::from_acc(affine.apply(Traits<T>::to_acc(pack.v[e])));
      store_pack_l2(dst + offset(k), pack);
    }
  }
};

// buf[i] holds element i of a chunk of `len` elements laid out like `range` (16-byte aligned body,
// ragged ends), in shared memory or in global memory.
template <typename T, int kThreads>
struct ChunkView {
  using Acc = AccOf<T>;
  using SumReduce = cub::BlockReduce<Acc, kThreads>;
  using PairReduce = cub::BlockReduce<PairSum<Acc>, kThreads>;
  union TempStorage {
    typename SumReduce::TempStorage sum;
    typename PairReduce::TempStorage pair;
  };

  const T* buf;
  RaggedRange<T> range;
  int64_t len;

  __device__ __forceinline__ const Pack<T>* body() const {
    return reinterpret_cast<const Pack<T>*>(buf + range.head);
  }

  // Of the chunk and, after it, `part` (registers). Valid in thread 0. Ends with a barrier, so
  // `storage` and `broadcast` may be reused after it.
  template <int kVecs = 0>
  __device__ ChunkStats<Acc> statistics(TempStorage& storage, Acc& broadcast,
                                        const RegisterPart<T, kThreads, kVecs>& part = {}) const {
    constexpr int kVec = kVecOf<T>;
    Acc sum = Acc(0);
    part.add_sum(sum);
    for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
      const Pack<T> pack = body()[v];
#pragma unroll
      for (int k = 0; k < kVec; ++k) sum += Traits<T>::to_acc(pack.v[k]);
    }
    if (threadIdx.x < range.ragged()) sum += Traits<T>::to_acc(buf[range.ragged_index(threadIdx.x)]);
    sum = SumReduce(storage.sum).Sum(sum);
    if (threadIdx.x == 0) broadcast = sum;
    __syncthreads();
    const int64_t total = len + part.len;
    const Acc count = static_cast<Acc>(total);
    const Acc mean = total > 0 ? broadcast / count : Acc(0);

    PairSum<Acc> dev{Acc(0), Acc(0)};
    part.add_deviations(dev, mean);
    for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
      const Pack<T> pack = body()[v];
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
    dev = PairReduce(storage.pair).Reduce(dev, PairSumOp<Acc>{});
    __syncthreads();
    const Acc resid = total > 0 ? dev.first / count : Acc(0);
    return ChunkStats<Acc>{count, mean, resid, dev.second - dev.first * resid};
  }

  // y[i] = affine(buf[i]) with 16-byte stores (L2 only) where y is aligned like x (a thread stores
  // only what it loaded, so y may be x); then `part`'s, after the chunk.
  template <int kVecs = 0>
  __device__ void normalize(T* dst, const SliceAffine<Acc>& affine, bool y_coaligned,
                            const RegisterPart<T, kThreads, kVecs>& part = {}) const {
    constexpr int kVec = kVecOf<T>;
    part.normalize(dst + len, affine);
    auto normalize_one = [&](T value) { return Traits<T>::from_acc(affine.apply(Traits<T>::to_acc(value))); };
    if (y_coaligned) {
      for (int64_t v = threadIdx.x; v < range.body_vecs; v += kThreads) {
        Pack<T> pack = body()[v];
#pragma unroll
        for (int k = 0; k < kVec; ++k) pack.v[k] = normalize_one(pack.v[k]);
        store_pack_l2(dst + range.head + v * kVec, pack);
      }
      if (threadIdx.x < range.ragged()) {
        const int64_t i = range.ragged_index(threadIdx.x);
        dst[i] = normalize_one(buf[i]);
      }
    } else {
      for (int64_t i = threadIdx.x; i < len; i += kThreads) dst[i] = normalize_one(buf[i]);
    }
  }
};

// Starts copying src[0, range's len) into buf, which mirrors src's alignment modulo 16: one bulk
// async copy of the body by thread 0, ragged ends by ordinary loads; every thread arrives once.
template <typename T>
__device__ __forceinline__ cuda::barrier<cuda::thread_scope_block>::arrival_token start_chunk_load(
    cuda::barrier<cuda::thread_scope_block>& loaded, T* buf, const T* src, const RaggedRange<T>& range) {
  if (threadIdx.x == 0 && range.body_vecs > 0) {
    const uint32_t bytes = static_cast<uint32_t>(range.body_vecs * 16);
    cuda::device::memcpy_async_tx(buf + range.head, src + range.head, cuda::aligned_size_t<16>(bytes), loaded);
    return cuda::device::barrier_arrive_tx(loaded, 1, bytes);
  }
  const int e = static_cast<int>(threadIdx.x) - 1;
  if (e >= 0 && e < range.ragged()) buf[range.ragged_index(e)] = src[range.ragged_index(e)];
  return loaded.arrive();
}

// Combines the chunks of a slice in rank order around chunk 0's mean (the differences are small,
// so no digits are lost to an offset); every caller gets the same bits.
template <typename Acc>
__device__ __forceinline__ void combine_chunks(const ChunkStats<Acc>* chunks, int count, Acc* mean_hi,
                                               Acc* mean_lo, Acc* m2) {
  const Acc base = chunks[0].mean;
  Acc total = Acc(0);
  Acc weighted = Acc(0);
  for (int r = 0; r < count; ++r) {
    const ChunkStats<Acc> s = chunks[r];
    if (s.count == Acc(0)) continue;
    total += s.count;
    weighted += s.count * ((s.mean - base) + s.resid);
  }
  const Acc offset = weighted / total;
  Acc sum_m2 = Acc(0);
  for (int r = 0; r < count; ++r) {
    const ChunkStats<Acc> s = chunks[r];
    if (s.count == Acc(0)) continue;
    const Acc d = (s.mean - base) + s.resid - offset;
    sum_m2 += s.m2 + s.count * d * d;
  }
  *mean_hi = base;
  *mean_lo = offset;
  *m2 = sum_m2;
}

}  // namespace inorm::detail
