// The float64 oracle against values computed by hand.
#include "testing/oracle.h"

#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace inorm::testing
