// The forward as an op of the slice engine (kernels/chunk.cuh; the families in group_registers.cuh,
// shared_resident.cuh and split_pipelined.cu): it reads x, reduces each slice to its mean and the
// sum of squared deviations (one pass of float64 sums around a shift where reduce's kOnePass holds,
// corrected two-pass elsewhere; from on-chip data), and writes
// y = activation(((x - mean) * rstd) * weight + bias). kGeneral: the runtime activation of
// common.cuh ActivationEpilogue, and the weight and bias of each element's channel where a slice
// spans several (GroupNorm; common.cuh ChannelWindow); otherwise no activation and one channel's
// affine a chunk (the slice's, or where every chunk lies in one channel that channel's:
// plan_internal.h chunks_lie_in_channels), at no cost. The mean is carried as a high and a low
// part, so data far from zero (1e4 + randn) keeps its digits.
//
// An op of the engine answers, as static members:
//   Context context(args, slice, normalizes, first)   what the slice needs before its reductions,
//                                          among them the weight and bias finish starts from (the
//                                          channel of element `first`, the caller's chunk's
//                                          first; GroupNorm's own backward op's: of the slice's
//                                          first channel)
//   ExtraSum                               a type reduce sums beyond Acc and its pairs and
//                                          triples (chunk.cuh BlockAllSum), or Acc
//   Partial reduce(args, ctx, elements, place, count, all_sum)   a chunk's (or a whole slice's)
//                                          partial, its last sum by all_sum.last (a CTA's partial
//                                          is used in thread 0), all_sum.any(p) a choice made the
//                                          same in every thread of the sum; `place` (common.cuh ChunkPlace)
//                                          says where the chunk lies, for sums per channel
//   Totals combine(partials, count)        the partials of a slice's chunks, in rank order
//   Partial to_partial(totals, count)      a group's totals over `count` elements as one partial,
//                                          which combines again (a cluster's, where a slice spans
//                                          several: shared_resident.cuh)
//   SplitPartial to_split(partial), combine_split<kInFlight>(partial, parts, lane, lanes, all_sum),
//   from_split(split)                      the same in float64 through global memory (split_pipelined,
//                                          channels_last), combined by a CTA or a group of lanes, each
//                                          lane kInFlight partials at a time (config.h kCombineInFlight)
//   Coefficients finish(args, slice, ctx, totals, writer)   per-slice outputs, elementwise
//                                          coefficients (of the context's channel)
//   Acc apply(coefficients, activation, v) the output element from the inputs' element v, with the
//                                          coefficients' activation fixed by coefficients.visit
//                                          around the loop (common.cuh ActivationEpilogue), or
//                                          the coefficients themselves (a branch per element)
//   kChannelCoefficients, for_channel(weight, bias, coefficients), window_channel(ctx)   whether
//                                          the coefficients depend on the channel inside a slice,
//                                          their values for another channel's weight and bias, and
//                                          the channel finish made them for (common.cuh ChannelWindow)
#pragma once

#include "kernels/chunk.cuh"
#include "kernels/common.cuh"
#include "plan_internal.h"

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

