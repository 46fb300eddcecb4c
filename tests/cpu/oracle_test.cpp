// The float64 oracle against values computed by hand, its backward against central differences
// of its forward, and the comparison the GPU tests make against it.
#include "testing/oracle.h"
#include "testing/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace inorm::testing {
namespace {

TEST(Oracle, SliceStatisticsByHand) {
  const std::vector<double> x = {1, 2, 3, 4};
  const SliceStats stats = slice_statistics(x.data(), 4, 1e-5);
  EXPECT_DOUBLE_EQ(stats.mean, 2.5);
  EXPECT_DOUBLE_EQ(stats.var, 1.25);
  EXPECT_DOUBLE_EQ(stats.var_unbiased, 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(stats.rstd, 1.0 / std::sqrt(1.25 + 1e-5));
}

TEST(Oracle, StatisticsKeepDigitsFarFromZero) {
  // 1e8 + {1, 2, 3, 4}: sum and sum of squares would lose the variance; two passes keep it.
  const std::vector<double> x = {1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4};
  const SliceStats stats = slice_statistics(x.data(), 4, 0.0);
  EXPECT_DOUBLE_EQ(stats.var, 1.25);
}

TEST(Oracle, AffineTwoInstancesAndRunningStats) {
  // N=2, C=1, S=4: instance 0 is {1,2,3,4}, instance 1 is {0,0,2,2}.
  const std::vector<double> x = {1, 2, 3, 4, 0, 0, 2, 2};
  const std::vector<double> weight = {2.0};
  const std::vector<double> bias = {0.5};
  const std::vector<double> running_mean = {0.0};
  const std::vector<double> running_var = {1.0};
  ReferenceProblem problem;
  problem.batch = 2;
  problem.channels = 1;
  problem.slice_len = 4;
  problem.eps = 0.0;
  problem.x = &x;
  problem.weight = &weight;
  problem.bias = &bias;
  problem.running_mean = &running_mean;
  problem.running_var = &running_var;
  problem.momentum = 0.1;
  const ReferenceResult result = instance_norm_reference(problem);
  // Instance 1: mean 1, biased var 1, so y = (x - 1) * 2 + 0.5.
  EXPECT_DOUBLE_EQ(result.y[4], -1.5);
  EXPECT_DOUBLE_EQ(result.y[7], 2.5);
  EXPECT_DOUBLE_EQ(result.y[0], (1 - 2.5) / std::sqrt(1.25) * 2 + 0.5);
  EXPECT_DOUBLE_EQ(result.mean[1], 1.0);
  EXPECT_DOUBLE_EQ(result.rstd[1], 1.0);
  // Batch averages: mean (2.5 + 1) / 2 = 1.75; unbiased var (5/3 + 4/3) / 2 = 1.5.
  EXPECT_DOUBLE_EQ(result.running_mean[0], 0.9 * 0.0 + 0.1 * 1.75);
  EXPECT_DOUBLE_EQ(result.running_var[0], 0.9 * 1.0 + 0.1 * 1.5);

  problem.updates = 3;
  const ReferenceResult three = instance_norm_reference(problem);
  double rm = 0.0;
  double rv = 1.0;
  for (int i = 0; i < 3; ++i) {
    rm = 0.9 * rm + 0.1 * 1.75;
    rv = 0.9 * rv + 0.1 * 1.5;
  }
  EXPECT_DOUBLE_EQ(three.running_mean[0], rm);
  EXPECT_DOUBLE_EQ(three.running_var[0], rv);
}

TEST(Oracle, EvalModeIsElementwiseWithRunningStats) {
  // N=1, C=2, S=1: the spatial size 1 is valid here.
  const std::vector<double> x = {3.0, -1.0};
  const std::vector<double> running_mean = {1.0, 0.0};
  const std::vector<double> running_var = {4.0, 0.25};
  const std::vector<double> bias = {1.0, 2.0};
  ReferenceProblem problem;
  problem.batch = 1;
  problem.channels = 2;
  problem.slice_len = 1;
  problem.eps = 0.0;
  problem.x = &x;
  problem.bias = &bias;
  problem.running_mean = &running_mean;
  problem.running_var = &running_var;
  problem.use_input_stats = false;
  const ReferenceResult result = instance_norm_reference(problem);
  EXPECT_DOUBLE_EQ(result.y[0], (3.0 - 1.0) / 2.0 + 1.0);
  EXPECT_DOUBLE_EQ(result.y[1], -1.0 / 0.5 + 2.0);
  EXPECT_DOUBLE_EQ(result.running_mean[0], 1.0);  // unchanged in eval mode
  EXPECT_TRUE(result.mean.empty());
}

TEST(Oracle, NanStaysInItsSlice) {
  const std::vector<double> x = {1, NAN, 3, 1, 2, 3};
  ReferenceProblem problem;
  problem.batch = 1;
  problem.channels = 2;
  problem.slice_len = 3;
  problem.x = &x;
  const ReferenceResult result = instance_norm_reference(problem);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(result.y[i]));
  for (int i = 3; i < 6; ++i) EXPECT_FALSE(std::isnan(result.y[i]));
}

TEST(Oracle, BackwardByHand) {
  // One slice {1, 2, 3, 4}: mean 2.5, biased var 1.25; eps 0; weight 2; dy = {1, 0, 0, 0}.
  const std::vector<double> x = {1, 2, 3, 4};
  const std::vector<double> dy = {1, 0, 0, 0};
  const std::vector<double> weight = {2.0};
  BackwardProblem problem;
  problem.batch = 1;
  problem.channels = 1;
  problem.slice_len = 4;
  problem.eps = 0.0;
  problem.x = &x;
  problem.dy = &dy;
  problem.weight = &weight;
  const BackwardResult result = instance_norm_backward_reference(problem);
  const double rstd = 1.0 / std::sqrt(1.25);
  const double xhat0 = -1.5 * rstd;
  EXPECT_DOUBLE_EQ(result.dbias[0], 1.0);
  EXPECT_DOUBLE_EQ(result.dweight[0], xhat0);
  // dx_i = rstd * w * (dy_i - 1/4 - xhat_i * xhat0 / 4)
  for (int i = 0; i < 4; ++i) {
    const double xhat = (x[i] - 2.5) * rstd;
    EXPECT_NEAR(result.dx[i], rstd * 2.0 * (dy[i] - 0.25 - xhat * xhat0 / 4), 1e-15);
  }
}

// L = sum(y * dy) over the forward oracle; its gradient by central differences in x, weight and
// bias must match the backward oracle: InstanceNorm in train mode and in eval mode with running
// stats, GroupNorm with two groups of two channels and with one group of four, each with each
// activation (the seed's data puts no z within h of relu's kink).
TEST(Oracle, BackwardMatchesCentralDifferencesOfTheForward) {
  struct Mode {
    bool use_input_stats;
    int64_t groups;  // 0: InstanceNorm
  };
  for (const Mode mode : {Mode{true, 0}, Mode{false, 0}, Mode{true, 2}, Mode{true, 1}}) {
    const bool use_input_stats = mode.use_input_stats;
    for (const Activation activation : {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu, Activation::kSilu}) {
      const double slope = 0.2;
      std::mt19937_64 rng(7);
      std::normal_distribution<double> normal;
      const int64_t batch = 2, channels = 4, slice_len = 5;
      std::vector<double> x(batch * channels * slice_len), dy(x.size());
      for (double& v : x) v = 3.0 + normal(rng);
      for (double& v : dy) v = normal(rng);
      std::vector<double> weight = {1.5, -0.7, 0.3, 0.9}, bias = {0.1, 0.2, -0.3, 0.05};
      const std::vector<double> running_mean = {2.9, 3.1, 3.0, 2.8}, running_var = {0.8, 1.2, 1.0, 0.9};
      // What the forward and the backward problem share; weight, bias and x are the vectors that
      // central() perturbs in place.
      const auto describe = [&](auto* p) {
        p->batch = batch;
        p->channels = channels;
        p->slice_len = slice_len;
        p->groups = mode.groups;
        p->x = &x;
        p->weight = &weight;
        p->bias = &bias;
        p->use_input_stats = use_input_stats;
        p->activation = activation;
        p->negative_slope = slope;
        if (!use_input_stats) {
          p->running_mean = &running_mean;
          p->running_var = &running_var;
        }
      };
      auto loss = [&]() {
        ReferenceProblem forward;
        describe(&forward);
        const ReferenceResult y = instance_norm_reference(forward);
        long double sum = 0;
        for (std::size_t i = 0; i < x.size(); ++i) sum += y.y[i] * dy[i];
        return static_cast<double>(sum);
      };
      BackwardProblem problem;
      describe(&problem);
      problem.dy = &dy;
      const BackwardResult result = instance_norm_backward_reference(problem);
      const double h = 1e-5;
      auto central = [&](std::vector<double>* v, std::size_t i) {
        const double keep = (*v)[i];
        (*v)[i] = keep + h;
        const double up = loss();
        (*v)[i] = keep - h;
        const double down = loss();
        (*v)[i] = keep;
        return (up - down) / (2 * h);
      };
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_NEAR(result.dx[i], central(&x, i), 1e-7) << "dx[" << i << "], train " << use_input_stats << ", groups "
                                                        << mode.groups << ", " << activation_name(activation);
      }
      for (std::size_t c = 0; c < weight.size(); ++c) {
        EXPECT_NEAR(result.dweight[c], central(&weight, c), 1e-7)
            << "dweight[" << c << "], groups " << mode.groups << ", " << activation_name(activation);
        EXPECT_NEAR(result.dbias[c], central(&bias, c), 1e-7)
            << "dbias[" << c << "], groups " << mode.groups << ", " << activation_name(activation);
      }
    }
  }
}

