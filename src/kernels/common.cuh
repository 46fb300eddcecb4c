// Device-side pieces every kernel family and op shares: the kernel arguments, element traits,
// 16-byte packs, parameter loads, ragged ranges and small sums.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/ptx>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fast_divisor.h"
#include "inorm/inorm.h"

namespace inorm::detail {

// kChannelsLast: the plan's counts and divisors (with their multipliers: fast_divisor.h), made by
// the launcher, so that a CTA's setup in channels_last.cuh takes no integer division.
struct ChannelsLastDivisors {
  int64_t samples = 0;             // N
  FastDivisor by_groups;           // slices a sample (first_channel<true>)
  FastDivisor by_slice_channels;   // a slice's channels
  FastDivisor by_other_channels;   // a slice's channels past its first (at least 1)
  FastDivisor by_tiles;            // parts_per_slice: a channel's tiles (the resident form's group)
  FastDivisor by_blocks;           // channel blocks a sample
  FastDivisor by_channel_block;    // TileThread's columns
  FastDivisor by_rows_a_pass;      // TileThread's rows a pass: the threads / channel_block
  // The channel-block paths' units a row (kVector: 16-byte runs; kScalar: elements), [0] of a full
  // block, [1] of a sample's last, and the rows the threads take a pass in them
  FastDivisor by_units_a_row[2];
  FastDivisor by_unit_rows_a_pass[2];
};

// Everything a kernel reads; filled on the host from ForwardParams / BackwardParams and Plan.
struct KernelArgs {
  const void* x;
  const void* dy;       // backward: the gradient of the forward's output
  void* out;            // y (forward) or dx (backward); null: nothing is written per element
  int64_t num_slices;
  int64_t channels;
  int64_t slice_len;
  int64_t slice_channels;  // channels a slice spans (GroupNorm: C / groups; else 1)
  int64_t groups;          // slices a sample: channels / slice_channels
  int64_t channel_len;     // elements of a channel in a slice: slice_len / slice_channels
  double eps;
  const void* weight;
  const void* bias;     // forward; backward with an activation (it places z)
  DType param_dtype;
  bool use_input_stats;
  Activation activation;  // the plan's: the op's epilogue (ActivationEpilogue) reads it
  double negative_slope;
  void* mean_out;       // forward: stats type [num_slices] or null
  void* rstd_out;       // forward: stats type [num_slices] or null
  const void* saved_mean;  // backward with use_input_stats: stats type [num_slices]
  const void* saved_rstd;
  // stats type [num_slices] each, or null: the two terms per slice the channel reduction sums over
  // the batch (forward: mean and unbiased variance; backward: sum(dy * xhat) and sum(dy))
  void* slice_term0;
  void* slice_term1;
  // GroupNorm's backward with weight gradients (plan_internal.h sums_channels_in_slices): per slice,
  // per channel and chunk, stats type pairs (sum dz, sum dz * (x - center)), or null
  void* channel_partials;
  int64_t channel_partials_per_slice;
  const void* running_mean;
  const void* running_var;
  int64_t chunk_len;    // kSharedResident: elements per CTA; kSplitPipelined: elements per part
  int64_t register_len; // kSharedResident: of each chunk, the elements held in registers (its end)
  int parts_per_slice;  // kSplitPipelined; kChannelsLast: tiles per channel
  bool coaligned;       // every tensor read or written per element is aligned like x modulo 16
  bool channels_last;   // Layout::kChannelsLast: slice (n, c)'s element s is at (n * S + s) * C + c
  int channel_block;    // kChannelsLast
  int64_t tile_rows;    // kChannelsLast
  int64_t stream_parts;  // kChannelsLast: Plan::stream_parts (0: the reduction takes the tiles)
  void* slice_coefficients;  // kChannelsLast: kSliceCoefficientBytes [num_slices * slice_channels]
  // kSplitPipelined: SplitPartial [num_slices * parts_per_slice]; kChannelsLast: one per tile (or
  // streamed part) of each channel, [num_slices * slice_channels * (stream_parts or parts_per_slice)]
  void* split_partials;
  void* split_slice_stats;   // kSplitPipelined: SplitPartial [num_slices]
  unsigned* next_item;       // kSplitPipelined: the grid's work counter, zeroed before the launch
  int64_t pipeline_lead;     // kSplitPipelined: statistics items handed out before the first normalize item
  int64_t resident_parts;    // kSplitPipelined: of each slice's parts, the last ones read once (Plan::resident_parts)
  bool evict_first;          // kSplitPipelined, kChannelsLast: Plan::evict_first
  bool walk_back;            // kSplitPipelined: Plan::walk_back
  // kSharedResident: the group size (the cluster kernel reads its cluster's instead), the clusters a
  // slice spans (Plan::slice_clusters), and the L2 exchange's workspace
  int ctas_per_slice;
  int slice_clusters;
  // kSharedResident through L2 (plan_internal.h shared_exchanges_through_l2): ChunkStats<stats
  // type> [num_slices * ctas_per_slice], a cluster's combined [num_slices * slice_clusters]
  void* chunk_partials;
  // kSharedResident through L2, kSplitPipelined: [num_slices], zeroed before the launch
  unsigned* slice_arrivals;
  // kSharedResident with more slices than groups, exchange cluster or none: the slices handed out
  // after each group's first, zeroed before the launch; null: the groups stride over the slices.
  unsigned long long* slice_counter;
  bool take_slices_early;  // the counter is read before normalizing (planner.cpp shared_takes_slices_early)
  int64_t stagger_cycles;  // between the first round's groups' starts (Plan::stagger_cycles)
  ChannelsLastDivisors channels_last_divisors;  // kChannelsLast
};

// Programmatic dependent launch (Hopper; launchers.h launch_dependent): a kernel so launched may be
// scheduled while the kernel before it on the stream drains, hiding its launch latency. It waits
// here, before any global memory access, for that kernel to finish and its writes to be visible (a
// no-op where it was launched plainly), then lets the kernel after it be scheduled as soon as every
// CTA of this one has started. Every inorm kernel opens with it.
__device__ __forceinline__ void begin_dependent_kernel() {
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
}

// The first round's group (or cluster) `group` waits group x Plan::stagger_cycles SM cycles before
// its first load (config.h kSharedStaggerCycles, kChannelsLastClusterStaggerSpreadCycles).
__device__ __forceinline__ void stagger_start(const KernelArgs& args, int64_t group) {
  if (args.stagger_cycles <= 0) return;
  const long long start = clock64();
  const long long delay = args.stagger_cycles * group;
  while (clock64() - start < delay) __nanosleep(64);
}

template <typename T>
struct Traits;
template <>
struct Traits<float> {
  using Acc = float;
  static __device__ __forceinline__ float to_acc(float v) { return v; }
  static __device__ __forceinline__ float from_acc(float v) { return v; }
};
template <>
struct Traits<double> {
  using Acc = double;
  static __device__ __forceinline__ double to_acc(double v) { return v; }
  static __device__ __forceinline__ double from_acc(double v) { return v; }
};
template <>
struct Traits<__half> {
  using Acc = float;
  static __device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from_acc(float v) { return __float2half_rn(v); }
};
template <>
struct Traits<__nv_bfloat16> {
  using Acc = float;
  static __device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from_acc(float v) { return __float2bfloat16_rn(v); }
};

template <typename T>
using AccOf = typename Traits<T>::Acc;

// Elements in a 16-byte vector.
template <typename T>
inline constexpr int kVecOf = 16 / static_cast<int>(sizeof(T));

// 16 bytes of T, moved as one access.
template <typename T>
struct alignas(16) Pack {
  T v[kVecOf<T>];
};

// Element k % 2 of the two 16-bit values in a 32-bit word, in float: bfloat16 by a shift or a mask.
// Read as 16-bit values, each bfloat16 took a register of its own (chunk.cuh's wide register part
// spilled; group_registers' items took 166 registers a lane at 16 items, float16 108).
template <typename T>
__device__ __forceinline__ float pair_element(uint32_t pair, int k) {
  static_assert(sizeof(T) == 2, "two 16-bit values a word");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __uint_as_float(k % 2 ? pair & 0xffff0000u : pair << 16);
  } else {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(k % 2 ? pair >> 16 : pair)));
  }
}

