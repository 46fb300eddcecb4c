// Tensors of more than 2^31 elements: every offset must be 64-bit. float16 keeps them at 4.3 GB.
// The oracle runs on the slices past 2^31 (and on the whole single slice of the second test);
// coverage is checked over all of y.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "case_runner.h"
#include "testing/compare.h"
#include "testing/device_data.h"
#include "testing/oracle.h"

namespace inorm::testing {
namespace {

constexpr int64_t kTwoToThe31 = int64_t{1} << 31;

#define ASSERT_OK(expr)                         \
  do {                                          \
    const Status s_ = (expr);                   \
    ASSERT_TRUE(s_.ok()) << #expr ": " << s_.message(); \
  } while (0)

// float16 bit pattern -> double, for scanning billions of elements quickly.
const std::vector<double>& half_table() {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const uint16_t h = static_cast<uint16_t>(bits);
      t[bits] = element_to_double(reinterpret_cast<const unsigned char*>(&h), DType::kFloat16);
    }
    return t;
  }();
  return table;
}

struct Problem {
  ForwardParams params;
  DeviceBuffer x, y, mean, rstd, workspace;
  int64_t numel = 0;
};

void setup(Problem* p, int64_t batch, int64_t slice_len, uint64_t seed) {
  ForwardParams& params = p->params;
  params.dtype = DType::kFloat16;
  params.batch = batch;
  params.channels = 1;
  params.spatial_rank = 1;
  params.spatial[0] = slice_len;
  p->numel = batch * slice_len;
  ASSERT_OK(p->x.allocate(p->numel * 2));
  ASSERT_OK(p->y.allocate(p->numel * 2));
  ASSERT_OK(p->mean.allocate(batch * 4));
  ASSERT_OK(p->rstd.allocate(batch * 4));
  DataSpec data;
  ASSERT_OK(parse_data_spec("10 + randn", &data));
  ASSERT_OK(fill_random(p->x.get(), DType::kFloat16, p->numel, data, seed));
  ASSERT_OK(poison(p->y.get(), p->y.bytes()));
  params.x = p->x.get();
  params.y = p->y.get();
  params.mean = p->mean.get();
  params.rstd = p->rstd.get();
}

void run(Problem* p, Path expected) {
  Plan plan;
  ASSERT_OK(plan_forward(p->params, &plan));
  EXPECT_EQ(plan.path, expected) << plan.describe();
  ASSERT_OK(p->workspace.allocate(plan.workspace_bytes));
  ASSERT_OK(launch_forward(plan, p->params, p->workspace.get(), nullptr));
  ASSERT_OK(synchronize("forward"));
}

void expect_fully_written(const Problem& p) {
  std::vector<unsigned char> raw;
  ASSERT_OK(copy_raw_to_host(p.y.get(), p.y.bytes(), &raw));
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(raw.data());
  int64_t unwritten = 0;
  for (int64_t i = 0; i < p.numel; ++i) unwritten += bits[i] == 0xFFFF;
  EXPECT_EQ(unwritten, 0) << "elements of y never written";
}

TEST(GpuBigTensor, SlicesPastTwoToThe31InClusters) {
  INORM_REQUIRE_GPU();
  Problem p;
  const int64_t slice_len = 512 * 512;
  const int64_t batch = 8200;  // 2,149,580,800 elements; slices 8192.. start past 2^31
  ASSERT_GT(batch * slice_len, kTwoToThe31);
  const uint64_t seed = std::random_device{}();
  setup(&p, batch, slice_len, seed);
  run(&p, Path::kSharedResident);
  expect_fully_written(p);
  for (int64_t slice : {int64_t{0}, int64_t{8191}, int64_t{8192}, batch - 1}) {
    std::vector<double> x, y, mean, rstd;
    ASSERT_OK(copy_to_host(p.x.get(), DType::kFloat16, slice * slice_len, slice_len, &x));
    ASSERT_OK(copy_to_host(p.y.get(), DType::kFloat16, slice * slice_len, slice_len, &y));
    ASSERT_OK(copy_to_host(p.rstd.get(), DType::kFloat32, slice, 1, &rstd));
    const SliceStats stats = slice_statistics(x.data(), slice_len, p.params.eps);
    std::vector<double> want(slice_len);
    for (int64_t i = 0; i < slice_len; ++i) want[i] = (x[i] - stats.mean) * stats.rstd;
    const Comparison cmp = compare(y, want, output_tolerance(DType::kFloat16));
    EXPECT_TRUE(cmp.ok()) << "slice " << slice << ": " << cmp.describe() << " seed " << seed;
    EXPECT_NEAR(rstd[0], stats.rstd, 2e-6 * stats.rstd) << "slice " << slice;
  }
}

