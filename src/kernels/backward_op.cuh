// The backward as an op of the slice engine (the interface: kernels/forward_op.cuh). It reads x and
// dy, reduces each slice to three sums in one pass, and writes dx:
//   d = x - center (the forward's mean, or the running mean in eval mode), r = mean(d) (train
//   mode: what the float32 mean's rounding missed, so 1e4 + randn keeps its digits; 0 in eval),
//   dz = dy * activation'(d * rstd * w + b) (kGeneral; dz = dy otherwise), g = dz * w,
//   xhat = (d - r) * rstd, sum_g_xhat = rstd * (sum(g * d) - r * sum(g)),
//   train: dx = rstd * (g - sum(g) / S - xhat * sum_g_xhat / S)
//   eval:  dx = rstd * g
// with S the slice's length, and leaves per channel what dweight = sum(dz * xhat) and dbias =
// sum(dz) need for the channel reduction. The activation's z is recomputed from the statistics
// given (inorm.h BackwardParams), without r.
// InstanceNorm (a slice is one channel, w one number) sums dz and takes w out of the sums; GroupNorm
// (AffineBy::kElement: a slice of several channels) sums each channel's part of the chunk apart,
// weights it by its w into the slice's sums, and leaves it in the workspace (args.channel_partials)
// for dweight and dbias; where each chunk lies in one channel (AffineBy::kChunk), the chunk's sums
// are that channel's, taken at once with its w as InstanceNorm's.
#pragma once

#include "kernels/chunk.cuh"
#include "kernels/common.cuh"
#include "plan_internal.h"

namespace inorm::detail {

// A chunk's sums, padded to four fields: the cluster exchange moves whole 16-byte pieces and the
// L2 exchange's workspace holds chunk_stats_bytes per chunk.
template <typename Acc>
struct GradSums {
  Acc dy;    // sum of dy
  Acc dy_d;  // sum of dy * (x - center)
  Acc d;     // sum of (x - center)
  Acc pad;
};
static_assert(sizeof(GradSums<float>) == 16 && sizeof(GradSums<double>) == 32,
              "the exchanges move a chunk's partial as ChunkStats-sized pieces");

// The split path's partial sums of one part, in float64, as large as the forward's SplitPartial.
struct GradSplitSums {
  double dy;
  double dy_d;
  double d;
  double pad;
};
static_assert(sizeof(GradSplitSums) == sizeof(SplitPartial), "split_pipelined's workspace holds either");

// Where the backward takes GroupNorm's weight and bias from (launchers.h dispatch_op_of): the
// slice's one channel, or none (InstanceNorm; GroupNorm without an affine, w = 1); the chunk's one
// channel (GroupNorm whose chunks each lie in one: plan_internal.h takes_chunk_channel_affine); or
// each element's channel (GroupNorm's chunks across channels).
enum class AffineBy { kSlice, kChunk, kElement };

// kGeneral: the runtime activation's epilogue. kAffine (above): GroupNorm's forms, each an op of
// its own, not a branch of InstanceNorm's, whose kernels stay as they were: the element form's loop
// over channels, compiled into the same kernels, made InstanceNorm's with an activation spill
// 100-400 bytes (dev/VARIANTS.md 44), and the chunk form's channel sums, as a branch of it, moved
// the 64-register instances' spills by 8-40 bytes either way (ptxas -v). kGeneral only where there
// is an activation, so that GroupNorm without one runs no activation's branch per element.
template <typename T, bool kGeneral, AffineBy kAffine = AffineBy::kSlice>
struct BackwardOp {
  static constexpr bool kSpansChannels = kAffine == AffineBy::kElement;
  static constexpr bool kSumsOfG = kAffine != AffineBy::kSlice;  // GroupNorm's affine: sums of g = dz * w, not dz
  using Elem = T;
  using Acc = AccOf<T>;
  using Epilogue = EpilogueOf<Acc, kGeneral>;
  static constexpr int kInputs = 2;  // x, dy
  static constexpr bool kChannelCoefficients = kSpansChannels;
  static constexpr bool kGeneralForm = kGeneral || kSpansChannels;  // plan_internal.h runs_general_op
  using Partial = GradSums<Acc>;  // InstanceNorm: sums of dz; GroupNorm: of g = dz * w
  using ExtraSum = Acc;           // nothing beyond Acc's sums
  struct Totals {
    Acc dy;
    Acc dy_d;
    Acc d;
  };
  struct Context : Epilogue {
    Acc center;  // the mean x was normalized with
    Acc rstd;
    Acc weight;  // of the slice's first channel
    Acc bias;    // kGeneral: z = (x - center) * rstd * weight + bias
  };
  struct Coefficients : Epilogue {
    Acc center;
    Acc resid;     // r
    Acc rstd;
    Acc dy_scale;  // rstd * w (of the window's channel)
    Acc x_scale;   // train: -rstd^2 * sum_g_xhat / S
    Acc shift;     // train: -rstd * sum(g) / S
    Acc bias;      // kGeneral: z = (x - center) * dy_scale + bias
    bool train;
  };