// Element e of a pack in Acc, bfloat16 from the pack's 32-bit words (pair_element). Where chunk.cuh
// reads register parts and stores (ptxas -v, sm_90): the wide forward part's bfloat16 spills (36
// bytes of stores, 264 of loads, 1.7x a copy) go; in the body loops it made the plain backward
// spill, so those convert each element with Traits::to_acc (dev/VARIANTS.md 74).
template <typename T>
__device__ __forceinline__ AccOf<T> pack_element(const Pack<T>& pack, int e) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    uint32_t words[kVecOf<T> / 2];
    memcpy(words, &pack, sizeof(words));
    return pair_element<T>(words[e / 2], e);
  } else {
    return Traits<T>::to_acc(pack.v[e]);
  }
}

// visit(e) for each element e of a kVec-element vector whose index first + e lies in [begin, end):
// unchecked where the whole vector is inside, one by one elsewhere (in one loop with a check per
// element, nvcc kept the check, two 64-bit compares and a branch, in the whole vectors too).
template <int kVec, typename Visit>
__device__ __forceinline__ void for_vector_in_range(int64_t first, int64_t begin, int64_t end, Visit&& visit) {
  if (first >= begin && first + kVec <= end) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) visit(e);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      if (first + e >= begin && first + e < end) visit(e);
    }
  }
}

