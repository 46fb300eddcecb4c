// Float64 CPU reference for InstanceNorm forward and backward with exactly the library's semantics
// (the semantics of torch.nn.functional.instance_norm and its autograd, followed by the activation
// as torch.nn.functional computes it), and for GroupNorm (torch.nn.functional.group_norm), its
// generalization: a slice is C / groups channels of a sample, the affine per channel inside it.
#pragma once

#include <cstdint>
#include <vector>

#include "inorm/inorm.h"

namespace inorm::testing {

// The activation of z and dy * its derivative at z, PyTorch's formulas (inorm.h Activation).
double activate(Activation activation, double negative_slope, double z);
double activation_gradient(Activation activation, double negative_slope, double z, double dy);
// The size of the terms dy * activation'(z) is made of, for tolerances: |dz|, but for SiLU
// |dy| * (s + |z| s (1 - s)), s = sigmoid(z). SiLU's derivative crosses 0 at z = -1.278, where its
// two terms cancel: the kernels' z, a few roundings of the stats type off the oracle's, moves dz
// there by that much times silu''(z), which |dz| alone cannot bound (a GroupNorm bfloat16 case of
// 1000 + randn data, few distinct z a channel, missed dbias by 3e-5 of it in 1-2% of runs; its
// failing seeds pass with this scale).
double activation_gradient_scale(Activation activation, double negative_slope, double z, double dy);
// Whether the activation has a kink (relu, leaky_relu) at z = 0, where the side its derivative takes
// depends on rounding; and how near 0 such a z lies for that: the kernels' z in the stats type of
// `dtype` against the oracle's in float64, a few roundings of the stats type around z's terms
// (mean * scale and bias, scale = rstd * weight). The tests set dy = 0 there, the benchmark skips it.
bool has_kink(Activation activation);
double kink_band(DType dtype, double mean, double scale, double bias);

struct SliceStats {
  double mean = 0;
  double var = 0;           // biased: divide by S
  double var_unbiased = 0;  // divide by S - 1
  double rstd = 0;          // 1 / sqrt(var + eps)
};

// Two-pass statistics (mean, then squared deviations) accumulated in long double.
SliceStats slice_statistics(const double* x, int64_t len, double eps);

struct ReferenceProblem {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t slice_len = 0;  // S, the spatial extent of a channel
  // GroupNorm: groups dividing C, each slice C / groups channels x S (0: InstanceNorm, groups ==
  // channels). Running stats and eval mode only with InstanceNorm.
  int64_t groups = 0;
  double eps = 1e-5;
  const std::vector<double>* x = nullptr;             // [N * C * S]
  const std::vector<double>* weight = nullptr;        // [C] or null
  const std::vector<double>* bias = nullptr;          // [C] or null
  const std::vector<double>* running_mean = nullptr;  // [C] or null
  const std::vector<double>* running_var = nullptr;   // [C] or null
  double momentum = 0.1;
  bool use_input_stats = true;
  int updates = 1;  // forward calls on the same input: running stats are updated this many times
  Activation activation = Activation::kNone;  // y = activation(z)
  double negative_slope = 0.01;
};

struct ReferenceResult {
  std::vector<double> y;
  std::vector<double> mean;  // [N * groups] (InstanceNorm: [N * C]), use_input_stats only
  std::vector<double> rstd;  // [N * groups], use_input_stats only
  std::vector<double> running_mean;  // after `updates` updates (or unchanged)
  std::vector<double> running_var;
};

ReferenceResult instance_norm_reference(const ReferenceProblem& problem);

// The backward of the forward above: x's shape, the statistics computed from x (train mode,
// use_input_stats) or the running stats (eval mode), weight or 1; with an activation, dz = dy *
// activation'(z) takes dy's place, z = (x - mean) * rstd * weight + bias with the statistics the
// backward is given (inorm.h BackwardParams; bias plays no other part).
struct BackwardProblem {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t slice_len = 0;  // S, the spatial extent of a channel
  int64_t groups = 0;     // as in ReferenceProblem
  double eps = 1e-5;
  const std::vector<double>* x = nullptr;             // [N * C * S]
  const std::vector<double>* dy = nullptr;            // [N * C * S]
  const std::vector<double>* weight = nullptr;        // [C] or null
  const std::vector<double>* running_mean = nullptr;  // [C], eval mode only
  const std::vector<double>* running_var = nullptr;   // [C], eval mode only
  bool use_input_stats = true;
  Activation activation = Activation::kNone;
  double negative_slope = 0.01;
  const std::vector<double>* bias = nullptr;  // [C] or null; read only with an activation
  // Train mode: the forward's mean and rstd as the backward gets them (rounded to the stats type),
  // [N * groups], which place z; null: the exact statistics of x.
  const std::vector<double>* saved_mean = nullptr;
  const std::vector<double>* saved_rstd = nullptr;
};

struct BackwardResult {
  std::vector<double> dx;       // [N * C * S]
  std::vector<double> dweight;  // [C]: sum over n and the slice of dz * xhat
  std::vector<double> dbias;    // [C]: sum over n and the slice of dz
  std::vector<double> z;        // [N * C * S]: the pre-activation values (xhat * weight + bias)
  // Scales for tolerances, from each element's gradient size |dz| (activation_gradient_scale): per
  // slice rstd * rms(|dz| * weight) (dx's terms are of that size), per channel the sums of
  // |dz * xhat| and |dz| (the size of the terms dweight and dbias add up).
  std::vector<double> dx_scale;       // [N * groups]
  std::vector<double> dweight_scale;  // [C]
  std::vector<double> dbias_scale;    // [C]
};

BackwardResult instance_norm_backward_reference(const BackwardProblem& problem);

}  // namespace inorm::testing
