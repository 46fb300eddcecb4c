// The slice engine's view of data on chip, for every op (kernels/forward_op.cuh,
// kernels/backward_op.cuh): a CTA's chunk of one or two inputs in shared memory (and its end in
// registers), its load, its traversal for the op's reductions and its elementwise pass, and the
// all-reduce of a CTA or of a group of lanes.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/util_ptx.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cuda/barrier>
#include <type_traits>
#include <utility>

#include "config.h"
#include "kernels/common.cuh"

namespace inorm::detail {

// The part of a CTA's chunk of one input held in registers, after its part in shared memory: kVecs
// 16-byte vectors a thread, vector k of thread t at element (k * kThreads + t) * kVec of the part
// (whole vectors, 16-byte aligned in every tensor), of which the thread holds the first `held`.
// With it a CTA holds more of a slice than its share of shared memory (dev/VARIANTS.md 35); kVecs
// = 0 holds nothing. One count a round, not a 64-bit offset a vector checked against the part's
// length: those stayed live across the round, and spilled in the backward (dev/VARIANTS.md 106).
template <typename T, int kThreads, int kVecs>
struct RegisterPart {
  static constexpr int kVec = kVecOf<T>;
  Pack<T> packs[kVecs];
  int held = 0;

  __device__ __forceinline__ int offset(int k) const { return (k * kThreads + static_cast<int>(threadIdx.x)) * kVec; }
  __device__ __forceinline__ bool holds(int k) const { return k < held; }
  // Issues the loads of the part's `part_len` elements (the default cache policy: group_registers'
  // evict-first loads cost it 4-10%, dev/VARIANTS.md 48); each value is waited for where first used.
  __device__ __forceinline__ void load(const T* src, int64_t part_len) {
    const int vecs = static_cast<int>((part_len + kVec - 1) / kVec);  // at most kVecs * kThreads
    const int tid = static_cast<int>(threadIdx.x);
    held = vecs > tid ? min(kVecs, (vecs - tid + kThreads - 1) / kThreads) : 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (holds(k)) packs[k] = load_pack(src + offset(k));
    }
  }
};
// No register part: nothing held, nothing loaded.
template <typename T, int kThreads>
struct RegisterPart<T, kThreads, 0> {
  __device__ __forceinline__ void load(const T*, int64_t) {}
};

using Barrier = cuda::barrier<cuda::thread_scope_block>;

// Starts copying src[k][0, ranges[k]'s len) into bufs[k] for every input, each buffer mirroring its
// source's alignment modulo 16: one bulk async copy of each body by thread 0 (its lines evict-first
// in L2 where `evict_first`), ragged ends by ordinary loads; every thread arrives once, thread 0
// expecting the bodies' bytes.
template <typename T, int kInputs>
__device__ __forceinline__ Barrier::arrival_token start_chunk_loads(Barrier& loaded, T* const (&bufs)[kInputs],
                                                                    const T* const (&srcs)[kInputs],
                                                                    const RaggedRange<T> (&ranges)[kInputs],
                                                                    bool evict_first = false) {
  if (threadIdx.x == 0) {
    uint32_t bytes = 0;
#pragma unroll
    for (int k = 0; k < kInputs; ++k) {
      if (ranges[k].body_vecs == 0) continue;
      const uint32_t body_bytes = static_cast<uint32_t>(ranges[k].body_vecs * 16);
      bulk_copy_to_shared(bufs[k] + ranges[k].head, srcs[k] + ranges[k].head, body_bytes,
                          cuda::device::barrier_native_handle(loaded), evict_first);
      bytes += body_bytes;
    }
    if (bytes > 0) return cuda::device::barrier_arrive_tx(loaded, 1, bytes);
    return loaded.arrive();
  }
  const int e = static_cast<int>(threadIdx.x) - 1;
#pragma unroll
  for (int k = 0; k < kInputs; ++k) {
    if (e < ranges[k].ragged()) bufs[k][ranges[k].ragged_index(e)] = srcs[k][ranges[k].ragged_index(e)];
  }
  return loaded.arrive();
}