// The backward over the same tensor: the forward's mean and rstd, dy ~ N(0, 1), dx written over
// the forward's output; the oracle on slices on both sides of 2^31 elements.
TEST(GpuBigTensor, BackwardPastTwoToThe31InClusters) {
  INORM_REQUIRE_GPU();
  Problem p;
  const int64_t slice_len = 512 * 512;
  const int64_t batch = 8200;
  const uint64_t seed = std::random_device{}();
  setup(&p, batch, slice_len, seed);
  run(&p, Path::kSharedResident);
  DeviceBuffer dy;
  ASSERT_OK(dy.allocate(p.numel * 2));
  DataSpec normal;
  ASSERT_OK(parse_data_spec("randn", &normal));
  ASSERT_OK(fill_random(dy.get(), DType::kFloat16, p.numel, normal, seed + 1));
  ASSERT_OK(poison(p.y.get(), p.y.bytes()));
  BackwardParams b;
  b.dtype = DType::kFloat16;
  b.batch = batch;
  b.channels = 1;
  b.spatial_rank = 1;
  b.spatial[0] = slice_len;
  b.x = p.x.get();
  b.dy = dy.get();
  b.dx = p.y.get();
  b.mean = p.mean.get();
  b.rstd = p.rstd.get();
  Plan plan;
  ASSERT_OK(plan_backward(b, &plan));
  EXPECT_EQ(plan.path, Path::kSharedResident) << plan.describe();
  DeviceBuffer workspace;
  ASSERT_OK(workspace.allocate(plan.workspace_bytes));
  ASSERT_OK(launch_backward(plan, b, workspace.get(), nullptr));
  ASSERT_OK(synchronize("backward"));
  expect_fully_written(p);
  for (int64_t slice : {int64_t{0}, int64_t{8191}, int64_t{8192}, batch - 1}) {
    std::vector<double> x, dy_host, dx;
    ASSERT_OK(copy_to_host(p.x.get(), DType::kFloat16, slice * slice_len, slice_len, &x));
    ASSERT_OK(copy_to_host(dy.get(), DType::kFloat16, slice * slice_len, slice_len, &dy_host));
    ASSERT_OK(copy_to_host(p.y.get(), DType::kFloat16, slice * slice_len, slice_len, &dx));
    BackwardProblem problem;
    problem.batch = 1;
    problem.channels = 1;
    problem.slice_len = slice_len;
    problem.eps = b.eps;
    problem.x = &x;
    problem.dy = &dy_host;
    const BackwardResult want = instance_norm_backward_reference(problem);
    const Comparison cmp = compare_scaled(dx, want.dx, want.dx_scale, slice_len, output_tolerance(DType::kFloat16));
    EXPECT_TRUE(cmp.ok()) << "slice " << slice << ": " << cmp.describe() << " seed " << seed;
  }
}

// One slice of 65,537 parts on split_pipelined.
TEST(GpuBigTensor, OneSliceLongerThanTwoToThe31) {
  INORM_REQUIRE_GPU();
  Problem p;
  const int64_t slice_len = kTwoToThe31 + 17;  // in-slice offsets past 2^31, a ragged tail
  const uint64_t seed = std::random_device{}();
  setup(&p, 1, slice_len, seed);
  run(&p, Path::kSplitPipelined);
  expect_fully_written(p);

  std::vector<unsigned char> x_raw, y_raw;
  ASSERT_OK(copy_raw_to_host(p.x.get(), p.x.bytes(), &x_raw));
  ASSERT_OK(copy_raw_to_host(p.y.get(), p.y.bytes(), &y_raw));
  const uint16_t* x = reinterpret_cast<const uint16_t*>(x_raw.data());
  const uint16_t* y = reinterpret_cast<const uint16_t*>(y_raw.data());
  const std::vector<double>& table = half_table();
  long double sum = 0;
  for (int64_t i = 0; i < slice_len; ++i) sum += table[x[i]];
  const long double mean = sum / slice_len;
  long double m2 = 0;
  for (int64_t i = 0; i < slice_len; ++i) m2 += (table[x[i]] - mean) * (table[x[i]] - mean);
  const double rstd = 1.0 / std::sqrt(static_cast<double>(m2 / slice_len) + p.params.eps);
  const Tolerance tol = output_tolerance(DType::kFloat16);
  int64_t bad = 0;
  int64_t first_bad = -1;
  for (int64_t i = 0; i < slice_len; ++i) {
    const double want = (table[x[i]] - static_cast<double>(mean)) * rstd;
    if (!(std::fabs(table[y[i]] - want) <= tol.atol + tol.rtol * std::fabs(want))) {
      if (bad++ == 0) first_bad = i;
    }
  }
  EXPECT_EQ(bad, 0) << "first mismatch at " << first_bad << ", seed " << seed;
  std::vector<double> got_rstd;
  ASSERT_OK(copy_to_host(p.rstd.get(), DType::kFloat32, 0, 1, &got_rstd));
  EXPECT_NEAR(got_rstd[0], rstd, 2e-6 * rstd);
}

}  // namespace
}  // namespace inorm::testing
