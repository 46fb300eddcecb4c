// GPU tests of the activations fused into both passes (relu, leaky_relu, silu): y = activation(z)
// in the forward's elementwise pass, dz = dy * activation'(z) in the backward with z recomputed on
// chip, checked in full against the float64 oracle by run_case (case_runner.h): every dtype x the
// edge shapes, offset data, a NaN, in place and bitwise repeats, eval mode, channels_last, no
// affine, every activation in every family. Every kernel family with an activation also runs under
// the sanitizers (sanitize_test.cpp, GpuSanitize.ActivatedPlans). Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "case_runner.h"
#include "expect_case.h"

namespace inorm::testing {
namespace {

// leaky_relu with a slope other than the default, so that the one given is the one used.
constexpr Activation kActivations[] = {Activation::kRelu, Activation::kLeakyRelu, Activation::kSilu};
constexpr double kSlope = 0.2;

Case activated_case(Pass pass, std::vector<int64_t> shape, DType dtype, Activation activation) {
  Case c;
  c.pass = pass;
  c.shape = std::move(shape);
  c.dtype = dtype;
  c.affine = true;  // the bias moves z across the kink
  c.param_dtype = dtype;
  c.activation = activation;
  c.negative_slope = kSlope;
  return c;
}

std::string with(Activation activation, const std::string& why) {
  return std::string(activation_name(activation)) + ": " + why;
}

// Each edge shape with the activations in turn, both passes, every dtype.
TEST(GpuActivation, EdgeShapesEveryDtype) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    int turn = 0;
    for (const Shape& s : edge_shapes()) {
      const Activation activation = kActivations[turn++ % 3];
      for (Pass pass : {Pass::kForward, Pass::kBackward}) {
        expect_passes(activated_case(pass, s.shape, dtype, activation), with(activation, s.why));
      }
    }
  }
}

// x far from zero (float32's mean misses up to 5e-4 of 1e4): z near the kink takes dy = 0 in the
// test (case_runner.cpp zero_dy_at_kinks), everything else is held to the usual tolerances. One
// shape per family of the backward.
TEST(GpuActivation, OffsetData) {
  INORM_REQUIRE_GPU();
  for (const char* data : {"1000 + randn", "1e4 + randn"}) {
    for (Activation activation : kActivations) {
      for (const std::vector<int64_t>& shape :
           {std::vector<int64_t>{64, 32, 16, 16}, {4, 8, 63, 65}, {1, 2, 400, 1000}, {1, 2, 600, 1000}}) {
        for (Pass pass : {Pass::kForward, Pass::kBackward}) {
          Case c = activated_case(pass, shape, DType::kFloat32, activation);
          ASSERT_TRUE(parse_data_spec(data, &c.data).ok());
          expect_passes(c, with(activation, data));
        }
      }
    }
  }
}

// A NaN in x: relu and leaky_relu keep it, as torch's do, and it stays in its slice (its channel's
// weight gradients) in the backward.
TEST(GpuActivation, NanStaysInItsSlice) {
  INORM_REQUIRE_GPU();
  for (Activation activation : kActivations) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      Case c = activated_case(pass, {2, 3, 4097}, DType::kFloat32, activation);
      c.nan_slice = 4;
      expect_passes(c, with(activation, "NaN in slice 4"));
    }
  }
}

TEST(GpuActivation, InPlaceAndBitwiseRepeatable) {
  INORM_REQUIRE_GPU();
  for (Activation activation : kActivations) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{8, 16, 32, 32}, {2, 4, 512, 512}}) {
        expect_passes_in_place_and_repeated(activated_case(pass, shape, DType::kBFloat16, activation),
                                            with(activation, "in place, repeated"));
      }
    }
  }
}

// Eval mode: the forward is elementwise (its own kernel), the backward's dx too; S = 1 is valid.
TEST(GpuActivation, EvalModeWithRunningStats) {
  INORM_REQUIRE_GPU();
  for (Activation activation : kActivations) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 3, 1}, {2, 5, 33, 17}}) {
        for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast}) {
          Case c = activated_case(pass, shape, DType::kFloat16, activation);
          c.running = Running::kEval;
          c.layout = layout;
          expect_passes(c, with(activation, "eval mode"));
        }
      }
    }
  }
}