// 16-byte load with the default cache policy. Measured on the H200 (dev/VARIANTS.md 48, slices of
// 256 float32 in registers): evict-first loads (.cs) ran 4% slower forward and 8-10% slower
// backward, on 64 MiB and on 256 MiB alike.
template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T* ptr) {
  const uint4 raw = *reinterpret_cast<const uint4*>(ptr);
  Pack<T> pack;
  memcpy(&pack, &raw, sizeof(raw));
  return pack;
}
// 16-byte load marked evict-first in L2 (ld.global.cs): the last read of data L2 should not keep
// over other lines (Plan::evict_first).
template <typename T>
__device__ __forceinline__ Pack<T> load_pack_evict_first(const T* ptr) {
  const uint4 raw = __ldcs(reinterpret_cast<const uint4*>(ptr));
  Pack<T> pack;
  memcpy(&pack, &raw, sizeof(raw));
  return pack;
}
// 16-byte store cached in L2 only (st.global.cg). Measured on the H200 (dev/VARIANTS.md, 8): 1-2%
// faster than evict-first streaming stores (.cs) on every large suite case, and it leaves y in L2
// for whatever reads it next; plain write-back stores cost up to 1.7x.
template <typename T>
__device__ __forceinline__ void store_pack_l2(T* ptr, const Pack<T>& pack) {
  uint4 raw;
  memcpy(&raw, &pack, sizeof(raw));
  __stcg(reinterpret_cast<uint4*>(ptr), raw);
}
// 16-byte store marked evict-first in L2 (st.global.cs), where L2 should keep other lines
// (Plan::evict_first).
template <typename T>
__device__ __forceinline__ void store_pack_evict_first(T* ptr, const Pack<T>& pack) {
  uint4 raw;
  memcpy(&raw, &pack, sizeof(raw));
  __stcs(reinterpret_cast<uint4*>(ptr), raw);
}

// An arrival on the mbarrier `barrier` in this CTA's shared memory, whose phase then completes once
// `bytes` more have landed on it (by bulk copies, or by st.async from cluster peers).
__device__ __forceinline__ void arrive_expecting(uint64_t* barrier, uint32_t bytes) {
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, barrier,
                                       bytes);
}

