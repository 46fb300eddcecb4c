// GPU tests of GroupNorm (ForwardParams.groups, BackwardParams.groups), forward and backward: a
// slice is C / groups channels x spatial, normalized together, with the weight and bias of each
// element's channel (the general op follows it, common.cuh ChannelWindow); the backward sums dweight
// and dbias per channel inside each slice (kernels/backward_op.cuh). Checked in full against the
// float64 oracle by run_case (case_runner.h): every group count (1, 2, one channel a group, and
// between) x every dtype on a shape of each family, every path forced onto a misaligned view,
// offset data, a NaN, no affine, in place and bitwise repeats, each in both passes; the same in
// channels_last.
// GpuSanitize.GroupNormPlans runs each family under the sanitizers. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "case_runner.h"
#include "expect_case.h"

namespace inorm::testing {
namespace {

constexpr Pass kPasses[] = {Pass::kForward, Pass::kBackward};

Case group_case(Pass pass, std::vector<int64_t> shape, DType dtype, int64_t groups,
                Activation activation = Activation::kNone) {
  Case c;
  c.pass = pass;
  c.shape = std::move(shape);
  c.dtype = dtype;
  c.groups = groups;
  c.affine = true;
  c.param_dtype = dtype;
  c.activation = activation;
  return c;
}

std::string with_groups(int64_t groups, const std::string& why) {
  return why + ", groups " + std::to_string(groups);
}

struct GroupShape {
  const char* why;
  std::vector<int64_t> shape;
  std::vector<int64_t> groups;
};

// Each shape with every group count it allows: 1, 2, one channel a group, and one between.
const std::vector<GroupShape>& group_shapes() {
  static const std::vector<GroupShape> shapes = {
      {"2x6x5x7: channels of 35, slices of 35 to 210 in a lane group's registers", {2, 6, 5, 7}, {1, 2, 3, 6}},
      {"3x12x33x31: channels of 1023, their ends inside 16-byte vectors, a CTA a slice", {3, 12, 33, 31}, {1, 2, 4, 12}},
      {"2x8x130x130: slices of one to eight 16900-element channels over several CTAs", {2, 8, 130, 130}, {1, 2, 8}},
      {"1x4x1500x1500: a slice of four 2.25M-element channels, larger than the chip", {1, 4, 1500, 1500}, {1}},
      {"2x5x3: channels of three, shorter than any vector", {2, 5, 3}, {1, 5}},
      {"N=0: an empty batch", {0, 4, 8, 8}, {2}},
  };
  return shapes;
}

// Every group count and dtype, silu and no activation in turn, in both passes.
TEST(GpuGroupNorm, EveryGroupCountEveryDtype) {
  INORM_REQUIRE_GPU();
  for (Pass pass : kPasses) {
    for (DType dtype : kAllDtypes) {
      int turn = 0;
      for (const GroupShape& s : group_shapes()) {
        for (int64_t groups : s.groups) {
          const Activation activation = turn++ % 2 ? Activation::kSilu : Activation::kNone;
          expect_passes(group_case(pass, s.shape, dtype, groups, activation), with_groups(groups, s.why));
        }
      }
    }
  }
}

// Every forced plan (expect_case.h forced_plans), every tensor one element off 16-byte alignment,
// SiLU in turn: 3 groups of two 1517-element channels, where chunk and part boundaries fall
// anywhere in a channel and the backward's per-channel sums of a chunk start and end inside
// channels (the window moved inside a chunk, chunk.cuh store_each); 2 groups of 32
// three-element channels, where a chunk holds many channels, most of them inside one 16-byte
// vector (Chunk::for_each_range's two ends in one vector; the window moved vector by vector), and
// the widest plans leave CTAs without a chunk (their context past the slice's end).
TEST(GpuGroupNorm, EveryPathForced) {
  INORM_REQUIRE_GPU();
  struct Spread {
    std::vector<int64_t> shape;
    int64_t groups;
  };
  const Spread spreads[] = {{{2, 6, 37, 41}, 3}, {{2, 64, 3}, 2}};
  int turn = 0;
  for (Pass pass : kPasses) {
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat64}) {
      for (const Spread& spread : spreads) {
        for (const ForcedPlan& f : forced_plans()) {
          Case c = forced_misaligned_case(pass, spread.shape, dtype, f.path);
          c.running = Running::kNone;  // GroupNorm has none
          c.groups = spread.groups;
          c.activation = turn++ % 2 ? Activation::kSilu : Activation::kNone;
          c.options = f.options();
          c.expect_exchange = f.exchange;
          expect_passes(c, with_groups(spread.groups, f.describe()));
        }
      }
    }
    Case small = forced_misaligned_case(pass, {2, 6, 5, 7}, DType::kFloat16, Path::kGroupRegisters);
    small.running = Running::kNone;
    small.groups = 2;
    expect_passes(small, "forced to group_registers");
  }
}

