// GPU tests: every dtype x edge shapes, offset data, NaN, misaligned views, in-place, running
// stats, eval mode, bitwise repeatability, every path forced onto odd shapes, and every planner
// boundary. Each case is checked in full by run_case (case_runner.h). Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "case_runner.h"
#include "testing/device_data.h"
#include "expect_case.h"
#include "config.h"
#include "plan_internal.h"

namespace inorm::testing {
namespace {

// Shapes that land on each path (and each shared_resident regime) with the planner's choice
// for float32; other dtypes may land elsewhere, which the planner tests pin down.
const std::vector<Shape>& one_shape_per_path() {
  static const std::vector<Shape> shapes = {
      {"group_registers", {64, 32, 16, 16}},
      {"shared_resident, one CTA per slice", {4, 8, 63, 65}},
      {"shared_resident, CTAs share a slice, more slices than groups", {40, 4, 256, 256}},
      {"shared_resident, 16 CTAs share each of two slices", {1, 2, 600, 1000}},
      {"split_pipelined, two slices too large for the chip", {1, 2, 1100, 1000}},
      {"split_pipelined, one slice too large for the chip", {1, 1, 1100, 1000}},
  };
  return shapes;
}

TEST(GpuForward, EdgeShapesEveryDtype) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : edge_shapes()) {
      Case c;
      c.shape = s.shape;
      c.dtype = dtype;
      c.affine = true;
      c.param_dtype = dtype;  // like a torch module of that dtype
      c.running = Running::kUpdate;
      expect_passes(c, s.why);
    }
  }
}

// Data far from zero keeps its digits. With 1e4 + randn also a shift far from the mean: slice 1
// starts with a 0, so the squares around that first element (about 1e8 an element) are 1e8 times
// those around the mean in the chunks without the 0: past forward_op.cuh kOnePassMaxSquares, the
// slice's chunks take the second pass (with their CTA's or warp's other slices), the other slices'
// the one pass.
TEST(GpuForward, OffsetDataKeepsItsDigits) {
  INORM_REQUIRE_GPU();
  for (const char* data : {"1000 + randn", "1e4 + randn"}) {
    for (DType dtype : kAllDtypes) {
      for (const Shape& s : one_shape_per_path()) {
        Case c;
        c.shape = s.shape;
        c.dtype = dtype;
        ASSERT_TRUE(parse_data_spec(data, &c.data).ok());
        expect_passes(c, std::string(s.why) + ", " + data);
        if (c.data.offset < 1e4) continue;
        c.zero_start_slice = s.shape[0] * s.shape[1] > 1 ? 1 : 0;
        expect_passes(c, std::string(s.why) + ", slice " + std::to_string(c.zero_start_slice) + " starts with 0 amid " +
                             data);
      }
    }
  }
}

TEST(GpuForward, NanStaysInItsSlice) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : one_shape_per_path()) {
      Case c;
      c.shape = s.shape;
      c.dtype = dtype;
      // The last slice but at most slice 1 gets a NaN (mean and rstd too); every other slice exact.
      c.nan_slice = s.shape[0] * s.shape[1] > 1 ? 1 : 0;
      expect_passes(c, std::string(s.why) + ", NaN in slice " + std::to_string(c.nan_slice));
    }
  }
}

TEST(GpuForward, MisalignedViews) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : one_shape_per_path()) {
      Case c;
      c.shape = s.shape;
      c.dtype = dtype;
      c.x_offset = 1;  // x is a view offset by one element; y is a fresh, aligned tensor
      expect_passes(c, std::string(s.why) + ", x offset by one element");
      c.y_offset = 1;  // both offset alike: vector stores mirror vector loads
      expect_passes(c, std::string(s.why) + ", x and y offset by one element");
      c.x_offset = 3;  // x and y misaligned differently
      expect_passes(c, std::string(s.why) + ", x offset 3, y offset 1");
    }
  }
}

