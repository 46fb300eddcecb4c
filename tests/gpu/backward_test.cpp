// GPU tests of the backward: the forward's matrix (every dtype x edge shapes, offset data, NaN,
// misaligned views, in place, eval mode, bitwise repeats, every path forced onto odd shapes, every
// planner boundary) with dx, dweight and dbias checked in full against the float64 oracle by
// run_case (case_runner.h). Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "case_runner.h"
#include "config.h"
#include "expect_case.h"
#include "plan_internal.h"

namespace inorm::testing {
namespace {

Case backward_case(std::vector<int64_t> shape, DType dtype) {
  Case c;
  c.pass = Pass::kBackward;
  c.shape = std::move(shape);
  c.dtype = dtype;
  c.affine = true;
  return c;
}

// Shapes that land on each path for float32 in the backward, which holds x and dy on chip: its
// boundaries are half the forward's.
const std::vector<Shape>& one_shape_per_path() {
  static const std::vector<Shape> shapes = {
      {"group_registers", {64, 32, 16, 16}},
      {"shared_resident, one CTA per slice", {4, 8, 63, 65}},
      {"shared_resident, CTAs share a slice, more slices than groups", {40, 4, 256, 256}},
      {"shared_resident, a wide group shares each of two 1.6 MB slices", {1, 2, 400, 1000}},
      {"split_pipelined, two slices too large for the chip", {1, 2, 600, 1000}},
      {"split_pipelined, one slice too large for the chip", {1, 1, 600, 1000}},
  };
  return shapes;
}

TEST(GpuBackward, EdgeShapesEveryDtype) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : edge_shapes()) {
      Case c = backward_case(s.shape, dtype);
      c.param_dtype = dtype;  // like a torch module of that dtype
      expect_passes(c, s.why);
    }
  }
}

// x far from zero: the forward's float32 mean misses up to half an ulp of 1e4 (5e-4), which the
// backward's residual r recovers; without it dweight would be off by 5e-4 relative.
TEST(GpuBackward, OffsetDataKeepsItsDigits) {
  INORM_REQUIRE_GPU();
  for (const char* data : {"1000 + randn", "1e4 + randn"}) {
    for (DType dtype : kAllDtypes) {
      for (const Shape& s : one_shape_per_path()) {
        Case c = backward_case(s.shape, dtype);
        ASSERT_TRUE(parse_data_spec(data, &c.data).ok());
        expect_passes(c, std::string(s.why) + ", " + data);
      }
    }
  }
}

// A NaN in x: that slice's dx and its channel's dweight are NaN (dbias, a sum of dy, is not);
// every other slice exact.
TEST(GpuBackward, NanStaysInItsSlice) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : one_shape_per_path()) {
      Case c = backward_case(s.shape, dtype);
      c.nan_slice = s.shape[0] * s.shape[1] > 1 ? 1 : 0;
      expect_passes(c, std::string(s.why) + ", NaN in slice " + std::to_string(c.nan_slice));
    }
  }
}

TEST(GpuBackward, MisalignedViews) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : one_shape_per_path()) {
      Case c = backward_case(s.shape, dtype);
      c.x_offset = 1;  // x a view offset by one element; dy and dx fresh and aligned
      expect_passes(c, std::string(s.why) + ", x offset by one element");
      c.y_offset = 1;  // every tensor offset alike: vector accesses line up
      expect_passes(c, std::string(s.why) + ", x, dy and dx offset by one element");
      c.dx_offset = 3;  // dx misaligned differently: scalar access throughout
      expect_passes(c, std::string(s.why) + ", x and dy offset 1, dx offset 3");
    }
  }
}

// dx written over dy, as autograd may hand over a gradient buffer it no longer needs.
TEST(GpuBackward, InPlaceOverDy) {
  INORM_REQUIRE_GPU();
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    for (const Shape& s : one_shape_per_path()) {
      Case c = backward_case(s.shape, dtype);
      c.in_place = true;
      expect_passes(c, std::string(s.why) + ", dx is dy");
    }
  }
}