// channels_last: whole rows staged in bulk (C <= 256) in the resident form and the three kernels,
// and channel blocks (C = 600), every dtype.
TEST(GpuActivation, ChannelsLast) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (Activation activation : kActivations) {
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3, 33, 17}, {2, 600, 9, 11}}) {
        for (Pass pass : {Pass::kForward, Pass::kBackward}) {
          for (Exchange form : channels_last_forms(shape)) {
            Case c = activated_case(pass, shape, dtype, activation);
            c.layout = Layout::kChannelsLast;
            c.options.force_exchange = form;
            expect_passes(c, with(activation, form == Exchange::kGlobal ? "channels_last resident" : "channels_last"));
          }
        }
      }
    }
  }
}

// No affine (z = xhat), and a weight without a bias (the backward's z then has no shift).
TEST(GpuActivation, WithoutBias) {
  INORM_REQUIRE_GPU();
  for (Activation activation : kActivations) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      Case plain = activated_case(pass, {4, 8, 63, 65}, DType::kFloat32, activation);
      plain.affine = false;
      expect_passes(plain, with(activation, "no affine"));
      Case weight_only = activated_case(pass, {4, 8, 63, 65}, DType::kFloat32, activation);
      weight_only.weight_only = true;
      expect_passes(weight_only, with(activation, "weight without bias"));
    }
  }
}

// Every activation in every contiguous family of both passes, InstanceNorm and GroupNorm (slices of
// two channels), each plan forced: the families fix the activation around their loops (a copy of
// each loop for each activation, kernels/backward_op.cuh channel_sums), so every pair is code of its
// own. float32 and bfloat16 in turn. (These forced shapes need no register parts; the forward's
// with them: GpuActivation.GeneralForwardRegisterParts. The backward with an activation takes none:
// PlanBackward.ActivationTakesNoRegisterParts.)
TEST(GpuActivation, EveryFamily) {
  INORM_REQUIRE_GPU();
  struct Reach {
    const char* why;
    std::vector<int64_t> shape;
    Path path;
    int ctas_per_slice = 0;
    Exchange exchange = Exchange::kAuto;
  };
  const Reach reaches[] = {
      {"group_registers", {2, 4, 512}, Path::kGroupRegisters},
      {"shared_resident, one CTA a slice", {2, 4, 4097}, Path::kSharedResident, 1, Exchange::kNone},
      {"shared_resident, a cluster of 3", {2, 4, 4097}, Path::kSharedResident, 3, Exchange::kCluster},
      {"shared_resident, 3 CTAs through L2", {2, 4, 4097}, Path::kSharedResident, 3, Exchange::kGlobal},
      {"split_pipelined, several parts a slice", {1, 4, 40000}, Path::kSplitPipelined},
  };
  int turn = 0;
  for (const Reach& r : reaches) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (Activation activation : kActivations) {
        for (int64_t groups : {int64_t{0}, r.shape[1] / 2}) {
          // GroupNorm's slices of two channels, InstanceNorm's as long: the plan holds either alike.
          std::vector<int64_t> shape = r.shape;
          if (groups == 0) shape.back() *= 2;
          Case c = activated_case(pass, shape, turn++ % 2 ? DType::kBFloat16 : DType::kFloat32, activation);
          c.param_dtype = DType::kFloat32;
          c.groups = groups;
          force_plan(&c, r.path, r.ctas_per_slice, 0, r.exchange);
          c.expect_registers = false;
          ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
          expect_passes(c, with(activation, std::string(r.why) + (groups > 0 ? ", GroupNorm" : "")));
        }
      }
    }
  }
}