  // `channel`'s weight, and its bias where the op applies one (kGeneral), loaded together.
  static __device__ __forceinline__ ChannelAffine<Acc> affine_of(const KernelArgs& args, int64_t channel) {
    if constexpr (kGeneral) {
      return channel_affine<Acc>(args, channel);
    } else {
      return ChannelAffine<Acc>{channel_weight<Acc>(args, channel), Acc(0)};
    }
  }

  // (`normalizes`: the forward's; every backward item needs the slice's coefficients.) The weight
  // and bias of the slice's first channel, which the element form's window starts at (taken at the
  // chunk's own channel they ran 0-4% slower, dev/VARIANTS.md 105); the chunk form's, of the
  // channel of the chunk's first element `first`.
  // kByMultiplier: the channels_last kernels' (common.cuh first_channel).
  template <bool kByMultiplier = false>
  static __device__ __forceinline__ Context context(const KernelArgs& args, int64_t slice, bool = true,
                                                    int64_t first = 0) {
    const int64_t channel = first_channel<kByMultiplier>(args, slice);
    Context ctx{Epilogue::of(args)};
    if (args.use_input_stats) {
      ctx.center = static_cast<const Acc*>(args.saved_mean)[slice];
      ctx.rstd = static_cast<const Acc*>(args.saved_rstd)[slice];
    } else {
      ctx.center = load_param<Acc>(args.running_mean, args.param_dtype, channel);
      ctx.rstd = reciprocal_sqrt(load_param<Acc>(args.running_var, args.param_dtype, channel) +
                                 static_cast<Acc>(args.eps));
    }
    const ChannelAffine<Acc> affine =
        affine_of(args, kAffine == AffineBy::kChunk ? channel + channel_in_slice(args, first) : channel);
    ctx.weight = affine.weight;
    ctx.bias = affine.bias;
    return ctx;
  }

  // The channel of the slice whose coefficients finish makes (common.cuh ChannelWindow).
  static __device__ __forceinline__ constexpr int64_t window_channel(const Context&) { return 0; }

  // This thread's sums of dz, dz * d and d over the elements `visit` walks, for one channel's
  // weight and bias. kFixActivation: the activation fixed around the loop (ctx.visit); the branch
  // per element (a load of the kind and a compare-and-branch chain) doubled the instructions of
  // SiLU's reduction loop in the SASS. group_registers' elements, held in registers, take the
  // branch per element: a copy of the loop for each activation took up to twice the registers
  // there (ptxas -v). (No op with an activation takes shared_resident's register parts.)
  template <bool kFixActivation, typename Visit>
  static __device__ __forceinline__ TripleSum<Acc> channel_sums(const Context& ctx, Acc weight, Acc bias,
                                                                Visit&& visit) {
    const Acc z_scale = ctx.rstd * weight;
    const auto sums_with = [&](const auto& activation) {
      TripleSum<Acc> sums{Acc(0), Acc(0), Acc(0)};
      visit([&](const Acc(&v)[2]) {
        const Acc d = v[0] - ctx.center;
        const Acc dz = activation.gradient(fma(d, z_scale, bias), v[1]);
        sums.first += dz;
        sums.second += dz * d;
        sums.third += d;
      });
      return sums;
    };
    if constexpr (kFixActivation) {
      return ctx.visit(sums_with);
    } else {
      return sums_with(ctx);
    }
  }