// Eval mode with running stats: dx = dy * w * rstd elementwise, and the weight gradients still
// reduce over every slice. S = 1 is valid here.
TEST(GpuBackward, EvalModeWithRunningStats) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 3, 1}, std::vector<int64_t>{5, 7, 4097},
                                              std::vector<int64_t>{3000, 70, 1}, std::vector<int64_t>{2, 3, 512, 512}}) {
      Case c = backward_case(shape, dtype);
      c.param_dtype = dtype;
      c.running = Running::kEval;
      expect_passes(c, "eval mode");
    }
  }
}

// Only the gradients asked for: dx alone, the weight gradients alone (no dx), dweight without
// dbias (weight, no bias), and a weight of 1 (no affine) with dx only and with its gradients.
TEST(GpuBackward, OnlyTheGradientsAskedFor) {
  INORM_REQUIRE_GPU();
  for (const Shape& s : one_shape_per_path()) {
    Case c = backward_case(s.shape, DType::kFloat32);
    c.want_weight_grads = false;
    expect_passes(c, std::string(s.why) + ", dx only");
    c.want_weight_grads = true;
    c.want_dx = false;
    expect_passes(c, std::string(s.why) + ", dweight and dbias only");
    c.want_dx = true;
    c.weight_only = true;
    expect_passes(c, std::string(s.why) + ", dx and dweight");
    c.affine = false;
    expect_passes(c, std::string(s.why) + ", no affine");
    c.weight_only = false;
    c.weight_grads_without_affine = true;
    expect_passes(c, std::string(s.why) + ", no affine, dweight and dbias");
  }
}

// dweight and dbias: the channel reduction runs a warp a channel up to a batch of 32 and 256 threads
// past it (kernels/channel_reduce.cu), on both sides of that boundary, with InstanceNorm's per-slice
// terms and GroupNorm's per-channel partials (its second branch).
TEST(GpuBackward, WeightGradientsEitherSideOfBatch32) {
  INORM_REQUIRE_GPU();
  for (int64_t batch : {32, 33}) {
    for (int64_t groups : {0, 4}) {
      Case c = backward_case({batch, 8, 17, 19}, DType::kFloat32);
      c.groups = groups;
      expect_passes(c, "batch " + std::to_string(batch) + (groups > 0 ? ", GroupNorm(4)" : ", InstanceNorm"));
    }
  }
}

// Parameters in float32 beside half inputs (autocast's layout), and in the input's dtype.
TEST(GpuBackward, ParamDtypes) {
  INORM_REQUIRE_GPU();
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (DType param_dtype : {DType::kFloat32, dtype}) {
      Case c = backward_case({8, 16, 64, 64}, dtype);
      c.param_dtype = param_dtype;
      expect_passes(c, std::string("params ") + dtype_name(param_dtype));
    }
  }
}

TEST(GpuBackward, BitwiseRepeatable) {
  INORM_REQUIRE_GPU();
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    for (const Shape& s : one_shape_per_path()) {
      Case c = backward_case(s.shape, dtype);
      c.bitwise_repeats = 3;
      ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
      expect_passes(c, std::string(s.why) + ", three runs, same bits");
    }
  }
}

// Every path on shapes it would not be chosen for: odd S, ragged chunks, groups that do not divide
// the slice, CTAs of a group with no data at all (S=100 over 12 and 16 CTAs).
TEST(GpuBackward, EveryPathForced) {
  INORM_REQUIRE_GPU();
  // 61x67 rather than the forward's 127x129: one CTA holds x and dy of it in float64 (256 KiB
  // would not fit).
  const std::vector<Shape> shapes = {
      {"S=4097", {2, 3, 4097}}, {"61x67", {2, 3, 61, 67}}, {"S=100", {3, 2, 100}}};
  expect_every_forced_plan_passes(Pass::kBackward, shapes);
}

