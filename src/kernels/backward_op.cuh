// The backward as an op of the slice engine (the interface: kernels/forward_op.cuh). It reads x and
// dy, reduces each slice to three sums in one pass, and writes dx:
//   d = x - center (the forward's mean, or the running mean in eval mode), r = mean(d) (train
//   mode: what the float32 mean's rounding missed, so 1e4 + randn keeps its digits; 0 in eval),
//   dz = dy * activation'(d * rstd * w + b) (kGeneral; dz = dy otherwise), xhat = (d - r) * rstd,
//   sum_dz_xhat = rstd * (sum(dz * d) - r * sum(dz)),
//   train: dx = rstd * w * (dz - sum(dz) / S - xhat * sum_dz_xhat / S)
//   eval:  dx = rstd * w * dz
// and leaves sum_dz_xhat and sum(dz) per slice for the channel reduction (dweight, dbias). The
// activation's z is recomputed from the statistics given (inorm.h BackwardParams), without r.
#pragma once

#include <cub/block/block_reduce.cuh>

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

template <typename T, bool kGeneral>
struct BackwardOp {
  using Elem = T;
  using Acc = AccOf<T>;
  using Epilogue = EpilogueOf<Acc, kGeneral>;
  static constexpr int kInputs = 2;  // x, dy
  static constexpr bool kChannelCoefficients = false;  // GroupNorm's backward: not yet
  using Partial = GradSums<Acc>;
  struct Totals {
    Acc dy;
    Acc dy_d;
    Acc d;
  };
  struct Context : Epilogue {
    Acc center;  // the mean x was normalized with
    Acc rstd;
    Acc weight;
    Acc bias;    // kGeneral: z = (x - center) * rstd * weight + bias
  };
  struct Coefficients : Epilogue {
    Acc center;
    Acc resid;     // r
    Acc dy_scale;  // rstd * w
    Acc x_scale;   // train: -rstd * w * rstd * sum_dz_xhat / S
    Acc shift;     // train: -rstd * w * sum(dz) / S
    Acc bias;      // kGeneral: z = (x - center) * dy_scale + bias
    bool train;
  };

  static __device__ __forceinline__ Context context(const KernelArgs& args, int64_t slice) {
    const int64_t channel = first_channel(args, slice);
    Context ctx{Epilogue::of(args)};
    if (args.use_input_stats) {
      ctx.center = static_cast<const Acc*>(args.saved_mean)[slice];
      ctx.rstd = static_cast<const Acc*>(args.saved_rstd)[slice];
    } else {
      ctx.center = load_param<Acc>(args.running_mean, args.param_dtype, channel);
      ctx.rstd = reciprocal_sqrt(load_param<Acc>(args.running_var, args.param_dtype, channel) +
                                 static_cast<Acc>(args.eps));
    }
    ctx.weight = args.weight ? load_param<Acc>(args.weight, args.param_dtype, channel) : Acc(1);
    ctx.bias = kGeneral && args.bias ? load_param<Acc>(args.bias, args.param_dtype, channel) : Acc(0);
    return ctx;
  }

  template <typename Elements, typename AllSum>
  static __device__ __forceinline__ Partial reduce(const Context& ctx, const Elements& elements, int64_t,
                                                   AllSum& all_sum) {
    TripleSum<Acc> sums{Acc(0), Acc(0), Acc(0)};
    const Acc z_scale = ctx.rstd * ctx.weight;
    elements.for_each([&](const Acc(&v)[2]) {
      const Acc d = v[0] - ctx.center;
      const Acc dz = ctx.gradient(fma(d, z_scale, ctx.bias), v[1]);
      sums.first += dz;
      sums.second += dz * d;
      sums.third += d;
    });
    sums = all_sum.last(sums);
    return Partial{sums.first, sums.second, sums.third, Acc(0)};
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

  static __device__ __forceinline__ Coefficients finish(const KernelArgs& args, int64_t slice, const Context& ctx,
                                                        const Totals& totals, bool writer) {
    const Acc n = static_cast<Acc>(args.slice_len);
    const Acc resid = args.use_input_stats ? totals.d / n : Acc(0);
    const Acc dy_xhat = ctx.rstd * (totals.dy_d - resid * totals.dy);
    if (writer && args.slice_term0) {  // the weight gradients' terms
      static_cast<Acc*>(args.slice_term0)[slice] = dy_xhat;
      static_cast<Acc*>(args.slice_term1)[slice] = totals.dy;
    }
    const Acc dy_scale = ctx.rstd * ctx.weight;
    const Epilogue& epilogue = ctx;
    if (!args.use_input_stats) {
      return Coefficients{epilogue, ctx.center, Acc(0), dy_scale, Acc(0), Acc(0), ctx.bias, false};
    }
    return Coefficients{epilogue,          ctx.center, resid, dy_scale, -dy_scale * ctx.rstd * dy_xhat / n,
                        -dy_scale * totals.dy / n, ctx.bias, true};
  }

  static __device__ __forceinline__ Acc apply(const Coefficients& c, const Acc (&v)[2]) {
    const Acc d = v[0] - c.center;
    const Acc dz = c.gradient(fma(d, c.dy_scale, c.bias), v[1]);
    if (!c.train) return c.dy_scale * dz;  // without an activation x plays no part (a NaN in it neither)
    return fma(c.dy_scale, dz, fma(c.x_scale, d - c.resid, c.shift));
  }

  using SplitPartial = GradSplitSums;

  static __device__ __forceinline__ SplitPartial to_split(const Partial& part) {
    return SplitPartial{static_cast<double>(part.dy), static_cast<double>(part.dy_d), static_cast<double>(part.d), 0.0};
  }

  // The sums of a slice's parts, in float64, one block-wide sum in a fixed order. Every thread of the
  // CTA calls it; every thread gets the result.
  template <int kThreads>
  static __device__ SplitPartial combine_split(const SplitPartial* partials, int parts) {
    __shared__ typename BlockAllSum<double, kThreads>::TempStorage storage;
    TripleSum<double> local{0.0, 0.0, 0.0};
#pragma unroll 1
    for (int i = threadIdx.x; i < parts; i += kThreads) {  // L2 loads: other CTAs wrote the partials
      local.first += __ldcg(&partials[i].dy);
      local.second += __ldcg(&partials[i].dy_d);
      local.third += __ldcg(&partials[i].d);
    }
    BlockAllSum<double, kThreads> all_sum{storage};
    const TripleSum<double> total = all_sum(local);
    return SplitPartial{total.first, total.second, total.third, 0.0};
  }

  static __device__ __forceinline__ Totals from_split(const SplitPartial& sums) {
    return Totals{static_cast<Acc>(sums.dy), static_cast<Acc>(sums.dy_d), static_cast<Acc>(sums.d)};
  }
};

}  // namespace inorm::detail