TEST(GpuForward, InPlace) {
  INORM_REQUIRE_GPU();
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    for (const Shape& s : one_shape_per_path()) {
      Case c;
      c.shape = s.shape;
      c.dtype = dtype;
      c.in_place = true;
      c.affine = true;
      expect_passes(c, std::string(s.why) + ", y is x");
    }
  }
}

TEST(GpuForward, RunningStatsAfterOneAndThreeUpdates) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : one_shape_per_path()) {
      for (int updates : {1, 3}) {
        for (DType param_dtype : {DType::kFloat32, dtype}) {
          Case c;
          c.shape = s.shape;
          c.dtype = dtype;
          c.affine = true;
          c.param_dtype = param_dtype;
          c.running = Running::kUpdate;
          c.updates = updates;
          expect_passes(c, std::string(s.why) + ", " + std::to_string(updates) + " running-stat updates");
        }
      }
    }
  }
}

// The running-stat update's channel reduction runs a warp a channel up to a batch of 32 and 256
// threads past it (kernels/channel_reduce.cu): both sides of that boundary.
TEST(GpuForward, RunningStatsEitherSideOfBatch32) {
  INORM_REQUIRE_GPU();
  for (int64_t batch : {32, 33}) {
    Case c;
    c.shape = {batch, 8, 17, 19};
    c.affine = true;
    c.running = Running::kUpdate;
    expect_passes(c, "batch " + std::to_string(batch));
  }
}

TEST(GpuForward, WeightWithoutBias) {
  INORM_REQUIRE_GPU();
  Case c;
  c.shape = {4, 8, 63, 65};
  c.affine = true;
  c.weight_only = true;
  expect_passes(c, "weight given, bias null");
}

TEST(GpuForward, EvalModeWithRunningStats) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    Case c;
    c.dtype = dtype;
    c.running = Running::kEval;
    c.affine = true;
    c.param_dtype = dtype;
    c.shape = {4, 3, 1};  // S=1: valid only in eval mode with running stats
    c.expect_path = Path::kElementwiseEval;
    expect_passes(c, "eval, S=1");
    c.shape = {5, 7, 4097};  // channel index wraps many times inside the grid-stride loop
    c.x_offset = 1;
    expect_passes(c, "eval, S=4097, x offset by one");
    c.shape = {3000, 700, 1};  // 2.1M slices: channel tracking with a stride wider than C
    c.x_offset = 0;
    expect_passes(c, "eval, 2.1M slices of one element");
  }
}

TEST(GpuForward, MillionsOfSlices) {
  INORM_REQUIRE_GPU();
  Case c;
  c.shape = {4096, 256, 3};  // N*C = 1M slices of 3
  c.affine = true;
  c.running = Running::kUpdate;
  expect_passes(c, "a million slices");
}

TEST(GpuForward, BitwiseRepeatable) {
  INORM_REQUIRE_GPU();
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    for (const Shape& s : one_shape_per_path()) {
      Case c;
      c.shape = s.shape;
      c.dtype = dtype;
      c.bitwise_repeats = 3;
      ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
      expect_passes(c, std::string(s.why) + ", three runs, same bits");
    }
  }
}

// Every path on shapes it would not be chosen for: odd S, ragged chunks, groups that do not
// divide the slice, CTAs of a group with no data at all (S=100 over 12 and 16 CTAs).
TEST(GpuForward, EveryPathForced) {
  INORM_REQUIRE_GPU();
  const std::vector<Shape> shapes = {
      {"S=4097", {2, 3, 4097}}, {"127x129", {2, 3, 127, 129}}, {"S=100", {3, 2, 100}}};
  expect_every_forced_plan_passes(Pass::kForward, shapes);
}