// The register plans of the backward (planner.cpp plan_shared): the seed's 1 MiB fp32 slices (2 MiB
// with dy) in clusters of 15 at two per SM, the half seeds' 512 KiB slices in clusters of 8, and the
// boundary below (256 KiB of each input: eight 64 KiB chunks at three per SM, no register part).
// Offset data; each case also in place and three times with the same bits; the grid cut to one
// cluster so that many rounds (in order, early dispatch) run on a small tensor.
TEST(GpuBackward, RegisterParts) {
  INORM_REQUIRE_GPU();
  struct Wide {
    const char* why;
    std::vector<int64_t> shape;
    DType dtype;
    int ctas_per_slice;
    bool registers;
    int64_t max_groups = 0;
  };
  const Wide cases[] = {
      {"256 KiB fp32 slices: 512 KiB on chip, no register part", {200, 1, 65536}, DType::kFloat32, 8, false},
      {"256 KiB + 16 B fp32 slices: the smallest with a register part", {200, 1, 65540}, DType::kFloat32, 0, true},
      {"1 MiB fp32 slices, 15 CTAs each", {40, 1, 262144}, DType::kFloat32, 15, true},
      {"1 MiB fp32 slices, one cluster, 70 rounds", {70, 1, 262144}, DType::kFloat32, 15, true, 1},
      {"512 KiB bf16 slices, 8 CTAs each", {100, 1, 262144}, DType::kBFloat16, 8, true},
      {"512 KiB float64 slices", {61, 1, 65536}, DType::kFloat64, 8, true},
  };
  for (const Wide& w : cases) {
    Case c = backward_case(w.shape, w.dtype);
    ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
    c.max_groups = w.max_groups;
    c.expect_path = Path::kSharedResident;
    c.expect_ctas_per_slice = w.ctas_per_slice;
    if (w.registers) {
      c.expect_ctas_per_sm = detail::kSharedRegisterCtasPerSm;
      c.expect_exchange = Exchange::kCluster;
    }
    c.expect_registers = w.registers;
    expect_passes(c, w.why);
    expect_passes_in_place_and_repeated(c, w.why);
  }
}

// Slices no one cluster holds spanning clusters of two, at the rounds boundary (expect_case.h).
TEST(GpuBackward, SlicesSpanPairs) {
  INORM_REQUIRE_GPU();
  expect_slices_span_pairs(Pass::kBackward);
}

// group_registers with 16 and 64 lanes a slice and CTAs of one or two warps, forced (expect_case.h).
TEST(GpuBackward, ForcedLaneGroups) {
  INORM_REQUIRE_GPU();
  expect_forced_lane_groups_pass(Pass::kBackward);
}

// split_pipelined's order and resident parts (expect_case.h).
TEST(GpuBackward, SplitPipelinedOrder) {
  INORM_REQUIRE_GPU();
  expect_split_pipelined_orders_pass(Pass::kBackward);
}

// The largest slice each path takes in the backward, and one more, on this device's limits.
TEST(GpuBackward, PlannerBoundaries) {
  INORM_REQUIRE_GPU();
  DeviceLimits limits;
  ASSERT_TRUE(query_device_limits(0, &limits).ok());
  for (DType dtype : kAllDtypes) {
    const int elem = static_cast<int>(dtype_size(dtype));
    const int64_t group_vector_max = largest_group_vector_slice(dtype, 2);  // x and dy
    const int64_t shared_max = detail::largest_resident_slice(dtype, 2, limits);
    struct Boundary {
      const char* why;
      int64_t slice_len;
      Path path;
    };
    const Boundary boundaries[] = {
        {"largest aligned group slice", group_vector_max, Path::kGroupRegisters},
        {"largest shared slice", shared_max, Path::kSharedResident},
        {"one element more: two slices too large for the chip", shared_max + 1, Path::kSplitPipelined},
    };
    for (const Boundary& b : boundaries) {
      Case c = backward_case({1, 2, b.slice_len}, dtype);
      c.expect_path = b.path;
      expect_passes(c, std::string(dtype_name(dtype)) + ": " + b.why + " (S=" + std::to_string(b.slice_len) + ")");
    }
    // One vector more than the largest group slice: no longer a group (float64 keeps scalars).
    Case c = backward_case({1, 2, group_vector_max + 16 / elem}, dtype);
    expect_passes(c, std::string(dtype_name(dtype)) + ": one vector past the largest group slice");
  }
}

}  // namespace
}  // namespace inorm::testing