// Waits until the phase of `barrier` with this parity has completed.
__device__ __forceinline__ void wait_phase(uint64_t* barrier, uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(barrier, parity)) {
  }
}

// An output's 16-byte store: cached in L2 only (store_pack_l2), or marked evict-first there where
// `evict_first` (Plan::evict_first).
template <typename T>
__device__ __forceinline__ void store_output_pack(T* ptr, const Pack<T>& pack, bool evict_first) {
  if (evict_first) {
    store_pack_evict_first(ptr, pack);
  } else {
    store_pack_l2(ptr, pack);
  }
}

// A bulk async copy of `bytes` (a multiple of 16) from global `src` to shared `dst`, completing on
// the mbarrier `barrier`; where `evict_first`, its lines marked evict-first in L2 (Plan::evict_first).
// The hinted form by hand: neither cuda::device::memcpy_async_tx nor cuda::ptx::cp_async_bulk takes
// an L2 cache hint.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* barrier,
                                                    bool evict_first) {
  if (!evict_first) {
    cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, src, bytes, barrier);
    return;
  }
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(src), "r"(bytes), "r"(static_cast<uint32_t>(__cvta_generic_to_shared(barrier))), "l"(policy)
      : "memory");
}

// A value another CTA of the running grid wrote, read from L2 (ld.global.cg: an SM's L1 may hold a
// stale line) in 16-byte words: `p` is 16-byte aligned and readable up to the next multiple of 16.
template <typename V>
__device__ __forceinline__ V load_l2(const void* p) {
  constexpr int kWords = (static_cast<int>(sizeof(V)) + 15) / 16;
  uint4 words[kWords];
#pragma unroll
  for (int w = 0; w < kWords; ++w) words[w] = __ldcg(static_cast<const uint4*>(p) + w);
  V value;
  memcpy(&value, words, sizeof(V));
  return value;
}

// A parameter tensor's value (its dtype P) in Acc.
template <typename Acc, typename P>
__device__ __forceinline__ Acc param_to_acc(P v) {
  if constexpr (std::is_same_v<P, __half>) return static_cast<Acc>(__half2float(v));
  else if constexpr (std::is_same_v<P, __nv_bfloat16>) return static_cast<Acc>(__bfloat162float(v));
  else return static_cast<Acc>(v);
}

template <typename Acc>
__device__ __forceinline__ Acc load_param(const void* ptr, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::kFloat32: return param_to_acc<Acc>(__ldg(static_cast<const float*>(ptr) + index));
    case DType::kFloat64: return param_to_acc<Acc>(__ldg(static_cast<const double*>(ptr) + index));
    case DType::kFloat16: return param_to_acc<Acc>(__ldg(static_cast<const __half*>(ptr) + index));
    case DType::kBFloat16: return param_to_acc<Acc>(__ldg(static_cast<const __nv_bfloat16*>(ptr) + index));
  }
  return Acc(0);
}

// The affine's weight of `channel`: 1 where the tensor is not given.
template <typename Acc>
__device__ __forceinline__ Acc channel_weight(const KernelArgs& args, int64_t channel) {
  return args.weight ? load_param<Acc>(args.weight, args.param_dtype, channel) : Acc(1);
}