// GroupNorm by hand: one sample of four channels of two elements in two groups; group 0 holds
// channels 0 and 1 (x = 1, 2, 3, 4: mean 2.5, biased variance 1.25), group 1 channels 2 and 3
// (x = 5, 6, 7, 8: mean 6.5); each channel's own weight and bias.
TEST(Oracle, GroupNormByHand) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> weight = {1.0, 2.0, -1.0, 0.5}, bias = {0.0, 1.0, 0.0, -2.0};
  ReferenceProblem p;
  p.batch = 1;
  p.channels = 4;
  p.slice_len = 2;
  p.groups = 2;
  p.eps = 0.0;
  p.x = &x;
  p.weight = &weight;
  p.bias = &bias;
  const ReferenceResult r = instance_norm_reference(p);
  ASSERT_EQ(r.mean.size(), 2u);
  EXPECT_DOUBLE_EQ(r.mean[0], 2.5);
  EXPECT_DOUBLE_EQ(r.mean[1], 6.5);
  const double rstd = 1.0 / std::sqrt(1.25);
  EXPECT_DOUBLE_EQ(r.rstd[0], rstd);
  const double xhat[] = {-1.5 * rstd, -0.5 * rstd, 0.5 * rstd, 1.5 * rstd};
  const std::vector<double> want = {xhat[0],  xhat[1],  2 * xhat[2] + 1,   2 * xhat[3] + 1,
                                    -xhat[0], -xhat[1], 0.5 * xhat[2] - 2, 0.5 * xhat[3] - 2};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r.y[i], want[i], 1e-15) << i;
}