  template <typename Elements, typename AllSum>
  static __device__ __forceinline__ Partial reduce(const KernelArgs& args, const Context& ctx,
                                                   const Elements& elements, const ChunkPlace& place, int64_t count,
                                                   AllSum& all_sum) {
    if constexpr (!kSpansChannels) {  // one affine a chunk, or none: the whole chunk at once
      const TripleSum<Acc> sums =
          all_sum.last(channel_sums<!kElementsInRegisters<Elements>>(ctx, ctx.weight, ctx.bias,
                                                                     [&](auto&& f) { elements.for_each(f); }));
      if constexpr (kAffine == AffineBy::kChunk) {  // its one channel's, weighted into the slice's
        if (count > 0) leave_channel_sums(args, place, place.first / args.channel_len, sums);
        return Partial{ctx.weight * sums.first, ctx.weight * sums.second, sums.third, Acc(0)};
      } else {
        return Partial{sums.first, sums.second, sums.third, Acc(0)};
      }
    } else {
      return reduce_by_channel(args, ctx, elements, place, count, all_sum);
    }
  }

  // Channel c's sums of dz and dz * d over a chunk, left for the weight gradients (channel_reduce.cu)
  // by the thread that holds them: pair c + k of the slice for its chunk k (plan_internal.h
  // channel_partials_per_slice).
  static __device__ __forceinline__ void leave_channel_sums(const KernelArgs& args, const ChunkPlace& place,
                                                            int64_t c, const TripleSum<Acc>& sums) {
    if (place.writer && args.channel_partials != nullptr) {
      Acc* pair = static_cast<Acc*>(args.channel_partials) +
                  2 * (place.slice * args.channel_partials_per_slice + c + place.index);
      pair[0] = sums.first;
      pair[1] = sums.second;
    }
  }

  // GroupNorm: a block sum per channel the chunk overlaps, each with its channel's weight and bias,
  // added up in channel order where all_sum.last leaves them (thread 0 of a CTA; every lane of a
  // group), and each channel's sums of dz and dz * d left for the weight gradients.
  template <typename Elements, typename AllSum>
  static __device__ __forceinline__ Partial reduce_by_channel(const KernelArgs& args, const Context& ctx,
                                                              const Elements& elements, const ChunkPlace& place,
                                                              int64_t count, AllSum& all_sum) {
    const int64_t len = args.channel_len;
    const int64_t slice_channel = first_channel(args, place.slice);
    Partial partial{Acc(0), Acc(0), Acc(0), Acc(0)};
    const int64_t last = count > 0 ? (place.first + count - 1) / len : -1;
#pragma unroll 1
    for (int64_t c = place.first / len; c <= last; ++c) {
      const int64_t begin = max(c * len, place.first) - place.first;
      const int64_t end = min((c + 1) * len, place.first + count) - place.first;
      const ChannelAffine<Acc> affine = affine_of(args, slice_channel + c);
      const Acc weight = affine.weight;
      const Acc bias = affine.bias;
      const TripleSum<Acc> sums = all_sum.last(channel_sums<!kElementsInRegisters<Elements>>(
          ctx, weight, bias, [&](auto&& f) { elements.for_each_range(begin, end, f); }));
      leave_channel_sums(args, place, c, sums);
      partial.dy += weight * sums.first;
      partial.dy_d += weight * sums.second;
      partial.d += sums.third;
    }
    return partial;
  }