// The weight and bias of `channel` (1 and 0 where not given), their loads in flight together: each
// converted in its dtype's branch of its load took one round trip after the other (ncu on SD UNet's
// GroupNorm: the two waits were a tenth of a small kernel's stall samples).
template <typename Acc>
struct ChannelAffine {
  Acc weight;
  Acc bias;
};
template <typename Acc, typename P>
__device__ __forceinline__ ChannelAffine<Acc> load_channel_affine(const KernelArgs& args, int64_t channel) {
  P weight{}, bias{};
  if (args.weight) weight = __ldg(static_cast<const P*>(args.weight) + channel);
  if (args.bias) bias = __ldg(static_cast<const P*>(args.bias) + channel);
  return {args.weight ? param_to_acc<Acc>(weight) : Acc(1), args.bias ? param_to_acc<Acc>(bias) : Acc(0)};
}
template <typename Acc>
__device__ __forceinline__ ChannelAffine<Acc> channel_affine(const KernelArgs& args, int64_t channel) {
  switch (args.param_dtype) {
    case DType::kFloat32: return load_channel_affine<Acc, float>(args, channel);
    case DType::kFloat64: return load_channel_affine<Acc, double>(args, channel);
    case DType::kFloat16: return load_channel_affine<Acc, __half>(args, channel);
    case DType::kBFloat16: return load_channel_affine<Acc, __nv_bfloat16>(args, channel);
  }
  return {Acc(1), Acc(0)};
}

__device__ __forceinline__ float reciprocal_sqrt(float v) { return rsqrtf(v); }
__device__ __forceinline__ double reciprocal_sqrt(double v) { return rsqrt(v); }

// y = ((x - center_hi) - center_lo) * scale + bias, as (x - center_hi) * scale + shift with shift =
// bias - center_lo * scale (of_parts): one subtraction and one fma an element. The centre is the mean
// split in two parts so that data far from zero (1e4 + randn) loses no digits to the subtraction.
template <typename Acc>
struct SliceAffine {
  Acc center_hi;
  Acc center_lo;
  Acc scale;
  Acc shift;
  // The bias itself where center_lo is 0 (eval mode's): an infinite scale (a running variance of 0,
  // eps 0) then gives +-inf as torch does, where -0 * inf would make every output NaN.
  static __device__ __forceinline__ SliceAffine of_parts(Acc center_hi, Acc center_lo, Acc scale, Acc bias) {
    return SliceAffine{center_hi, center_lo, scale, center_lo == Acc(0) ? bias : fma(-center_lo, scale, bias)};
  }
  __device__ __forceinline__ Acc apply(Acc x) const { return fma(x - center_hi, scale, shift); }
};

__device__ __forceinline__ void store_param(void* ptr, DType dtype, int64_t index, double value) {
  switch (dtype) {
    case DType::kFloat32: static_cast<float*>(ptr)[index] = static_cast<float>(value); break;
    case DType::kFloat64: static_cast<double*>(ptr)[index] = value; break;
    case DType::kFloat16: static_cast<__half*>(ptr)[index] = __double2half(value); break;
    case DType::kBFloat16: static_cast<__nv_bfloat16*>(ptr)[index] = __double2bfloat16(value); break;
  }
}

// A contiguous run of `len` elements split into a scalar head up to the first 16-byte boundary,
// whole 16-byte vectors, and a scalar tail. Ragged element e (e < head + tail) is at ragged_index(e).
template <typename T>
struct RaggedRange {
  int misalign = 0;  // elements from the previous 16-byte boundary to the start
  int64_t head = 0;
  int64_t body_vecs = 0;
  int64_t tail = 0;
  RaggedRange() = default;
  __device__ __forceinline__ RaggedRange(const T* start, int64_t len) {
    constexpr int kVec = kVecOf<T>;
    misalign = static_cast<int>(reinterpret_cast<uintptr_t>(start) % 16 / sizeof(T));
    head = min(len, static_cast<int64_t>((kVec - misalign) % kVec));
    body_vecs = (len - head) / kVec;
    tail = len - head - body_vecs * kVec;
  }
  __device__ __forceinline__ int ragged() const { return static_cast<int>(head + tail); }
  __device__ __forceinline__ int64_t ragged_index(int e) const {
    return e < head ? e : head + body_vecs * kVecOf<T> + (e - head);
  }
};