// The activations at points whose values and derivatives are known by hand, NaN included.
TEST(Oracle, ActivationsByHand) {
  EXPECT_EQ(activate(Activation::kRelu, 0.1, -2.0), 0.0);
  EXPECT_EQ(activate(Activation::kRelu, 0.1, 3.0), 3.0);
  EXPECT_TRUE(std::isnan(activate(Activation::kRelu, 0.1, NAN)));
  EXPECT_EQ(activate(Activation::kLeakyRelu, 0.1, -2.0), -0.2);
  EXPECT_DOUBLE_EQ(activate(Activation::kSilu, 0.1, 1.0), 1.0 / (1.0 + std::exp(-1.0)));
  EXPECT_EQ(activate(Activation::kNone, 0.1, -2.0), -2.0);
  // At the kink the derivative is the negative side's, as torch's threshold_backward and
  // leaky_relu_backward give it.
  EXPECT_EQ(activation_gradient(Activation::kRelu, 0.1, 0.0, 5.0), 0.0);
  EXPECT_EQ(activation_gradient(Activation::kLeakyRelu, 0.1, 0.0, 5.0), 0.5);
  EXPECT_EQ(activation_gradient(Activation::kRelu, 0.1, 1e-300, 5.0), 5.0);
  EXPECT_DOUBLE_EQ(activation_gradient(Activation::kSilu, 0.1, 0.0, 2.0), 1.0);  // silu'(0) = 1/2
}