// group_registers' general forward at the plain op's lanes up to 8 vectors, the activation fixed
// around each item: two warps a slice of 8 vectors (every dtype), and one vector short of that
// (the last lane's last vector absent); GroupNorm over two channels, which in the short slice meet
// inside a vector (the window moves element by element there). Offset data; the activations in
// turn.
TEST(GpuActivation, GroupRegistersGeneralForward) {
  INORM_REQUIRE_GPU();
  int turn = 0;
  for (DType dtype : kAllDtypes) {
    const int64_t vec = 16 / static_cast<int64_t>(dtype_size(dtype));
    const int64_t two_warps = 64 * 8 * vec;  // 64 lanes of 8 vectors
    for (int64_t groups : {int64_t{0}, int64_t{2}}) {
      for (int64_t slice_len : {two_warps, two_warps - vec}) {
        const Activation activation = kActivations[turn++ % 3];
        Case c = activated_case(Pass::kForward, {2, 4, groups > 0 ? slice_len / 2 : slice_len}, dtype, activation);
        c.groups = groups;
        c.running = Running::kNone;
        c.options.force_path = Path::kGroupRegisters;
        c.options.force_group_lanes = 64;
        c.expect_path = Path::kGroupRegisters;
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        expect_passes(c, with(activation, "two warps a slice of " + std::to_string(slice_len) + " " +
                                              dtype_name(dtype) + (groups > 0 ? ", GroupNorm" : "")));
      }
    }
  }
  // The planner's own (Planner.GroupBoundaries): 2048 float32 and 4096 bfloat16, two warps.
  for (const auto& [dtype, slice_len] : {std::pair{DType::kFloat32, 2048}, std::pair{DType::kBFloat16, 4096}}) {
    Case c = activated_case(Pass::kForward, {3, 5, slice_len}, dtype, Activation::kSilu);
    c.expect_path = Path::kGroupRegisters;
    expect_passes(c, with(Activation::kSilu, std::string("the planner's lanes, ") + dtype_name(dtype)));
  }
}

// The forward's general op takes register parts where its plan without them would give way to
// split_pipelined (config.h shared_register_part_max_group;
// Planner.GeneralForwardRegisterPartsInPlaceOfSplit): slices of 16 steady 64 KiB chunks (16 bytes
// a channel past 15) in a register cluster at two CTAs an SM (the spanning kernel instance on one
// cluster), and slices of exactly 15, which keep the steady plan without them. InstanceNorm, and
// GroupNorm over three channels whose ends fall inside chunks and register parts (the channel
// window moves there); every dtype, the activations in turn, 64 slices, offset data; in place and
// repeated for float32.
TEST(GpuActivation, GeneralForwardRegisterParts) {
  INORM_REQUIRE_GPU();
  int turn = 0;
  for (DType dtype : kAllDtypes) {
    const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
    for (const bool past_split : {true, false}) {
      for (const int64_t groups : {int64_t{0}, int64_t{1}}) {
        const Activation activation = kActivations[turn++ % 3];
        const int64_t slice_channels = groups > 0 ? 3 : 1;  // GroupNorm: one group of three channels
        const int64_t channel_bytes = 15 * detail::kSharedSteadyChunkBytes / slice_channels + (past_split ? 16 : 0);
        Case c = activated_case(Pass::kForward, {groups > 0 ? 64 : 16, groups > 0 ? 3 : 4, channel_bytes / elem}, dtype,
                                activation);
        c.groups = groups;
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        c.expect_path = Path::kSharedResident;
        c.expect_registers = past_split;
        c.expect_ctas_per_sm = past_split ? detail::kSharedRegisterCtasPerSm : 3;
        c.expect_general_op = true;
        const std::string why = with(activation, std::string(past_split ? "16" : "15") + " steady chunks a slice, " +
                                                     dtype_name(dtype) + (groups > 0 ? ", GroupNorm" : ""));
        expect_passes(c, why);
        if (past_split && dtype == DType::kFloat32) expect_passes_in_place_and_repeated(c, why);
      }
    }
  }
}

}  // namespace
}  // namespace inorm::testing