// Chunks that each lie in one channel take their channel's affine a chunk (plan_internal.h
// takes_chunk_channel_affine): the forward in its plain op, the backward in BackwardOp's chunk form
// (with SiLU in turn), leaving each chunk's sums for its one channel's dweight and dbias. Slices of
// four 64x64 channels, a chunk of a channel, of half a channel and of a quarter, and
// split_pipelined's parts (64 KiB of the inputs: 4096 to 32768 elements a part)
// inside slices of two 256x128 channels; every dtype, with data far from zero. Chunks across
// channels (three CTAs) take the general op on the same slices; 16 CTAs on slices of 96 elements
// leave four without a chunk.
TEST(GpuGroupNorm, ChunksInsideChannels) {
  INORM_REQUIRE_GPU();
  for (Pass pass : kPasses) {
    int turn = 0;
    for (DType dtype : kAllDtypes) {
      const Activation activation =
          pass == Pass::kBackward && turn++ % 2 ? Activation::kSilu : Activation::kNone;
      const bool silu = activation != Activation::kNone;
      for (int ctas : {3, 4, 8, 16}) {
        Case c = group_case(pass, {3, 8, 64, 64}, dtype, 2, activation);
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        c.options.force_path = Path::kSharedResident;
        c.options.force_ctas_per_slice = ctas;
        c.expect_general_op = silu || ctas == 3;
        c.expect_chunk_channel_affine = ctas != 3;
        expect_passes(c, std::to_string(ctas) + " CTAs a slice of four channels");
      }
      // Chunks of 8 in channels of 48: the last four of 16 CTAs hold nothing (float64: 16 chunks of 6).
      Case empty_chunks = group_case(pass, {3, 4, 48}, dtype, 2, activation);
      empty_chunks.options.force_path = Path::kSharedResident;
      empty_chunks.options.force_ctas_per_slice = 16;
      empty_chunks.expect_general_op = silu;
      empty_chunks.expect_chunk_channel_affine = true;
      expect_passes(empty_chunks, "16 CTAs on slices of two 48-element channels");
      Case split = group_case(pass, {2, 4, 256, 128}, dtype, 2, activation);
      ASSERT_TRUE(parse_data_spec("1000 + randn", &split.data).ok());
      split.options.force_path = Path::kSplitPipelined;
      split.expect_general_op = silu;
      split.expect_chunk_channel_affine = true;
      expect_passes(split, "split_pipelined parts inside channels");
    }
  }
}

// x far from zero: the statistics keep their digits across the channels of a slice, and the
// backward's r (what the float32 mean missed) stays right in every channel's dweight.
TEST(GpuGroupNorm, OffsetData) {
  INORM_REQUIRE_GPU();
  for (Pass pass : kPasses) {
    for (const char* data : {"1000 + randn", "1e4 + randn"}) {
      for (const std::vector<int64_t>& shape :
           {std::vector<int64_t>{8, 16, 8, 8}, {4, 8, 63, 65}, {2, 8, 130, 130}, {1, 4, 1500, 1500}}) {
        Case c = group_case(pass, shape, DType::kFloat32, 2, Activation::kLeakyRelu);
        c.negative_slope = 0.2;
        ASSERT_TRUE(parse_data_spec(data, &c.data).ok());
        expect_passes(c, data);
        if (pass == Pass::kForward) {
          // Group 1 starts with a 0: its sums' shift lies far from its mean (forward_test.cpp
          // OffsetDataKeepsItsDigits; with the activation, the two-pass takes it).
          c.zero_start_slice = shape[1] / 2;
          expect_passes(c, std::string(data) + ", group 1 starts with 0");
        }
      }
    }
  }
}