// Combines the chunks of a slice in rank order around chunk 0's mean (the differences are small,
// so no digits are lost to an offset); every caller gets the same bits. One chunk is taken as it is.
template <typename Acc>
__device__ __forceinline__ void combine_chunks(const ChunkStats<Acc>* chunks, int count, Acc* mean_hi,
                                               Acc* mean_lo, Acc* m2) {
  if (count == 1) {
    *mean_hi = chunks[0].mean;
    *mean_lo = chunks[0].resid;
    *m2 = chunks[0].m2;
    return;
  }
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

// Turns a slice's statistics (mean = mean_hi + mean_lo, m2 = sum of squared deviations over
// `count` = S elements) into the affine coefficients of a channel's weight and bias (and *rstd_out,
// when given, the slice's rstd); the caller picked one thread per slice as `writer` of the optional
// outputs.
template <typename Acc>
__device__ __forceinline__ SliceAffine<Acc> finish_slice(const KernelArgs& args, int64_t slice, Acc weight, Acc bias,
                                                         Acc mean_hi, Acc mean_lo, Acc m2,
                                                         bool writer, Acc* rstd_out = nullptr) {
  const Acc count = static_cast<Acc>(args.slice_len);
  m2 = m2 < Acc(0) ? Acc(0) : m2;  // rounding may leave it slightly negative; fmax would drop NaN
  const Acc var = m2 / count;
  const Acc rstd = reciprocal_sqrt(var + static_cast<Acc>(args.eps));
  if (rstd_out != nullptr) *rstd_out = rstd;
  if (writer) {
    const Acc mean = mean_hi + mean_lo;
    if (args.mean_out) static_cast<Acc*>(args.mean_out)[slice] = mean;
    if (args.rstd_out) static_cast<Acc*>(args.rstd_out)[slice] = rstd;
    if (args.slice_term0) {  // the running-stat update's terms
      static_cast<Acc*>(args.slice_term0)[slice] = mean;
      static_cast<Acc*>(args.slice_term1)[slice] = m2 / (count - Acc(1));
    }
  }
  return SliceAffine<Acc>::of_parts(mean_hi, mean_lo, rstd * weight, bias);
}

template <typename T, bool kGeneral>
struct ForwardOp {
  using Elem = T;
  using Acc = AccOf<T>;
  using Epilogue = EpilogueOf<Acc, kGeneral>;
  static constexpr int kInputs = 1;
  static constexpr bool kChannelCoefficients = kGeneral;
  static constexpr bool kGeneralForm = kGeneral;  // plan_internal.h runs_general_op
  using Partial = ChunkStats<Acc>;
  using ExtraSum = PairSum<double>;  // reduce's one pass sums it (chunk.cuh BlockAllSum)
  struct Totals {
    Acc mean_hi;
    Acc mean_lo;
    Acc m2;
  };
  // shift: the slice's first element, which every chunk's sum is taken around: a constant slice
  // then sums to exactly 0, so its variance is exactly 0 and eps = 0 gives NaN as PyTorch does (a
  // mean from sum / n may miss the constant by an ulp and leave a tiny variance). weight, bias: the
  // affine of the chunk's first channel (chunk_channel of the slice, which the general op's window
  // starts at), loaded with x rather than after the reductions, where their round trip stood
  // between the statistics and the first store; only where the caller normalizes
  // (split_pipelined's statistics items take neither: 1-3% on the SD VAE shapes).
  struct NoChunkChannel {};
  struct ChunkChannel {
    int64_t chunk_channel;
  };
  struct Context : std::conditional_t<kGeneral, ChunkChannel, NoChunkChannel> {
    Acc shift;
    Acc weight;
    Acc bias;
  };
  // reduce's one pass stands where the squares around the shift are at most this many times those
  // around the mean: float64 sums then leave M2 within about 1e-8 of itself (float32's two passes:
  // 1e-7 at best).
  static constexpr double kOnePassMaxSquares = 1 << 20;
  struct Coefficients : Epilogue {
    SliceAffine<Acc> affine;
    Acc rstd;  // the slice's: for_channel scales another channel's weight by it
  };

  // `chunk_first`: the caller's chunk's first element in the slice, whose channel's affine it takes
  // (past the slice's end, the last channel's: a CTA without a chunk writes nothing).
  // kByMultiplier: the channels_last kernels' (common.cuh first_channel).
  template <bool kByMultiplier = false>
  static __device__ __forceinline__ Context context(const KernelArgs& args, int64_t slice, bool normalizes = true,
                                                    int64_t chunk_first = 0) {
    const int64_t first = args.channels_last
                              ? sample_of_slice<kByMultiplier>(args, slice) * args.channel_len * args.channels +
                                    first_channel<kByMultiplier>(args, slice)
                              : slice * args.slice_len;
    // L2: in place, the slice's first CTA overwrites it later (after every chunk's reduction).
    const T first_element = __ldcg(static_cast<const T*>(args.x) + first);
    const int64_t chunk_channel = channel_in_slice(args, chunk_first);
    const ChannelAffine<Acc> affine =
        normalizes ? channel_affine<Acc>(args, first_channel<kByMultiplier>(args, slice) + chunk_channel)
                   : ChannelAffine<Acc>{Acc(1), Acc(0)};
    Context ctx;
    if constexpr (kGeneral) ctx.chunk_channel = chunk_channel;
    // Converted past the affine's loads: converted at once, it held them back a round trip
    // (ptxas keeps the conversion in its load's block, before first_channel's branches).
    ctx.shift = Traits<T>::to_acc(first_element);
    ctx.weight = affine.weight;
    ctx.bias = affine.bias;
    return ctx;
  }

  // Statistics of the `count` elements. Where kOnePass holds: one pass of float64 sums of d and
  // d * d, d = x - shift (exact in float64), and M2 = (sum of d * d) - n (mean - shift)^2, whose
  // digits hold unless the squares around the shift exceed those around the mean
  // kOnePassMaxSquares times (a shift a thousand standard deviations off); only then are the
  // deviations from the rounded mean summed again, in float64. Elsewhere corrected two-pass
  // statistics in Acc: the mean, then the deviations' residual and M2. all_sum.any makes the
  // choice the same for every thread of the sum.
  template <typename Elements, typename AllSum>
  static __device__ __forceinline__ Partial reduce(const KernelArgs&, const Context& ctx, const Elements& elements,
                                                   const ChunkPlace&, int64_t count, AllSum& all_sum) {
    if constexpr (kOnePass<Elements>) {
      const double shift = ctx.shift;
      PairSum<double> around{0.0, 0.0};
      elements.for_each([&](const Acc(&v)[1]) { add_shifted(static_cast<double>(v[0]) - shift, around); });
      around = all_sum(around);
      bool second_pass = false;
      const Partial partial = from_shifted_sums(count, shift, around, &second_pass);
      if (!all_sum.any(second_pass)) return partial;
      return deviations<double>(elements, count, partial.mean, all_sum);
    } else {
      Acc sum = Acc(0);
      elements.for_each([&](const Acc(&v)[1]) { sum += v[0] - ctx.shift; });
      sum = all_sum(sum);
      return deviations<Acc>(elements, count, count > 0 ? ctx.shift + sum / static_cast<Acc>(count) : Acc(0), all_sum);
    }
  }

  // The one pass's sums of d and d * d, d = x - shift.
  static __device__ __forceinline__ void add_shifted(double d, PairSum<double>& around) {
    around.first += d;
    around.second += d * d;
  }
  // The one pass's partial of `count` elements from their sums around `shift`; *second_pass where
  // its M2 may have lost digits (the squares around the shift past max_squares times M2, or not
  // finite: the second pass then propagates a NaN or an infinity as before), whose deviations from
  // the partial's (rounded) mean the caller sums again.
  static __device__ __forceinline__ Partial from_shifted_sums(int64_t count, double shift,
                                                              const PairSum<double>& around, bool* second_pass,
                                                              double max_squares = kOnePassMaxSquares) {
    const double n = static_cast<double>(count);
    const double offset = count > 0 ? around.first / n : 0.0;  // mean - shift
    const double m2 = around.second - around.first * offset;
    const Acc mean = static_cast<Acc>(shift + offset);
    *second_pass = !(around.second <= max_squares * m2);
    const double resid = offset - (static_cast<double>(mean) - shift);
    return Partial{Acc(n), mean, static_cast<Acc>(resid), static_cast<Acc>(m2)};
  }
  // The second pass's partial of `count` elements from the sums of their deviations from `mean`.
  template <typename Sum>
  static __device__ __forceinline__ Partial from_deviations(int64_t count, Acc mean, const PairSum<Sum>& dev) {
    const Sum n = static_cast<Sum>(count);
    const Sum resid = count > 0 ? dev.first / n : Sum(0);
    return Partial{static_cast<Acc>(count), mean, static_cast<Acc>(resid),
                   static_cast<Acc>(dev.second - dev.first * resid)};
  }

  // One pass where it saves issue slots without costing registers: float32 accumulators (float64
  // input has no wider type to sum in), elements that each pass loads again (a chunk's or a
  // channels_last tile's; group_registers' are in registers), and no activation or channel affine
  // but where the elements' kernel has the registers (chunk.cuh kGeneralOnePass). Measured in
  // dev/VARIANTS.md 59: the half-type seeds 9% faster, channels_last 3-5%; with it tiny slices ran
  // 11% slower, shared_resident's general ops 2-7%.
  template <typename Elements>
  static constexpr bool kOnePass = std::is_same_v<Acc, float> && !kElementsInRegisters<Elements> &&
                                   (!kGeneral || kGeneralOnePass<Elements>);

  // The corrected two-pass's second pass: the deviations from `mean` (the rounded mean of the
  // `count` elements), summed in Sum, their residual (what the rounding missed) and M2.
  template <typename Sum, typename Elements, typename AllSum>
  static __device__ __forceinline__ Partial deviations(const Elements& elements, int64_t count, Acc mean,
                                                       AllSum& all_sum) {
    PairSum<Sum> dev{Sum(0), Sum(0)};
    elements.for_each([&](const Acc(&v)[1]) {
      const Sum d = static_cast<Sum>(v[0]) - static_cast<Sum>(mean);
      dev.first += d;
      dev.second += d * d;
    });
    return from_deviations(count, mean, all_sum.last(dev));
  }

  static __device__ __forceinline__ Totals combine(const Partial* partials, int count) {
    Totals totals;
    combine_chunks(partials, count, &totals.mean_hi, &totals.mean_lo, &totals.m2);
    return totals;
  }

  // combine_chunks' totals are a rounded mean (mean_hi), what it missed (mean_lo) and M2 around
  // their sum: a chunk's statistics.
  static __device__ __forceinline__ Partial to_partial(const Totals& totals, int64_t count) {
    return Partial{static_cast<Acc>(count), totals.mean_hi, totals.mean_lo, totals.m2};
  }

  // The coefficients of the context's channel: the general op's window starts there (ChannelWindow
  // moves on from it); the plain op's only channel of its chunk where the plan's chunks lie in
  // channels (plan_internal.h chunks_lie_in_channels), and the slice's only one otherwise.
  static __device__ __forceinline__ Coefficients finish(const KernelArgs& args, int64_t slice, const Context& ctx,
                                                        const Totals& totals, bool writer) {
    Coefficients c{Epilogue::of(args)};
    c.affine = finish_slice<Acc>(args, slice, ctx.weight, ctx.bias, totals.mean_hi, totals.mean_lo, totals.m2, writer,
                                 &c.rstd);
    return c;
  }

  // The channel of the slice whose coefficients finish makes (common.cuh ChannelWindow). Kept in
  // the context: taken again from the chunk's first element at the window, SD UNet's GroupNorm +
  // SiLU forward kept half its gain (dev/VARIANTS.md 105).
  static __device__ __forceinline__ int64_t window_channel(const Context& ctx) {
    if constexpr (kGeneral) {
      return ctx.chunk_channel;
    } else {
      return 0;
    }
  }

  static __device__ __forceinline__ void for_channel(Acc weight, Acc bias, Coefficients& c) {
    c.affine = SliceAffine<Acc>::of_parts(c.affine.center_hi, c.affine.center_lo, c.rstd * weight, bias);
  }

  // `activation`: c's, fixed by c.visit around the caller's loop, or c itself (the branch per element).
  template <typename Act>
  static __device__ __forceinline__ Acc apply(const Coefficients& c, const Act& activation, const Acc (&v)[1]) {
    return activation.activate(c.affine.apply(v[0]));
  }

  // The split path: (count, mean, resid, M2) in float64 per part.
  using SplitPartial = detail::SplitPartial;

  static __device__ __forceinline__ SplitPartial to_split(const Partial& stage) {
    return SplitPartial{static_cast<double>(stage.count), static_cast<double>(stage.mean),
                        static_cast<double>(stage.resid), static_cast<double>(stage.m2)};
  }

  // The statistics of `parts` partials (partial(i): the i-th, in order), taken by `lanes` threads
  // (this one `lane`) and summed over them by all_sum (a CTA's or a group of lanes'), in one pass
  // over the partials: with d_i = mean_i - base (base: partial 0's rounded mean), one sum of
  // (count_i, count_i * d_i, M2_i + count_i * d_i^2); the mean is base + offset (offset: the
  // count-weighted mean of d_i) and M2 = (the third sum) - count * offset^2. In float64 that
  // difference keeps M2's digits (the partials' means lie close to each other and to base; it is
  // at least the partials' own M2). One sum and one division: merging the partials pairwise by
  // Chan's formula (a division per merge, a dependent tree) cost 1-5 us in split_slice
  // (dev/VARIANTS.md 27), and a second pass over the partials (offset first, then the deviations
  // from it) read them twice (60). Every lane gets the result, which combines again as a partial.
  template <int kInFlight, typename Partials, typename AllSum>
  static __device__ SplitPartial combine_split(const Partials& partial, int parts, int lane, int lanes,
                                               AllSum& all_sum) {
    const double base = partial(0).mean;
    TripleSum<double> local{0.0, 0.0, 0.0};
#pragma unroll kInFlight
    for (int i = lane; i < parts; i += lanes) {
      const SplitPartial p = partial(i);
      const double d = (p.mean - base) + p.resid;
      const double weighted = p.count * d;
      local.first += p.count;
      local.second += weighted;
      local.third += p.m2 + weighted * d;
    }
    const TripleSum<double> total = all_sum(local);
    const double offset = total.second / total.first;
    return SplitPartial{total.first, base, offset, total.third - total.second * offset};
  }

  // The mean's high part is the whole mean's, not combine_split's `mean` (its first partial's,
  // which may lie far from the slice's: a first part of one row of 0 amid 8196 left the whole mean
  // to the float32 low part, and y 1.1e-4 off; GpuChannelsLast.StreamedReduction).
  static __device__ __forceinline__ Totals from_split(const SplitPartial& stats) {
    const Acc mean_hi = static_cast<Acc>(stats.mean + stats.resid);
    return Totals{mean_hi, static_cast<Acc>((stats.mean - static_cast<double>(mean_hi)) + stats.resid),
                  static_cast<Acc>(stats.m2)};
  }
};

}  // namespace inorm::detail