// A gradient's size for tolerances is |dz|, except near SiLU's root (z = -1.2785), where dz cancels
// to 0 and its terms are about 0.44 |dy|.
TEST(Oracle, GradientScales) {
  EXPECT_DOUBLE_EQ(activation_gradient_scale(Activation::kLeakyRelu, 0.1, -2.0, -3.0), 0.3);
  EXPECT_EQ(activation_gradient_scale(Activation::kNone, 0.1, -2.0, -3.0), 3.0);
  const double root = -1.2784645;
  EXPECT_LT(std::fabs(activation_gradient(Activation::kSilu, 0.1, root, 1.0)), 1e-7);
  EXPECT_NEAR(activation_gradient_scale(Activation::kSilu, 0.1, root, -1.0), 0.436, 0.001);
  for (const double z : {-30.0, -5.0, 0.0, 2.0, 30.0}) {  // away from it, within 2.2x of |dz|
    const double dz = std::fabs(activation_gradient(Activation::kSilu, 0.1, z, 2.0));
    EXPECT_GE(activation_gradient_scale(Activation::kSilu, 0.1, z, 2.0), dz) << z;
    EXPECT_LE(activation_gradient_scale(Activation::kSilu, 0.1, z, 2.0), 2.2 * dz) << z;
  }
}

}  // namespace
}  // namespace inorm::testing

namespace inorm::testing {
namespace {

// A float16 dx of 7.2e-7 is a subnormal (steps of 2^-24 = 6e-8): rounded correctly it is 4% off,
// far beyond float16's relative bound; the tolerance's underflow term allows that one step, and
// not two (GpuBackward.EvalModeWithRunningStats drew such a value, seed 1917580342).
TEST(Compare, AllowsTheOutputsSubnormalStep) {
  const double want = 7.23107e-07;
  const double step = std::ldexp(1.0, -24);
  const double rounded = std::nearbyint(want / step) * step;
  const Tolerance tolerance = output_tolerance(DType::kFloat16);
  EXPECT_TRUE(compare_scaled({rounded}, {want}, {want}, 1, tolerance).ok());
  EXPECT_FALSE(compare_scaled({rounded - 2 * step}, {want}, {want}, 1, tolerance).ok());
  EXPECT_FALSE(compare({1.0 + 5e-3}, {1.0}, tolerance).ok());  // normal values keep their bound
}

// A float16 dweight of 143080 is inf (float16's largest value is 65504): the kernel's inf matches
// it, and not a want of the other sign or one well inside the range (GpuRandom drew such a case,
// seed 191078601 case 290).
TEST(Compare, AllowsOverflowToInfinity) {
  const Tolerance tolerance = output_tolerance(DType::kFloat16);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(compare({inf}, {143080.0}, tolerance).ok());
  EXPECT_TRUE(compare({-inf}, {-65519.0}, tolerance).ok());  // rounds to -65504, or past it within the bound
  EXPECT_FALSE(compare({-inf}, {143080.0}, tolerance).ok());
  EXPECT_FALSE(compare({inf}, {60000.0}, tolerance).ok());
  EXPECT_TRUE(compare({inf}, {inf}, tolerance).ok());
  EXPECT_FALSE(compare({inf}, {1e38}, output_tolerance(DType::kFloat32)).ok());
}

}  // namespace
}  // namespace inorm::testing