  static __device__ __forceinline__ Totals combine(const Partial* partials, int count) {
    Totals totals{Acc(0), Acc(0), Acc(0)};
    for (int r = 0; r < count; ++r) {
      totals.dy += partials[r].dy;
      totals.dy_d += partials[r].dy_d;
      totals.d += partials[r].d;
    }
    return totals;
  }

  static __device__ __forceinline__ Partial to_partial(const Totals& totals, int64_t /*count*/) {
    return Partial{totals.dy, totals.dy_d, totals.d, Acc(0)};
  }

  static __device__ __forceinline__ Coefficients finish(const KernelArgs& args, int64_t slice, const Context& ctx,
                                                        const Totals& totals, bool writer) {
    const Acc n = static_cast<Acc>(args.slice_len);
    const Acc resid = args.use_input_stats ? totals.d / n : Acc(0);
    const Acc dy_xhat = ctx.rstd * (totals.dy_d - resid * totals.dy);
    if (writer && args.slice_term0) {  // the weight gradients' terms (channel_reduce.cu)
      static_cast<Acc*>(args.slice_term0)[slice] = kSumsOfG ? ctx.rstd : dy_xhat;
      static_cast<Acc*>(args.slice_term1)[slice] = kSumsOfG ? resid : totals.dy;
    }
    const Acc dy_scale = ctx.rstd * ctx.weight;
    const Acc g_scale = kSumsOfG ? ctx.rstd : dy_scale;  // the sums are of g (GroupNorm) or of dz
    const Epilogue& epilogue = ctx;
    if (!args.use_input_stats) {
      return Coefficients{epilogue, ctx.center, Acc(0), ctx.rstd, dy_scale, Acc(0), Acc(0), ctx.bias, false};
    }
    return Coefficients{epilogue, ctx.center, resid, ctx.rstd, dy_scale, -g_scale * ctx.rstd * dy_xhat / n,
                        -g_scale * totals.dy / n, ctx.bias, true};
  }

  static __device__ __forceinline__ void for_channel(Acc weight, Acc bias, Coefficients& c) {
    c.dy_scale = c.rstd * weight;
    c.bias = bias;
  }

  // `activation`: c's, fixed by c.visit around the caller's loop, or c itself (the branch per element).
  template <typename Act>
  static __device__ __forceinline__ Acc apply(const Coefficients& c, const Act& activation, const Acc (&v)[2]) {
    const Acc d = v[0] - c.center;
    const Acc dz = activation.gradient(fma(d, c.dy_scale, c.bias), v[1]);
    if (!c.train) return c.dy_scale * dz;  // without an activation x plays no part (a NaN in it neither)
    return fma(c.dy_scale, dz, fma(c.x_scale, d - c.resid, c.shift));
  }

  using SplitPartial = GradSplitSums;

  static __device__ __forceinline__ SplitPartial to_split(const Partial& part) {
    return SplitPartial{static_cast<double>(part.dy), static_cast<double>(part.dy_d), static_cast<double>(part.d), 0.0};
  }

  // The sums of `parts` partials (partial(i): the i-th) in float64, taken by `lanes` threads (this
  // one `lane`) and summed over them by all_sum (a CTA's or a group of lanes') in a fixed order.
  // Every lane gets the result, which combines again as a partial.
  template <int kInFlight, typename Partials, typename AllSum>
  static __device__ SplitPartial combine_split(const Partials& partial, int parts, int lane, int lanes,
                                               AllSum& all_sum) {
    TripleSum<double> local{0.0, 0.0, 0.0};
#pragma unroll kInFlight
    for (int i = lane; i < parts; i += lanes) {
      const SplitPartial p = partial(i);
      local.first += p.dy;
      local.second += p.dy_d;
      local.third += p.d;
    }
    const TripleSum<double> total = all_sum(local);
    return SplitPartial{total.first, total.second, total.third, 0.0};
  }

  static __device__ __forceinline__ Totals from_split(const SplitPartial& sums) {
    return Totals{static_cast<Acc>(sums.dy), static_cast<Acc>(sums.dy_d), static_cast<Acc>(sums.d)};
  }
};

}  // namespace inorm::detail