// eps = 0 on constant slices: the variance is exactly 0, rstd is +inf and every y is NaN, as PyTorch
// gives (0 * inf). Any rounding in the mean would leave a tiny variance and finite output instead,
// so every path is tried: the planner's choice on one shape per path, and every forced plan.
TEST(GpuForward, ConstantSlicesWithZeroEpsAreNan) {
  INORM_REQUIRE_GPU();
  struct Run {
    std::string why;
    Case c;  // its shape and options
  };
  const auto run_of = [](std::string why, std::vector<int64_t> shape, PlanOptions options) {
    Run run{std::move(why), {}};
    run.c.shape = std::move(shape);
    run.c.options = options;
    return run;
  };
  std::vector<Run> runs;
  for (const Shape& s : one_shape_per_path()) runs.push_back(run_of(s.why, s.shape, {}));
  runs.push_back(run_of("group_registers, S=2", {3, 5, 2}, {}));
  for (const ForcedPlan& f : forced_plans()) runs.push_back(run_of(f.describe(), {2, 3, 4097}, f.options()));
  // Values whose sum over a slice rounds (0.1, 1000.3 and -7.77e-3 are not binary fractions), and 0.
  const double constants[] = {0.1, 1000.3, -7.77e-3, 0.0};
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat64}) {
    for (Run& run : runs) {
      run.c.dtype = dtype;
      ForwardParams p;
      set_shape(run.c, &p);
      p.eps = 0.0;
      const int64_t slices = p.batch * p.channels;
      const int64_t len = detail::slice_len_of(p);
      std::vector<double> host(static_cast<std::size_t>(slices * len));
      for (int64_t s = 0; s < slices; ++s) {
        std::fill(host.begin() + s * len, host.begin() + (s + 1) * len, constants[s % 4]);
      }
      const std::size_t stats_bytes = static_cast<std::size_t>(slices) * dtype_size(stats_dtype(dtype));
      DeviceBuffer x, y, mean, rstd;
      ASSERT_TRUE(x.allocate(host.size() * dtype_size(dtype)).ok());
      ASSERT_TRUE(y.allocate(host.size() * dtype_size(dtype)).ok());
      ASSERT_TRUE(mean.allocate(stats_bytes).ok());
      ASSERT_TRUE(rstd.allocate(stats_bytes).ok());
      ASSERT_TRUE(copy_from_host(host, dtype, x.get()).ok());
      ASSERT_TRUE(poison(y.get(), y.bytes()).ok());
      p.x = x.get();
      p.y = y.get();
      p.mean = mean.get();
      p.rstd = rstd.get();
      Plan plan;
      ASSERT_TRUE(plan_forward(p, &plan, run.c.options).ok()) << run.why;
      DeviceBuffer workspace;
      ASSERT_TRUE(workspace.allocate(plan.workspace_bytes).ok());
      ASSERT_TRUE(launch_forward(plan, p, workspace.get(), nullptr).ok()) << run.why;
      ASSERT_TRUE(synchronize("forward").ok()) << run.why;
      std::vector<double> host_y, host_mean, host_rstd, rounded;
      ASSERT_TRUE(copy_to_host(y.get(), dtype, 0, static_cast<int64_t>(host.size()), &host_y).ok());
      ASSERT_TRUE(copy_to_host(mean.get(), stats_dtype(dtype), 0, slices, &host_mean).ok());
      ASSERT_TRUE(copy_to_host(rstd.get(), stats_dtype(dtype), 0, slices, &host_rstd).ok());
      ASSERT_TRUE(copy_to_host(x.get(), dtype, 0, static_cast<int64_t>(host.size()), &rounded).ok());
      int64_t finite = 0;
      for (double v : host_y) finite += !std::isnan(v);
      EXPECT_EQ(finite, 0) << run.why << " " << dtype_name(dtype) << " [" << plan.describe() << "]: y not NaN";
      for (int64_t s = 0; s < slices; ++s) {
        EXPECT_EQ(host_mean[s], rounded[s * len]) << run.why << " " << dtype_name(dtype) << " slice " << s;
        EXPECT_TRUE(std::isinf(host_rstd[s]) && host_rstd[s] > 0)
            << run.why << " " << dtype_name(dtype) << " [" << plan.describe() << "] slice " << s << " rstd " << host_rstd[s];
      }
    }
  }
}