// Places each input's buffer in its region of `smem` (`region` bytes apart) at the same address
// modulo 16 as its source, so that the body moves by bulk copy, and starts the copies of elements
// [0, len) of every input (start_chunk_loads). bufs and ranges receive each input's buffer and layout.
template <typename T, int kInputs>
__device__ __forceinline__ Barrier::arrival_token start_staged_loads(Barrier& loaded, unsigned char* smem,
                                                                     int64_t region, const T* const (&srcs)[kInputs],
                                                                     int64_t len, T* (&bufs)[kInputs],
                                                                     RaggedRange<T> (&ranges)[kInputs],
                                                                     bool evict_first = false) {
#pragma unroll
  for (int k = 0; k < kInputs; ++k) {
    ranges[k] = RaggedRange<T>(srcs[k], len);
    bufs[k] = reinterpret_cast<T*>(smem + k * region) + ranges[k].misalign;
  }
  return start_chunk_loads<T, kInputs>(loaded, bufs, srcs, ranges, evict_first);
}

// One input: start_chunk_loads for a single tensor.
template <typename T>
__device__ __forceinline__ Barrier::arrival_token start_chunk_load(Barrier& loaded, T* buf, const T* src,
                                                                   const RaggedRange<T>& range) {
  T* const bufs[1] = {buf};
  const T* const srcs[1] = {src};
  const RaggedRange<T> ranges[1] = {range};
  return start_chunk_loads<T, 1>(loaded, bufs, srcs, ranges);
}

// Whether an op's elements (a chunk, a channels_last column, a group's slice) are held in
// registers, so that a second pass over them loads nothing: group_registers' are
// (group_registers.cuh specializes it); the others' each pass loads again (ForwardOp::kOnePass).
// Over them the backward takes the activation's branch per element (BackwardOp::channel_sums).
template <typename Elements>
inline constexpr bool kElementsInRegisters = false;

// Whether the general forward op (an activation or GroupNorm's channel affine) takes its one pass
// of float64 sums over these elements too (ForwardOp::kOnePass): where the kernel has registers to
// spare for them. shared_resident's general kernels spilled with them (dev/VARIANTS.md 59);
// channels_last's columns, a thread a channel at 85-128 registers, spill at most 4 bytes more
// (channels_last.cuh specializes it; dev/VARIANTS.md 111).
template <typename Elements>
inline constexpr bool kGeneralOnePass = false;

// A CTA's chunk of kInputs tensors at the same elements of a slice: element i of input k at
// buf[k][i] for i < len (shared memory, each buffer mirroring its tensor's alignment modulo 16, or
// global memory), then part[k] (registers). The op sees element i of every input at once.
template <typename T, int kThreads, int kInputs, int kVecs = 0>
struct Chunk {
  using Acc = AccOf<T>;
  static constexpr int kVec = kVecOf<T>;
  const T* buf[kInputs];
  RaggedRange<T> range;  // input 0's layout of [0, len); every input's when `inputs_coaligned`
  int64_t len = 0;
  bool inputs_coaligned = true;  // every input is aligned like input 0 modulo 16
  RegisterPart<T, kThreads, kVecs> part[kInputs];

  // Points the chunk at elements [0, shared_len) of every input (srcs[k]: its first), each held in
  // its region of `smem` (`region` bytes apart), and starts their load (start_staged_loads; its
  // lines evict-first in L2 where `evict_first`). Returns the barrier's arrival token to wait on.
  // The register part is the caller's to load.
  __device__ __forceinline__ Barrier::arrival_token start_load(Barrier& loaded, unsigned char* smem, int64_t region,
                                                               const T* const (&srcs)[kInputs], int64_t shared_len,
                                                               bool coaligned, bool evict_first = false) {
    T* bufs[kInputs];
    RaggedRange<T> ranges[kInputs];
    const Barrier::arrival_token token = start_staged_loads<T, kInputs>(loaded, smem, region, srcs, shared_len, bufs,
                                                                        ranges, evict_first);
#pragma unroll
    for (int k = 0; k < kInputs; ++k) buf[k] = bufs[k];
    range = ranges[0];
    len = shared_len;
    inputs_coaligned = coaligned;
    return token;
  }