// A NaN in one channel: its whole group is NaN, the other groups are not (in the backward, dx of
// the group, and the dweight of every channel of that group, which sums over it).
TEST(GpuGroupNorm, NanStaysInItsGroup) {
  INORM_REQUIRE_GPU();
  for (Pass pass : kPasses) {
    Case c = group_case(pass, {2, 6, 4097}, DType::kFloat32, 3);
    c.nan_slice = 4;  // channel 4 of sample 0: group 2
    expect_passes(c, "NaN in channel 4");
  }
}

// No affine (the norm alone: the plain op, nothing by channel), a weight without a bias, and the
// backward's gradients apart: dx alone (the general op without per-channel sums), dweight and
// dbias alone (per-channel sums, nothing written per element), and dweight and dbias without a
// weight (a weight of 1 in the per-channel sums, as PyTorch's backward op may ask).
TEST(GpuGroupNorm, WithoutBiasAndEachGradientAlone) {
  INORM_REQUIRE_GPU();
  for (Pass pass : kPasses) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 8, 63, 65}, {2, 6, 5, 7}}) {
      Case plain = group_case(pass, shape, DType::kFloat32, 2);
      plain.affine = false;
      expect_passes(plain, "no affine");
      Case weight_only = group_case(pass, shape, DType::kBFloat16, 2, Activation::kRelu);
      weight_only.weight_only = true;
      expect_passes(weight_only, "weight without bias");
    }
  }
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 8, 63, 65}, {2, 8, 130, 130}}) {
    Case dx_only = group_case(Pass::kBackward, shape, DType::kFloat16, 4, Activation::kSilu);
    dx_only.want_weight_grads = false;
    expect_passes(dx_only, "dx alone");
    Case grads_only = group_case(Pass::kBackward, shape, DType::kFloat32, 4);
    grads_only.want_dx = false;
    expect_passes(grads_only, "dweight and dbias alone");
    Case no_affine = group_case(Pass::kBackward, shape, DType::kFloat32, 4, Activation::kSilu);
    no_affine.affine = false;
    no_affine.weight_grads_without_affine = true;
    expect_passes(no_affine, "no affine, dweight and dbias of a weight of 1");
  }
}

// channels_last (kernels/channels_last.cuh): a group's channels are columns of the tiles, reduced
// apart and combined per group; each channel's coefficients follow its weight and bias. Every
// group count and dtype on shapes of each way a tile moves, silu and leaky_relu in turn.
const std::vector<GroupShape>& channels_last_group_shapes() {
  static const std::vector<GroupShape> shapes = {
      {"C=6: whole rows staged by bulk copy, 42 rows a pass", {3, 6, 37, 41}, {1, 2, 3, 6}},
      {"C=64, 128x128: 64 tiles a channel, groups across the tile's columns", {2, 64, 128, 128}, {1, 8, 32}},
      {"C=320 (SD UNet's): two blocks of 160 channels, groups of 10 inside one, of 64 across both", {2, 320, 9, 11}, {32, 5}},
      {"C=261: blocks of 131 never 16-byte aligned, element by element; groups across blocks", {2, 261, 5, 7}, {3, 9}},
      {"2x32x9x10x11: channels_last_3d", {2, 32, 9, 10, 11}, {4}},
      {"N=0: an empty batch", {0, 8, 4, 4}, {2}},
  };
  return shapes;
}

TEST(GpuGroupNorm, ChannelsLast) {
  INORM_REQUIRE_GPU();
  for (Pass pass : kPasses) {
    for (DType dtype : kAllDtypes) {
      int turn = 0;
      for (const GroupShape& s : channels_last_group_shapes()) {
        for (int64_t groups : s.groups) {
          for (Exchange form : channels_last_forms(s.shape)) {
            Case c = group_case(pass, s.shape, dtype, groups, turn++ % 2 ? Activation::kLeakyRelu : Activation::kSilu);
            c.layout = Layout::kChannelsLast;
            c.expect_path = s.shape[0] == 0 ? Path::kEmpty : Path::kChannelsLast;
            c.options.force_exchange = form;
            expect_passes(c, with_groups(groups, s.why) + (form == Exchange::kGlobal ? ", resident" : ""));
          }
        }
      }
    }
  }
}