// Eval mode with a running variance of 0 and eps = 0: rstd is +inf, so y = (x - running_mean) * inf
// * weight + bias is +-inf where x differs from the mean and NaN where it equals it, as PyTorch
// gives. The apply folds the mean's low part into the shift (common.cuh SliceAffine::of_parts),
// which must leave the bias alone here (-0 * inf would make every y NaN). NCHW and channels_last,
// each dtype; x is -2, -1, ..., 2 around a mean of 0 (and 0.5 for a negative weight), every value
// exact in every dtype.
TEST(GpuForward, EvalWithZeroVarianceAndEpsIsInfinite) {
  INORM_REQUIRE_GPU();
  for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast}) {
    for (DType dtype : kAllDtypes) {
      const int64_t batch = 2, channels = 2, len = 5;
      ForwardParams p;
      p.dtype = dtype;
      p.layout = layout;
      p.batch = batch;
      p.channels = channels;
      p.spatial_rank = 1;
      p.spatial[0] = len;
      p.eps = 0.0;
      p.use_input_stats = false;
      const std::vector<double> mean = {0.0, 0.5}, var = {0.0, 0.0}, weight = {1.0, -2.0}, bias = {0.25, 0.0};
      std::vector<double> host(static_cast<std::size_t>(batch * channels * len));
      // Element (n, c, s) at its layout's place: NCHW n c s; channels_last n s c.
      const auto at = [&](int64_t n, int64_t c, int64_t s) {
        return static_cast<std::size_t>(layout == Layout::kChannelsLast ? (n * len + s) * channels + c
                                                                        : (n * channels + c) * len + s);
      };
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t s = 0; s < len; ++s) host[at(n, c, s)] = mean[c] + static_cast<double>(s - 2);
        }
      }
      DeviceBuffer x, y, running_mean, running_var, w, b;
      ASSERT_TRUE(x.allocate(host.size() * dtype_size(dtype)).ok());
      ASSERT_TRUE(y.allocate(host.size() * dtype_size(dtype)).ok());
      for (DeviceBuffer* param : {&running_mean, &running_var, &w, &b}) {
        ASSERT_TRUE(param->allocate(channels * sizeof(float)).ok());
      }
      ASSERT_TRUE(copy_from_host(host, dtype, x.get()).ok());
      ASSERT_TRUE(copy_from_host(mean, DType::kFloat32, running_mean.get()).ok());
      ASSERT_TRUE(copy_from_host(var, DType::kFloat32, running_var.get()).ok());
      ASSERT_TRUE(copy_from_host(weight, DType::kFloat32, w.get()).ok());
      ASSERT_TRUE(copy_from_host(bias, DType::kFloat32, b.get()).ok());
      ASSERT_TRUE(poison(y.get(), y.bytes()).ok());
      p.x = x.get();
      p.y = y.get();
      p.running_mean = running_mean.get();
      p.running_var = running_var.get();
      p.weight = w.get();
      p.bias = b.get();
      Plan plan;
      ASSERT_TRUE(plan_forward(p, &plan).ok());
      ASSERT_TRUE(launch_forward(plan, p, nullptr, nullptr).ok());
      ASSERT_TRUE(synchronize("forward").ok());
      std::vector<double> host_y;
      ASSERT_TRUE(copy_to_host(y.get(), dtype, 0, static_cast<int64_t>(host.size()), &host_y).ok());
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t s = 0; s < len; ++s) {
            const double v = host_y[at(n, c, s)];
            const std::string where = std::string(dtype_name(dtype)) +
                                      (layout == Layout::kChannelsLast ? " channels_last (" : " (") +
                                      std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(s) +
                                      "): " + std::to_string(v) + " [" + plan.describe() + "]";
            if (s == 2) {
              EXPECT_TRUE(std::isnan(v)) << where;  // 0 * inf
            } else {
              EXPECT_TRUE(std::isinf(v) && (v > 0) == ((s > 2) == (weight[c] > 0))) << where;
            }
          }
        }
      }
    }
  }
}