  __device__ __forceinline__ const Pack<T>* body(int k) const {
    return reinterpret_cast<const Pack<T>*>(buf[k] + range.head);
  }
  // Whether the inputs line up in 16-byte vectors (one input always does).
  __device__ __forceinline__ bool inputs_in_vectors() const { return kInputs == 1 || inputs_coaligned; }

  // f(v) for every element this thread holds, v[k] its value in input k: the register part, the
  // body in vectors, the ragged ends (or, inputs not aligned alike, every element one by one).
  template <typename F>
  __device__ __forceinline__ void for_each(F&& f) const {
    if constexpr (kVecs > 0) {
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        if (!part[0].holds(k)) continue;
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          Acc v[kInputs];
#pragma unroll
          for (int i = 0; i < kInputs; ++i) v[i] = pack_element(part[i].packs[k], e);
          f(v);
        }
      }
    }
    if (inputs_in_vectors()) {
      for (int64_t b = threadIdx.x; b < range.body_vecs; b += kThreads) {
        Pack<T> packs[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) packs[i] = body(i)[b];
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          Acc v[kInputs];
#pragma unroll
          for (int i = 0; i < kInputs; ++i) v[i] = Traits<T>::to_acc(packs[i].v[e]);
          f(v);
        }
      }
      if (threadIdx.x < range.ragged()) {
        Acc v[kInputs];
        load(range.ragged_index(threadIdx.x), v);
        f(v);
      }
    } else {
      for (int64_t j = threadIdx.x; j < len; j += kThreads) {
        Acc v[kInputs];
        load(j, v);
        f(v);
      }
    }
  }

  // f(v) for the elements in [begin, end) of the chunk this thread holds, as for_each visits them:
  // the vectors that overlap the range, checked element by element only where they cross its ends.
  template <typename F>
  __device__ __forceinline__ void for_each_range(int64_t begin, int64_t end, F&& f) const {
    const auto visit_pack = [&](const Pack<T>(&packs)[kInputs], int64_t j) {
      for_vector_in_range<kVec>(j, begin, end, [&](int e) {
        Acc v[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) v[i] = Traits<T>::to_acc(packs[i].v[e]);
        f(v);
      });
    };
    if constexpr (kVecs > 0) {
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        const int64_t j = len + part[0].offset(k);
        if (!part[0].holds(k) || j + kVec <= begin || j >= end) continue;
        Pack<T> packs[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) packs[i] = part[i].packs[k];
        visit_pack(packs, j);
      }
    }
    if (inputs_in_vectors()) {
      // The body vectors that overlap [begin, end): vector b holds elements head + b * kVec on.
      const int64_t first_vec = begin > range.head ? (begin - range.head) / kVec : 0;
      const int64_t end_vec = end > range.head ? min(range.body_vecs, (end - range.head + kVec - 1) / kVec) : 0;
      for (int64_t b = first_vec + threadIdx.x; b < end_vec; b += kThreads) {
        Pack<T> packs[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) packs[i] = body(i)[b];
        visit_pack(packs, range.head + b * kVec);
      }
      if (threadIdx.x < range.ragged()) {
        const int64_t j = range.ragged_index(threadIdx.x);
        if (j >= begin && j < end) {
          Acc v[kInputs];
          load(j, v);
          f(v);
        }
      }
    } else {
      for (int64_t j = begin + threadIdx.x; j < min(end, len); j += kThreads) {
        Acc v[kInputs];
        load(j, v);
        f(v);
      }
    }
  }

  // dst[i] = g(values of element i) for every element (dst: the output's elements of this chunk,
  // whose element 0 is element `first` of its slice), `window` (common.cuh ChannelWindow) moved to
  // each element's channel first: checked once a 16-byte vector of the body, element by element
  // only in a vector that crosses a channel's end, and not at all where the window cannot move (a
  // slice of one channel: the general op's InstanceNorm; dev/VARIANTS.md 105). 16-byte stores (L2
  // only) where every tensor, dst too, is aligned alike (`coaligned`, passed at the store: a flag
  // kept in the chunk across the exchange cost the forward a register spill); a thread stores only
  // elements it read, so dst may be an input. The register part first, as it was loaded last.
  // `evict_first`: the body's 16-byte stores are marked evict-first in L2 (Plan::evict_first).
  template <typename Window, typename G>
  __device__ __forceinline__ void store_each(T* dst, bool coaligned, Window&& window, int64_t first, G&& g,
                                             bool evict_first = false) const {
    // The output vector of the inputs' vectors at element j of the chunk.
    // Two loops, not a check per element inside one: that cost the general op 12-20% more
    // (dev/VARIANTS.md 43).
    const auto map_pack = [&](auto& pack_window, const Pack<T>(&packs)[kInputs], int64_t j) {
      const auto output = [&](int e) {
        Acc v[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) v[i] = pack_element(packs[i], e);
        return Traits<T>::from_acc(g(v));
      };
      Pack<T> out;
      if (pack_window.covers(first + j, kVec)) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) out.v[e] = output(e);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          pack_window.seek(first + j + e);
          out.v[e] = output(e);
        }
      }
      return out;
    };
    const auto store_element = [&](int64_t j) {
      Acc v[kInputs];
      load(j, v);
      window.seek(first + j);
      dst[j] = Traits<T>::from_acc(g(v));
    };
    if constexpr (kVecs > 0) {
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        if (!part[0].holds(k)) continue;
        Pack<T> packs[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) packs[i] = part[i].packs[k];
        store_pack_l2(dst + len + part[0].offset(k), map_pack(window, packs, len + part[0].offset(k)));
      }
    }
    if (coaligned) {
      // Body vector b with `pack_window` (window, or one that covers all), by its thread.
      const auto store_vec = [&](auto& pack_window, int64_t b) {
        Pack<T> packs[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) packs[i] = body(i)[b];
        store_output_pack(dst + range.head + b * kVec, map_pack(pack_window, packs, range.head + b * kVec),
                          evict_first);
      };
      with_window(window, [&](auto& body_window) {
        for (int64_t b = threadIdx.x; b < range.body_vecs; b += kThreads) store_vec(body_window, b);
      });
      if (threadIdx.x < range.ragged()) store_element(range.ragged_index(threadIdx.x));
    } else {
      for (int64_t j = threadIdx.x; j < len; j += kThreads) store_element(j);
    }
  }

 private:
  // Element j of every input.
  __device__ __forceinline__ void load(int64_t j, Acc (&v)[kInputs]) const {
#pragma unroll
    for (int i = 0; i < kInputs; ++i) v[i] = Traits<T>::to_acc(buf[i][j]);
  }
};