// channels_last edges: offset data, a NaN in one channel (its group only), misaligned views in
// place and repeated bitwise, no affine, and the backward's gradients apart.
TEST(GpuGroupNorm, ChannelsLastEdges) {
  INORM_REQUIRE_GPU();
  const auto cl_case = [](Pass pass, std::vector<int64_t> shape, DType dtype, int64_t groups,
                          Activation activation = Activation::kNone) {
    Case c = group_case(pass, std::move(shape), dtype, groups, activation);
    c.layout = Layout::kChannelsLast;
    return c;
  };
  // Data far from zero in both forms, on whole rows (C = 64) and on channel blocks (C = 640, SD
  // UNet's); in the forward also with a group's first element 0: each column's one pass of float64
  // sums around that shift (the general op's too, forward_op.cuh kOnePass) loses digits past
  // kOnePassMaxSquares, so the group's columns take the second pass.
  struct Offset {
    std::vector<int64_t> shape;
    int64_t groups;
    Activation activation;
  };
  for (const Offset& o :
       {Offset{{4, 64, 63, 65}, 8, Activation::kLeakyRelu}, Offset{{2, 640, 16, 16}, 32, Activation::kSilu}}) {
    for (Pass pass : kPasses) {
      for (Exchange form : {Exchange::kGlobal, Exchange::kNone}) {
        Case offset = cl_case(pass, o.shape, DType::kFloat32, o.groups, o.activation);
        offset.options.force_exchange = form;
        offset.expect_exchange = form;
        ASSERT_TRUE(parse_data_spec("1e4 + randn", &offset.data).ok());
        const std::string why = std::to_string(o.shape[1]) + " channels, 1e4 + randn" +
                                (form == Exchange::kGlobal ? ", resident" : ", three kernels");
        expect_passes(offset, why);
        if (pass == Pass::kBackward) continue;
        offset.zero_start_slice = o.shape[1] / o.groups;  // group 1's first channel
        expect_passes(offset, why + ", group 1 starts with 0");
      }
    }
  }
  for (Pass pass : kPasses) {
    Case nan = cl_case(pass, {2, 6, 4097}, DType::kFloat32, 3);
    nan.nan_slice = 4;  // channel 4 of sample 0: group 2
    expect_passes(nan, "NaN in channel 4");
    expect_passes_in_place_and_repeated(cl_case(pass, {8, 32, 32, 32}, DType::kBFloat16, 4, Activation::kSilu),
                                        "GroupNorm channels_last");
    Case misaligned = cl_case(pass, {2, 6, 37, 41}, DType::kFloat16, 3, Activation::kRelu);
    misaligned.x_offset = misaligned.y_offset = 1;
    expect_passes(misaligned, "a view one element off alignment");
    Case plain = cl_case(pass, {2, 64, 33, 31}, DType::kFloat32, 16);
    plain.affine = false;
    expect_passes(plain, "no affine");
  }
  Case dx_only = cl_case(Pass::kBackward, {2, 64, 33, 31}, DType::kFloat16, 4, Activation::kSilu);
  dx_only.want_weight_grads = false;
  expect_passes(dx_only, "dx alone");
  Case grads_only = cl_case(Pass::kBackward, {2, 64, 33, 31}, DType::kFloat32, 4);
  grads_only.want_dx = false;
  expect_passes(grads_only, "dweight and dbias alone");
  Case no_affine = cl_case(Pass::kBackward, {2, 64, 33, 31}, DType::kFloat32, 4, Activation::kSilu);
  no_affine.affine = false;
  no_affine.weight_grads_without_affine = true;
  expect_passes(no_affine, "no affine, dweight and dbias of a weight of 1");
}

TEST(GpuGroupNorm, InPlaceAndBitwiseRepeatable) {
  INORM_REQUIRE_GPU();
  for (Pass pass : kPasses) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{8, 16, 32, 32}, {2, 4, 512, 512}}) {
      expect_passes_in_place_and_repeated(group_case(pass, shape, DType::kBFloat16, 2, Activation::kSilu),
                                          "GroupNorm");
    }
  }
}

}  // namespace
}  // namespace inorm::testing