// 1 + exp(-z) and a / b for SiLU: in float32 the hardware's approximations (ex2.approx, an
// approximate reciprocal; a few ulp), about a third of the instructions of the IEEE-rounded ones,
// which bound SiLU's kernels where threads are few (dev/VARIANTS.md 45); exact in float64. At
// a / inf (z below -88) both give -0, as PyTorch's formula does. exp(-z) flushes a denormal
// result to 0 (ex2.approx.ftz), which vanishes in the sum as it would unflushed: __expf's sum to
// the bit, without the guard __expf wraps around MUFU.EX2 for denormal results (an FSETP and two
// predicated FMULs an element; SiLU's kernels ran 2-5% faster without it, dev/VARIANTS.md 53).
// Inline PTX: neither the CUDA math API nor cuda::ptx has ex2's ftz form.
__device__ __forceinline__ float one_plus_exp_of_negative(float z) {
  float exp_of_negative;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(exp_of_negative) : "f"(z * -1.4426950408889634f));
  return 1.0f + exp_of_negative;
}
__device__ __forceinline__ double one_plus_exp_of_negative(double z) { return 1.0 + exp(-z); }
__device__ __forceinline__ float quotient(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ double quotient(double a, double b) { return a / b; }

// One activation, fixed at compile time (inorm.h Activation). PyTorch's formulas, NaN included:
// relu and leaky_relu keep a NaN z, and their derivative at z <= 0 is that of the negative side.
template <typename Acc, Activation kKind>
struct FixedActivation {
  Acc negative_slope;

  static __device__ __forceinline__ Acc sigmoid(Acc z) { return quotient(Acc(1), one_plus_exp_of_negative(z)); }
  __device__ __forceinline__ Acc activate(Acc z) const {
    if constexpr (kKind == Activation::kRelu) return z < Acc(0) ? Acc(0) : z;
    if constexpr (kKind == Activation::kLeakyRelu) return z > Acc(0) ? z : z * negative_slope;
    if constexpr (kKind == Activation::kSilu) return quotient(z, one_plus_exp_of_negative(z));
    return z;
  }
  // dy * activation'(z): torch's threshold_backward, leaky_relu_backward and silu_backward.
  __device__ __forceinline__ Acc gradient(Acc z, Acc dy) const {
    if constexpr (kKind == Activation::kRelu) return z <= Acc(0) ? Acc(0) : dy;
    if constexpr (kKind == Activation::kLeakyRelu) return z > Acc(0) ? dy : dy * negative_slope;
    if constexpr (kKind == Activation::kSilu) {
      const Acc s = sigmoid(z);
      return dy * s * (Acc(1) + z * (Acc(1) - s));
    }
    return dy;
  }
};

// The elementwise epilogue of an op without an activation: y = z, dz = dy. Empty, so that ops and
// coefficients without an activation carry nothing for it.
template <typename Acc>
struct IdentityEpilogue {
  static __device__ __forceinline__ IdentityEpilogue of(const KernelArgs&) { return {}; }
  __device__ __forceinline__ Acc activate(Acc z) const { return z; }
  __device__ __forceinline__ Acc gradient(Acc, Acc dy) const { return dy; }
  // f(the activation): here none.
  template <typename F>
  __device__ __forceinline__ decltype(auto) visit(F&& f) const {
    return f(FixedActivation<Acc, Activation::kNone>{Acc(0)});
  }
};

// The activation after the affine, a runtime choice: one set of kernels serves every activation.
// visit(f) takes the branch once and calls f with the activation fixed at compile time, so that a
// loop inside f runs without a branch per element (SASS of the split forward with a per-element
// switch: a compare-and-branch chain and a convergence barrier each element).
template <typename Acc>
struct ActivationEpilogue {
  Activation kind;
  Acc negative_slope;

  static __device__ __forceinline__ ActivationEpilogue of(const KernelArgs& args) {
    return {args.activation, static_cast<Acc>(args.negative_slope)};
  }
  // The activation and dy * its derivative at z with the branch taken per element, where a copy of
  // the loop for each activation costs registers (ptxas -v): over group_registers' slices, held in
  // registers.
  __device__ __forceinline__ Acc activate(Acc z) const {
    return visit([&](const auto& activation) { return activation.activate(z); });
  }
  __device__ __forceinline__ Acc gradient(Acc z, Acc dy) const {
    return visit([&](const auto& activation) { return activation.gradient(z, dy); });
  }
  template <typename F>
  __device__ __forceinline__ decltype(auto) visit(F&& f) const {
    switch (kind) {
      case Activation::kRelu: return f(FixedActivation<Acc, Activation::kRelu>{negative_slope});
      case Activation::kLeakyRelu: return f(FixedActivation<Acc, Activation::kLeakyRelu>{negative_slope});
      case Activation::kSilu: return f(FixedActivation<Acc, Activation::kSilu>{negative_slope});
      default: return f(FixedActivation<Acc, Activation::kNone>{negative_slope});
    }
  }
};

template <typename Acc, bool kActivated>
using EpilogueOf = std::conditional_t<kActivated, ActivationEpilogue<Acc>, IdentityEpilogue<Acc>>;

// a % b (a >= 0, b > 0) in 32-bit arithmetic where both fit, as they do but past 2^32 slices: a
// 64-bit division is a call into a subroutine far from the kernel's code, an instruction-cache miss
// where a small grid's kernels start cold.
__device__ __forceinline__ int64_t remainder_of(int64_t a, int64_t b) {
  if (((a | b) >> 32) == 0) return static_cast<uint32_t>(a) % static_cast<uint32_t>(b);
  return a % b;
}

// The sample of `slice` (kByMultiplier: by the channels_last kernels' multiplier, made by the
// launcher; else the hardware's division, which the NCHW kernels keep: the multiplier there moved
// shared_resident's registers, spilling in float16 instances, and cost nnunet-in3d-lrelu's forward
// 3%, dev/VARIANTS.md 114).
template <bool kByMultiplier = false>
__device__ __forceinline__ int64_t sample_of_slice(const KernelArgs& args, int64_t slice) {
  if constexpr (kByMultiplier) return args.channels_last_divisors.by_groups.quotient(slice);
  return slice / args.groups;
}

// The first channel of `slice`, which spans args.slice_channels channels (InstanceNorm: one);
// kByMultiplier as sample_of_slice's.
template <bool kByMultiplier = false>
__device__ __forceinline__ int64_t first_channel(const KernelArgs& args, int64_t slice) {
  if constexpr (kByMultiplier) return args.channels_last_divisors.by_groups.remainder(slice) * args.slice_channels;
  return remainder_of(slice, args.groups) * args.slice_channels;
}

// The channel of a slice that its element `first` lies in (past the slice's end, the last): 0
// without a division where the slice is one channel.
__device__ __forceinline__ int64_t channel_in_slice(const KernelArgs& args, int64_t first) {
  return args.slice_channels > 1 ? min(first / args.channel_len, args.slice_channels - 1) : 0;
}

// Coefficients `c` of a slice moved to its channel `channel` (of the batch's C): Op::for_channel with
// that channel's weight and bias.
template <typename Op>
__device__ __forceinline__ void move_to_channel(const KernelArgs& args, int64_t channel,
                                                typename Op::Coefficients& c) {
  const ChannelAffine<typename Op::Acc> affine = channel_affine<typename Op::Acc>(args, channel);
  Op::for_channel(affine.weight, affine.bias, c);
}

// Where a slice spans several channels (GroupNorm), the coefficients an op applies follow the
// channel of each element: the window is the elements [begin, begin + len) of the slice whose
// channel `coefficients` (the caller's, which Op::finish made for Op::window_channel's channel) now
// hold. covers() checks a run of elements at once (a 16-byte vector); seek() moves the window to an
// element's channel (Op::for_channel with that channel's weight and bias) where it lies outside.
// A thread's elements run in order, so that is about once per channel; a slice of one channel
// never leaves its window. Ops without channel coefficients get an empty window that covers all.
struct WholeSliceWindow {
  static __device__ __forceinline__ constexpr bool moves() { return false; }
  static __device__ __forceinline__ constexpr bool covers(int64_t, int) { return true; }
  static __device__ __forceinline__ void seek(int64_t) {}
};
// f(window), or f(a window that covers all) where `window` cannot move (a slice of one channel),
// so that the stores f loops over check no channel (chunk.cuh store_each, group_registers').
template <typename Window, typename F>
__device__ __forceinline__ void with_window(Window& window, F&& f) {
  if (window.moves()) {
    f(window);
  } else {
    WholeSliceWindow whole;
    f(whole);
  }
}
template <typename Op, bool = Op::kChannelCoefficients>
struct ChannelWindow : WholeSliceWindow {
  __device__ __forceinline__ ChannelWindow(const KernelArgs&, int64_t, typename Op::Coefficients&, int64_t = 0) {}
};
template <typename Op>
struct ChannelWindow<Op, true> {
  typename Op::Coefficients& coefficients;
  const KernelArgs& args;
  int64_t slice;
  int64_t len;            // elements a channel
  int64_t begin = 0;
  // The slice's first channel, taken where the window first moves (a 64-bit division, off the path
  // of the windows that never move: InstanceNorm's).
  int64_t slice_first_channel = -1;

  // (`channel`: the slice's channel whose coefficients the caller's are, Op::window_channel.)
  __device__ __forceinline__ ChannelWindow(const KernelArgs& kernel_args, int64_t slice_index,
                                           typename Op::Coefficients& slice_coefficients, int64_t channel = 0)
      : coefficients(slice_coefficients),
        args(kernel_args),
        slice(slice_index),
        len(kernel_args.channel_len),
        begin(channel * kernel_args.channel_len) {}
  // Whether the window may move: the slice spans several channels.
  __device__ __forceinline__ bool moves() const { return args.slice_channels > 1; }
  // Whether elements [first, first + count) of the slice all lie in the window.
  __device__ __forceinline__ bool covers(int64_t first, int count) const {
    return first >= begin && first + count <= begin + len;
  }
  __device__ __forceinline__ void seek(int64_t index) {
    if (covers(index, 1)) return;
    const int64_t channel = index / len;
    begin = channel * len;
    if (slice_first_channel < 0) slice_first_channel = first_channel(args, slice);
    move_to_channel<Op>(args, slice_first_channel + channel, coefficients);
  }
};

// Where a chunk lies in its slice, for an op's reduction that sums per channel inside a slice
// (GroupNorm's backward): the slice, the chunk's first element in it and its index among the
// slice's chunks (plan_internal.h channel_partial_chunk_len apart), and whether this thread is the
// one that holds the chunk's sums (all_sum.last's) and writes what follows from them.
struct ChunkPlace {
  int64_t slice;
  int64_t first;
  int64_t index;
  bool writer;
};

// Sums of two and three accumulators, reduced together (one block or warp reduction for all).
template <typename Acc>
struct PairSum {
  Acc first;
  Acc second;
};
template <typename Acc>
__device__ __forceinline__ PairSum<Acc> operator+(const PairSum<Acc>& a, const PairSum<Acc>& b) {
  return {a.first + b.first, a.second + b.second};
}
template <typename Acc>
struct TripleSum {
  Acc first;
  Acc second;
  Acc third;
};
template <typename Acc>
__device__ __forceinline__ TripleSum<Acc> operator+(const TripleSum<Acc>& a, const TripleSum<Acc>& b) {
  return {a.first + b.first, a.second + b.second, a.third + b.third};
}
// a + b for any of the sums above (and plain accumulators), as CUB's reductions take it.
struct SumOp {
  template <typename V>
  __device__ __forceinline__ V operator()(const V& a, const V& b) const {
    return a + b;
  }
};

}  // namespace inorm::detail