// The sum over a CTA of a value, a PairSum or a TripleSum of Acc, or an Extra (the op's
// ExtraSum: the forward's float64 PairSum; Acc, nothing more, for the others, whose storage it then
// leaves as it was; a CUB block reduction):
// operator() returns it to every thread (a broadcast through shared memory), last() to thread 0
// alone, where the CTA families use a chunk's partial (the op's last reduction). Both end with a
// barrier, after which the storage may be used again. any() makes a choice the same for every
// thread that takes part in the next sum (the forward op's second pass).
template <typename Acc, int kThreads, typename Extra = Acc>
struct BlockAllSum {
  struct TempStorage {
    union {
      typename cub::BlockReduce<Acc, kThreads>::TempStorage one;
      typename cub::BlockReduce<PairSum<Acc>, kThreads>::TempStorage two;
      typename cub::BlockReduce<TripleSum<Acc>, kThreads>::TempStorage three;
      typename cub::BlockReduce<Extra, kThreads>::TempStorage extra;
    } reduce;
    // Apart from `reduce`: a thread may still read it while a faster one starts the next reduction.
    union {
      Acc one;
      PairSum<Acc> two;
      TripleSum<Acc> three;
      Extra extra;
    } total;
  };
  TempStorage& storage;

  template <typename V>
  __device__ __forceinline__ V operator()(V value) {
    V* total = reinterpret_cast<V*>(&storage.total);
    value = cub::BlockReduce<V, kThreads>(reduce_storage<V>()).Reduce(value, SumOp{});
    if (threadIdx.x == 0) *total = value;
    __syncthreads();
    return *total;
  }
  template <typename V>
  __device__ __forceinline__ V last(V value) {
    value = cub::BlockReduce<V, kThreads>(reduce_storage<V>()).Reduce(value, SumOp{});
    __syncthreads();
    return value;
  }
  // Whether `p` holds in any thread of the CTA, returned to every thread.
  __device__ __forceinline__ bool any(bool p) { return __syncthreads_or(p) != 0; }