// The planner's steady plans (chunks of at most 64 KiB, about 192 KiB of them per SM, two or more
// rounds of slices per CTA), which the seed-sized cases take: whole 64 KiB chunks, ragged chunks
// of a misaligned view, and 32 KiB slices six CTAs to an SM. From three rounds on, the groups take
// their slices in order from the counter (a cluster's first CTA sends each to its peers; a group
// of one reads its own), below that they stride; both walks of both kinds of group are here, and
// the in-order ones run again in place and three times for the same bits (which group takes
// which slice differs from run to run).
TEST(GpuForward, SteadyPlans) {
  INORM_REQUIRE_GPU();
  struct Steady {
    const char* why;
    std::vector<int64_t> shape;
    DType dtype;
    int64_t offset;
    int ctas_per_slice;
    int ctas_per_sm;
    Exchange exchange;
    bool in_order;
  };
  const Steady cases[] = {
      {"two 64 KiB chunks a slice, three CTAs per SM, 2.02 rounds", {400, 1, 65536}, DType::kBFloat16, 0, 2, 3,
       Exchange::kCluster, false},
      {"the same, 3.03 rounds", {600, 1, 65536}, DType::kBFloat16, 0, 2, 3, Exchange::kCluster, true},
      {"four ragged chunks of a misaligned view, 5 rounds", {500, 1, 49157}, DType::kFloat32, 1, 4, 3,
       Exchange::kCluster, true},
      {"one 32 KiB slice a CTA, six CTAs per SM, 2.02 rounds", {1600, 1, 16384}, DType::kFloat16, 0, 1, 6,
       Exchange::kNone, false},
      {"the same, 3.03 rounds of a misaligned view", {2400, 1, 16384}, DType::kFloat16, 1, 1, 6, Exchange::kNone,
       true},
      {"2 MiB ragged slices of a misaligned view: 33 CTAs through L2, three per SM", {30, 1, 524291},
       DType::kFloat32, 1, 33, 3, Exchange::kGlobal, false},
  };
  for (const Steady& s : cases) {
    Case c;
    c.shape = s.shape;
    c.dtype = s.dtype;
    c.affine = true;
    c.x_offset = s.offset;
    c.y_offset = s.offset;
    ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
    // The planner's forward runs groups this wide split_pipelined (config.h kForwardSplitMinGroup).
    if (s.ctas_per_slice >= detail::kForwardSplitMinGroup) c.options.force_path = Path::kSharedResident;
    c.expect_path = Path::kSharedResident;
    c.expect_ctas_per_slice = s.ctas_per_slice;
    c.expect_ctas_per_sm = s.ctas_per_sm;
    c.expect_exchange = s.exchange;
    c.expect_in_order = s.in_order;
    expect_passes(c, s.why);
    if (s.in_order) expect_passes_in_place_and_repeated(c, s.why);
  }
}

// Register parts (planner.cpp plan_shared): slices wider than eight 64 KiB chunks held by at most
// eight CTAs at two per SM (16 for float32 and float64), the end of each chunk in registers (the
// wide part where no group of narrow ones holds the slice), and the slices one step past either
// end, which have none. Offset data, affine, each case also in place and three times with the same
// bits.
TEST(GpuForward, RegisterParts) {
  INORM_REQUIRE_GPU();
  DeviceLimits limits;
  ASSERT_TRUE(query_device_limits(0, &limits).ok());
  const int64_t share = detail::shared_sm_share(limits, detail::kSharedRegisterCtasPerSm) - 16;
  const auto chunk_bytes = [&](int64_t register_bytes) {
    return (share + register_bytes) / detail::kChunkAlignBytes * detail::kChunkAlignBytes;
  };
  const int64_t longest = chunk_bytes(detail::kSharedRegisterBytes);
  const int64_t longest_wide = chunk_bytes(detail::kSharedWideRegisterBytes);
  struct Wide {
    const char* why;
    std::vector<int64_t> shape;
    DType dtype;
    int64_t max_groups;
    bool early;
    bool registers = true;
    bool wide = false;
    int register_vecs = 0;  // PlanOptions::force_register_vecs
  };
  const Wide cases[] = {
      // The boundary below: eight 64 KiB chunks at three per SM, no register part.
      {"512 KiB slices", {200, 1, 131072}, DType::kFloat32, 0, false, false},
      // The smallest slice with a register part: four chunks; the last one's register part is
      // partly empty (7684 of 8192 values). 3.2 rounds, in order.
      {"512 KiB + 16 B slices, four CTAs a slice", {200, 1, 131076}, DType::kFloat32, 0, false},
      // Eight of the longest chunks, every register part full. 2.03 rounds of 30 clusters of 8
      // (fewer than two rounds take no steady plan), strided.
      {"eight of the longest chunks", {61, 1, 8 * longest / 4}, DType::kFloat32, 0, false},
      // Wider clusters, for the plain forward of 4- and 8-byte elements only (config.h
      // shared_register_part_max_group): nine chunks, the last register part partly empty.
      {"16 B more: nine CTAs a slice", {61, 1, 8 * longest / 4 + 4}, DType::kFloat32, 0, false},
      // The largest with narrow parts: 16 of the longest chunks; 2.4 rounds of the 14 clusters of
      // 16 an H200 holds. 16 B more takes wide parts (15 CTAs), up to 16 of their longest chunks.
      {"the largest narrow register-part slice", {33, 1, 16 * longest / 4}, DType::kFloat32, 0, false},
      {"16 B more: wide register parts", {33, 1, 16 * longest / 4 + 4}, DType::kFloat32, 0, false, true, true},
      {"the largest wide register-part slice", {33, 1, 16 * longest_wide / 4}, DType::kFloat32, 0, false, true,
       true},
      {"16 B more: no register part", {33, 1, 16 * longest_wide / 4 + 4}, DType::kFloat32, 0, false, false},
      {"2 MiB float64 slices", {33, 1, 262144}, DType::kFloat64, 0, false},
      // 16-bit elements stop at eight chunks, narrow parts then wide ones.
      {"bf16, 16 B past eight narrow chunks: wide register parts", {33, 1, 8 * longest / 2 + 8}, DType::kBFloat16, 0,
       false, true, true},
      {"fp16, eight of the longest wide chunks", {33, 1, 8 * longest_wide / 2}, DType::kFloat16, 0, false, true,
       true},
      {"bf16, 16 B past eight wide chunks: no register part", {33, 1, 8 * longest_wide / 2 + 8}, DType::kBFloat16, 0,
       false, false},
      {"1 MiB bf16 slices, 3.3 rounds", {100, 1, 524288}, DType::kBFloat16, 0, false},
      // Wide parts forced where narrow ones hold the slice (seven CTAs instead of eight).
      {"1 MiB fp32 slices, wide parts forced", {61, 1, 262144}, DType::kFloat32, 0, false, true, true,
       detail::kSharedWideRegisterVecs},
      {"1 MiB float64 slices, wide parts forced", {61, 1, 131072}, DType::kFloat64, 0, false, true, true,
       detail::kSharedWideRegisterVecs},
      {"1 MiB float64 slices, 2.03 rounds", {61, 1, 131072}, DType::kFloat64, 0, false},
      // The seed's plan, its grid cut to one cluster so that 70 slices make 70 rounds: each next
      // slice taken before the current one is normalized.
      {"1 MiB fp32 slices, one cluster, 70 rounds", {70, 1, 262144}, DType::kFloat32, 1, true},
  };
  for (const Wide& w : cases) {
    Case c;
    c.shape = w.shape;
    c.dtype = w.dtype;
    c.affine = true;
    ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
    c.max_groups = w.max_groups;
    // shared_resident's plan: where it needs 16 CTAs a slice or more without register parts, the
    // planner's forward would run split_pipelined (config.h kForwardSplitMinGroup).
    c.options.force_path = Path::kSharedResident;
    c.expect_path = Path::kSharedResident;
    if (w.registers) {
      c.expect_ctas_per_sm = detail::kSharedRegisterCtasPerSm;
      c.expect_exchange = Exchange::kCluster;
    }
    c.options.force_register_vecs = w.register_vecs;
    c.expect_registers = w.registers;
    c.expect_wide_registers = w.wide;
    c.expect_early = w.early;
    expect_passes(c, w.why);
    expect_passes_in_place_and_repeated(c, w.why);
  }
}