 private:
  template <typename V>
  __device__ __forceinline__ typename cub::BlockReduce<V, kThreads>::TempStorage& reduce_storage() {
    if constexpr (std::is_same_v<V, Acc>) {
      return storage.reduce.one;
    } else if constexpr (std::is_same_v<V, PairSum<Acc>>) {
      return storage.reduce.two;
    } else if constexpr (std::is_same_v<V, TripleSum<Acc>>) {
      return storage.reduce.three;
    } else {
      static_assert(std::is_same_v<V, Extra>, "BlockAllSum sums Acc, PairSum<Acc>, TripleSum<Acc> or Extra");
      return storage.reduce.extra;
    }
  }
};

// The sum over each group of kGroup (at most 32) consecutive lanes, returned to every lane of the
// group (a CUB warp reduction, then a shuffle from the group's first lane), by operator() and last()
// alike (the group family finishes its slice in every lane). Every lane of the warp takes part; the
// CTA has at most kCtaThreads.
template <int kGroup, int kCtaThreads = kGroupCtaThreads>
struct GroupAllSum {
  template <typename V>
  __device__ __forceinline__ V operator()(V value) const {
    using Reduce = cub::WarpReduce<V, kGroup>;
    __shared__ typename Reduce::TempStorage storage[kCtaThreads / kGroup];
    value = Reduce(storage[threadIdx.x / kGroup]).Reduce(value, SumOp{});
    value = cub::ShuffleIndex<kGroup>(value, 0, 0xffffffffu);
    __syncwarp();  // the storage may be used again
    return value;
  }
  template <typename V>
  __device__ __forceinline__ V last(V value) const {
    return (*this)(value);
  }
};

// Groups of two warps (64 lanes): each warp's sum (CUB) meets the other's in shared memory under a
// named barrier of the pair's 64 threads (ids 1 to 8; 0 is __syncthreads'), added in warp order so
// that both warps hold the same bits. No library wraps a named barrier (cuda::ptx has none).
template <int kCtaThreads>
struct GroupAllSum<64, kCtaThreads> {
  static_assert(kCtaThreads / 64 <= 8, "a named barrier a pair of warps, ids 1 to 8");
  template <typename V>
  __device__ __forceinline__ V operator()(V value) const {
    using Reduce = cub::WarpReduce<V>;
    __shared__ typename Reduce::TempStorage storage[kCtaThreads / 32];
    __shared__ cub::Uninitialized<V> warp_sums[kCtaThreads / 64][2];
    const int warp = threadIdx.x / 32;
    value = Reduce(storage[warp]).Reduce(value, SumOp{});
    if (threadIdx.x % 32 == 0) warp_sums[warp / 2][warp % 2].Alias() = value;
    pair_barrier(warp / 2);
    const V sum = SumOp{}(warp_sums[warp / 2][0].Alias(), warp_sums[warp / 2][1].Alias());
    pair_barrier(warp / 2);  // the cells may be written again
    return sum;
  }
  template <typename V>
  __device__ __forceinline__ V last(V value) const {
    return (*this)(value);
  }
  static __device__ __forceinline__ void pair_barrier(int pair) {
    asm volatile("bar.sync %0, 64;" : : "r"(pair + 1) : "memory");
  }
};

}  // namespace inorm::detail