// Slices no one cluster holds spanning clusters of two, at the rounds boundary (expect_case.h).
TEST(GpuForward, SlicesSpanPairs) {
  INORM_REQUIRE_GPU();
  expect_slices_span_pairs(Pass::kForward);
}

// group_registers with 16 and 64 lanes a slice and CTAs of one or two warps, forced (expect_case.h).
TEST(GpuForward, ForcedLaneGroups) {
  INORM_REQUIRE_GPU();
  expect_forced_lane_groups_pass(Pass::kForward);
}

// split_pipelined's order and resident parts (expect_case.h).
TEST(GpuForward, SplitPipelinedOrder) {
  INORM_REQUIRE_GPU();
  expect_split_pipelined_orders_pass(Pass::kForward);
}

// A cluster must fit in one GPC, so fewer clusters may be resident than the SM slots hold. The
// planner counts rounds with the clusters the device reports: by slots, 66 clusters of 4 at two
// per SM would hold the 64 slices of 1x64x256x256 fp32 in one round, but an H200 holds 62, which
// would leave two slices for a second round. The plan the device gets holds them all in one.
TEST(GpuForward, ResidentClustersSetTheRounds) {
  INORM_REQUIRE_GPU();
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  DeviceLimits limits;
  ASSERT_TRUE(query_device_limits(device, &limits).ok());
  const Status filled = detail::fill_resident_clusters(&limits);
  ASSERT_TRUE(filled.ok()) << filled.message();
  std::string table;
  for (int c = 2; c <= detail::kSharedMaxCtasPerSm; ++c) {
    table += "\n  " + std::to_string(c) + " per SM:";
    for (int k = 2; k <= detail::kSharedMaxClusterCtas; ++k) {
      const int clusters = limits.resident_clusters[c][k];
      table += " " + std::to_string(clusters);
      EXPECT_GT(clusters, 0) << "clusters of " << k << " at " << c << " per SM";
      EXPECT_LE(clusters * k, limits.sm_count * c) << "clusters of " << k << " at " << c << " per SM";
    }
  }
  std::printf("resident clusters of 2..16 CTAs:%s\n", table.c_str());

  Case c;
  c.shape = {1, 64, 256, 256};
  c.affine = true;
  c.expect_path = Path::kSharedResident;
  c.expect_exchange = Exchange::kCluster;
  expect_passes(c, "64 slices of 256 KiB in clusters");
  ForwardParams p;  // the same problem, planned alone: only alignment is read from the pointers
  p.x = reinterpret_cast<void*>(uintptr_t{1} << 32);
  p.y = reinterpret_cast<void*>(uintptr_t{1} << 33);
  p.batch = 1;
  p.channels = 64;
  p.spatial_rank = 2;
  p.spatial[0] = p.spatial[1] = 256;
  Plan plan;
  ASSERT_TRUE(plan_forward(p, &plan).ok());
  EXPECT_GE(plan.grid / plan.ctas_per_slice, 64) << plan.describe();
}

// The largest slice each path takes, and one more, on this device's limits.
TEST(GpuForward, PlannerBoundaries) {
  INORM_REQUIRE_GPU();
  DeviceLimits limits;
  ASSERT_TRUE(query_device_limits(0, &limits).ok());
  for (DType dtype : kAllDtypes) {
    const int64_t vec = 16 / static_cast<int64_t>(dtype_size(dtype));
    const int64_t group_vector_max = largest_group_vector_slice(dtype, 1);
    const int64_t group_scalar_max = 32 * detail::kGroupMaxScalarItems;
    const int64_t shared_max = detail::largest_resident_slice(dtype, 1, limits);
    const int64_t parts_1024 = 1024 * static_cast<int64_t>(detail::split_stage_len(dtype_size(dtype), 1));
    struct Boundary {
      const char* why;
      int64_t slice_len;
      int64_t x_offset;
      Path path;
      int ctas_per_slice;
      Exchange exchange = Exchange::kAuto;  // when set, forced with ctas_per_slice
      int64_t slices = 2;
    };
    const Boundary boundaries[] = {
        {"largest aligned group slice", group_vector_max, 0, Path::kGroupRegisters, 0},
        {"one vector more", group_vector_max + vec, 0, Path::kSharedResident, 1},
        {"largest misaligned group slice", group_scalar_max, 1, Path::kGroupRegisters, 0},
        {"one element more", group_scalar_max + 1, 1, Path::kSharedResident, 1},
        // The planner runs it split_pipelined (config.h kForwardSplitMinGroup); shared_resident's own
        // plan for it, the widest group at two CTAs per SM, forced.
        {"largest shared slice, planned", shared_max, 0, Path::kSplitPipelined, 0},
        {"largest shared slice: the widest group through L2", shared_max, 0, Path::kSharedResident,
         detail::kSharedMaxCtasPerSlice, Exchange::kGlobal},
        // Each CTA alone on its SM with the largest buffer beside the kernel's static shared memory.
        {"largest shared slice: a full cluster of full CTAs", shared_max, 0, Path::kSharedResident,
         detail::kSharedMaxClusterCtas, Exchange::kCluster},
        {"largest shared slice: 16 full CTAs through L2", shared_max, 0, Path::kSharedResident,
         detail::kSharedMaxClusterCtas, Exchange::kGlobal},
        {"one element more: two slices too large for the chip", shared_max + 1, 0, Path::kSplitPipelined, 0},
        // split_pipelined has no largest slice: these check 1024 parts and more.
        {"64 MiB slices: 1024 parts", parts_1024, 0, Path::kSplitPipelined, 0},
        {"one element more: a 1025th part of one element", parts_1024 + 1, 0, Path::kSplitPipelined, 0},
        {"one slice of 1025 parts", parts_1024 + 1, 0, Path::kSplitPipelined, 0, Exchange::kAuto, 1},
    };
    for (const Boundary& b : boundaries) {
      Case c;
      c.shape = {1, b.slices, b.slice_len};
      c.dtype = dtype;
      c.x_offset = b.x_offset;
      c.y_offset = b.x_offset;
      c.affine = true;
      c.expect_path = b.path;
      c.expect_ctas_per_slice = b.ctas_per_slice;
      if (b.exchange != Exchange::kAuto) {
        c.options.force_exchange = b.exchange;
        c.options.force_ctas_per_slice = b.ctas_per_slice;
        c.expect_exchange = b.exchange;
      }
      expect_passes(c, std::string(dtype_name(dtype)) + ": " + b.why + " (S=" + std::to_string(b.slice_len) + ")");
    }
  }
}

}  // namespace
}  // namespace inorm::testing
