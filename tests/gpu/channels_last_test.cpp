// GPU tests of channels_last input (NHWC / NDHWC: a slice's elements are C apart), both passes,
// both forms (kernels/channels_last.cuh: the resident one where a sample fits the chip, the three
// kernels) and every way a tile moves: every dtype x shapes with odd C and odd spatial extents,
// offset data, a NaN slice, misaligned views, in place, running stats and eval mode, bitwise
// repeats and the tile and group boundaries, every output checked in full against the float64
// oracle (run_case reorders to NCHW for it).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "case_runner.h"
#include "config.h"
#include "expect_case.h"

namespace inorm::testing {
namespace {

Case channels_last_case(Pass pass, std::vector<int64_t> shape, DType dtype, Exchange form = Exchange::kAuto) {
  Case c;
  c.options.force_exchange = form;
  c.expect_exchange = form;
  c.pass = pass;
  c.layout = Layout::kChannelsLast;
  c.shape = std::move(shape);
  c.dtype = dtype;
  c.param_dtype = dtype;  // like a torch module of that dtype
  c.affine = true;
  if (pass == Pass::kForward) c.running = Running::kUpdate;
  const bool empty = c.shape[0] == 0;
  c.expect_path = empty ? Path::kEmpty : Path::kChannelsLast;
  if (empty) c.expect_exchange = Exchange::kAuto;
  return c;
}

std::string form_name(Exchange form) {
  return form == Exchange::kGlobal ? ", resident" : form == Exchange::kNone ? ", three kernels" : "";
}

const std::vector<Shape>& channels_last_shapes() {
  static const std::vector<Shape> shapes = {
      {"C=1: one column of 256 threads a tile", {3, 1, 37, 41}},
      {"C=3: 85 rows a pass, the CTA's last thread idle", {4, 3, 64, 64}},
      {"C=5, S=2: the smallest slice with statistics", {3, 5, 1, 2}},
      {"C=129: one row a pass, odd spatial extents", {2, 129, 17, 19}},
      {"C=261: two blocks of 131 whose rows are never 16-byte aligned, element by element", {2, 261, 5, 7}},
      {"C=600: three channel blocks of 200", {2, 600, 9, 11}},
      {"C=520: blocks raised to whole 16-byte runs, 176 (the last 168) in 16-bit and float32", {2, 520, 7, 5}},
      {"C=64, 128x128: 64 tiles a slice (cl-bf16's plan, smaller)", {2, 64, 128, 128}},
      {"2x32x17x19x23: channels_last_3d with odd extents", {2, 32, 17, 19, 23}},
      {"4x8x1000: one spatial dimension", {4, 8, 1000}},
      {"N=0: an empty batch", {0, 3, 8, 8}},
  };
  return shapes;
}

TEST(GpuChannelsLast, ForwardEveryDtype) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : channels_last_shapes()) {
      for (Exchange form : channels_last_forms(s.shape)) {
        expect_passes(channels_last_case(Pass::kForward, s.shape, dtype, form), s.why + form_name(form));
      }
    }
  }
}

TEST(GpuChannelsLast, BackwardEveryDtype) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : channels_last_shapes()) {
      for (Exchange form : channels_last_forms(s.shape)) {
        expect_passes(channels_last_case(Pass::kBackward, s.shape, dtype, form), s.why + form_name(form));
      }
    }
  }
}

// Eval mode: the forward is elementwise (the channel is the index modulo C); the backward still
// sums each slice for dweight and dbias. Also a weight without bias, and the gradients one at a time.
TEST(GpuChannelsLast, EvalModeAndPartialOutputs) {
  INORM_REQUIRE_GPU();
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    for (const Shape& s : channels_last_shapes()) {
      for (Pass pass : {Pass::kForward, Pass::kBackward}) {
        Case c = channels_last_case(pass, s.shape, dtype);
        c.running = Running::kEval;
        c.expect_path = c.shape[0] == 0                          ? Path::kEmpty
                        : pass == Pass::kForward ? Path::kElementwiseEval
                                                 : Path::kChannelsLast;
        expect_passes(c, std::string(s.why) + ", eval");
      }
      Case weight_only = channels_last_case(Pass::kForward, s.shape, dtype);
      weight_only.weight_only = true;
      expect_passes(weight_only, std::string(s.why) + ", weight without bias");
      Case no_dx = channels_last_case(Pass::kBackward, s.shape, dtype);
      no_dx.want_dx = false;
      expect_passes(no_dx, std::string(s.why) + ", dweight and dbias only");
      Case dx_only = channels_last_case(Pass::kBackward, s.shape, dtype);
      dx_only.want_weight_grads = false;
      expect_passes(dx_only, std::string(s.why) + ", dx only");
    }
  }
}

// Far from zero: the statistics keep their digits through the tiles' float64 partials. With 1e4 +
// randn also a shift far from the mean (forward_test.cpp OffsetDataKeepsItsDigits): channel 1 of
// sample 0 starts with a 0, and every tile of it takes the second pass, with its CTA's other columns.
TEST(GpuChannelsLast, OffsetDataKeepsItsDigits) {
  INORM_REQUIRE_GPU();
  for (const char* data : {"1000 + randn", "1e4 + randn"}) {
    for (DType dtype : kAllDtypes) {
      for (Pass pass : {Pass::kForward, Pass::kBackward}) {
        for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 64, 128, 128}, {3, 5, 33, 31}}) {
          for (Exchange form : channels_last_forms(shape)) {
            Case c = channels_last_case(pass, shape, dtype, form);
            ASSERT_TRUE(parse_data_spec(data, &c.data).ok());
            expect_passes(c, data + form_name(form));
            if (pass == Pass::kBackward || c.data.offset < 1e4) continue;
            c.zero_start_slice = 1;
            expect_passes(c, std::string("channel 1 starts with 0 amid ") + data + form_name(form));
          }
        }
      }
    }
  }
}

TEST(GpuChannelsLast, NanStaysInItsSlice) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (Exchange form : channels_last_forms({2, 7, 40, 40})) {
        Case c = channels_last_case(pass, {2, 7, 40, 40}, dtype, form);
        c.nan_slice = 9;  // sample 1, channel 2
        expect_passes(c, "NaN in slice 9" + form_name(form));
      }
    }
  }
}

// Views that start one element past 16 bytes (whole rows: ragged ends of the bulk copies; channel
// blocks, C = 600: element by element where aligned views move 16-byte runs), in place (y is x; dx
// is dy) either way, and three runs with the same bits.
TEST(GpuChannelsLast, MisalignedInPlaceAndRepeated) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const std::vector<int64_t>& shape :
           {std::vector<int64_t>{2, 64, 128, 128}, {4, 3, 64, 64}, {2, 600, 9, 11}}) {
        for (int64_t offset : {0, 1}) {
          for (Exchange form : channels_last_forms(shape)) {
            Case c = channels_last_case(pass, shape, dtype, form);
            c.x_offset = offset;
            c.y_offset = offset;
            const std::string why = (offset == 0 ? "aligned views" : "misaligned views") + form_name(form);
            if (offset == 1) expect_passes(c, why);
            expect_passes_in_place_and_repeated(c, why);
          }
        }
      }
    }
  }
}

// A float32 tile of 64 channels is 256 rows in the forward (64 KiB of x) and 128 in the backward
// (x and dy) on the three kernels: slices of one row less, exactly one or two tiles, one row more.
TEST(GpuChannelsLast, TileBoundaries) {
  INORM_REQUIRE_GPU();
  for (int64_t len : {255, 256, 257, 511, 512, 513}) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      expect_passes(channels_last_case(pass, {3, 64, len}, DType::kFloat32, Exchange::kNone),
                    "S=" + std::to_string(len));
    }
  }
}

// The resident form at every CTAs an SM it compiles for: samples of one CTA (S=4), of a few, and
// of 66 to 198 (4x10^4 rows of 64 float32 channels, 10 MB a tensor: two samples spread over every
// slot of the grid), C = 3 with its idle thread.
TEST(GpuChannelsLast, ResidentGroupSizes) {
  INORM_REQUIRE_GPU();
  for (int ctas_per_sm = 1; ctas_per_sm <= 3; ++ctas_per_sm) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const std::vector<int64_t>& shape :
           {std::vector<int64_t>{5, 64, 4}, {3, 64, 130, 70}, {2, 64, 40000}, {3, 3, 300, 301}}) {
        Case c = channels_last_case(pass, shape, DType::kFloat32, Exchange::kGlobal);
        c.options.force_ctas_per_sm = ctas_per_sm;
        c.expect_ctas_per_sm = ctas_per_sm;
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        expect_passes(c, std::to_string(ctas_per_sm) + " CTAs an SM");
      }
    }
  }
}

// Two CTAs taking every tile in turn (the staging buffer and its barrier reused across tiles,
// slices and samples), on the bulk path and on the channel-block path; in the resident form, one
// and two groups taking every sample in turn (the buffer, the coefficients and the arrivals of
// each sample); either pass.
TEST(GpuChannelsLast, FewCtasTakeEveryTile) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 64, 1000}, {2, 600, 9, 11}}) {
        Case c = channels_last_case(pass, shape, dtype, Exchange::kNone);
        c.max_groups = 2;
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        expect_passes(c, "2 CTAs");
      }
      for (int groups : {1, 2}) {
        Case c = channels_last_case(pass, {5, 64, 3000}, dtype, Exchange::kGlobal);
        c.max_groups = groups;
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        expect_passes(c, std::to_string(groups) + " resident groups");
      }
    }
  }
}

// A case of the cluster form on 1000 + randn and 1e4 + randn (d = x - mean keeps its digits), then
// on U[0,1) with a NaN slice, one cluster taking every sample (its cells alternating, its pieces
// refilled across samples), `more`'s cases of its pass (more(c, why)), in place and three runs with
// the same bits.
template <typename More>
void expect_cluster_case_passes(Case c, const std::string& why, More&& more) {
  for (const char* data : {"1000 + randn", "1e4 + randn"}) {
    ASSERT_TRUE(parse_data_spec(data, &c.data).ok());
    expect_passes(c, why + ", " + data);
  }
  c.data = DataSpec{};
  c.nan_slice = 3;
  expect_passes(c, why + ", NaN in slice 3");
  c.nan_slice = -1;
  c.max_groups = 1;
  expect_passes(c, why + ", one cluster");
  c.max_groups = 0;
  more(c, why);
  expect_passes_in_place_and_repeated(c, why);
}

// The backward's cluster form (Exchange::kCluster: a cluster of CTAs, one an SM, holds a sample's
// x, its sums exchanged through distributed shared memory), forced in clusters of several sizes:
// one CTA (no peer), 3 (a short last CTA), 16 (the largest, non-portable), and one CTA of few rows
// (four pieces of one row, its last CTA's two); C from one 16-byte run a row (8 16-bit channels)
// to 32 (128 float32 channels: no shuffles between lanes), channels_last_3d with odd extents. Each
// in every dtype it runs, on 1000 + randn and 1e4 + randn (d = x - mean keeps its digits), with a
// NaN slice, one cluster taking every sample (its cells alternating, its pieces refilled across
// samples), in eval mode, for the weight gradients alone and for dx alone, in place and three runs
// with the same bits. Then the planner's own choice of it on 2 MiB samples.
TEST(GpuChannelsLast, ClusterBackward) {
  INORM_REQUIRE_GPU();
  struct Clustered {
    const char* why;
    std::vector<int64_t> shape;
    int group;
  };
  const Clustered shapes[] = {
      {"C=64, 20x20, a CTA a sample", {4, 64, 20, 20}, 1},
      {"C=64, 40x50, clusters of 3, the last CTA 666 rows of 2000", {2, 64, 40, 50}, 3},
      {"C=64, 40x50, clusters of 16 (125 rows a CTA)", {3, 64, 40, 50}, 16},
      {"C=8, 10 rows in clusters of 3: pieces of a row, the last CTA's two", {5, 8, 10}, 3},
      {"C=128, 9x11 in clusters of 10", {2, 128, 9, 11}, 10},
      {"channels_last_3d 2x32x17x19x23 in clusters of 8", {2, 32, 17, 19, 23}, 8},
  };
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Clustered& s : shapes) {
      Case c = channels_last_case(Pass::kBackward, s.shape, dtype, Exchange::kCluster);
      c.options.force_ctas_per_slice = s.group;
      c.expect_ctas_per_slice = s.group;
      const std::string why = std::string(s.why) + ", " + dtype_name(dtype);
      expect_cluster_case_passes(c, why, [](const Case& base, const std::string& what) {
        Case eval = base;
        eval.running = Running::kEval;
        expect_passes(eval, what + ", eval");
        Case no_dx = base;
        no_dx.want_dx = false;
        expect_passes(no_dx, what + ", dweight and dbias only");
        Case dx_only = base;
        dx_only.want_weight_grads = false;
        expect_passes(dx_only, what + ", dx only");
      });
    }
  }
  // The planner's: 32 samples of 2 MiB (float32, 32 channels of 128x128) fill four rounds of the
  // clusters of 16 an H100 or H200 holds, their first round staggered (Plan::stagger_cycles).
  Case planned = channels_last_case(Pass::kBackward, {32, 32, 128, 128}, DType::kFloat32, Exchange::kCluster);
  planned.options.force_exchange = Exchange::kAuto;
  planned.expect_ctas_per_slice = 16;
  ASSERT_TRUE(parse_data_spec("1000 + randn", &planned.data).ok());
  expect_passes(planned, "the planner's clusters of 16");
}

// The forward's cluster form (Exchange::kCluster at two CTAs an SM: the rows past a CTA's share of
// shared memory in its threads' registers), forced: the fewest CTAs where each holds rows in
// registers (C=64 on 2090 rows: two CTAs of 1045 rows in the 16-bit types, 253 of them in
// registers, near their 256; four of 523 in float32, 127 of 128, the last 521), clusters of 16 of
// 128-byte rows whose last CTA holds fewer rows than its peers' shared memory (float32's all there),
// C=128 (the 16-bit types' two CTAs of 450 rows, 70 in registers; float32's four of 225, 35),
// channels_last_3d with odd extents (rows of 64 and 128 bytes, 242 and 254 in registers); then
// shapes without a register part: one CTA a sample, clusters of 3 whose pieces are one row, clusters
// of 16 of 125 rows. Each in every dtype it runs, on 1000 + randn and 1e4 + randn, with slice 1
// starting with 0 amid 1e4 + randn (its one pass loses digits around that shift: every CTA of the
// cluster sums its deviations from the mean again), a NaN slice, one cluster taking every sample,
// without running statistics or saved mean and rstd, in place and three runs with the same bits.
// Then the planner's own choice on 2 MiB samples.
TEST(GpuChannelsLast, ClusterForward) {
  INORM_REQUIRE_GPU();
  struct Clustered {
    const char* why;
    std::vector<int64_t> shape;  // C 0: rows of 128 bytes
    int group;                   // 0: the fewest
    bool registers;
  };
  const Clustered shapes[] = {
      {"C=64, 2090 rows in the fewest CTAs, rows of each in registers", {2, 64, 38, 55}, 0, true},
      {"rows of 128 bytes, 13090 of them in clusters of 16 (819 a CTA, the last 805)", {2, 0, 13090}, 16, true},
      {"C=128, 900 rows in the fewest CTAs", {2, 128, 30, 30}, 0, true},
      {"channels_last_3d 2x32x17x19x23 in the fewest CTAs", {2, 32, 17, 19, 23}, 0, true},
      {"C=64, 16x20, a CTA a sample (float32's 80 KiB in shared memory)", {4, 64, 16, 20}, 1, false},
      {"C=8, 10 rows in clusters of 3: pieces of a row, the last CTA's two", {5, 8, 10}, 3, false},
      {"C=64, 40x50, clusters of 16 (125 rows a CTA)", {3, 64, 40, 50}, 16, false},
  };
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Clustered& s : shapes) {
      std::vector<int64_t> shape = s.shape;
      if (shape[1] == 0) shape[1] = 128 / static_cast<int64_t>(dtype_size(dtype));
      Case c = channels_last_case(Pass::kForward, shape, dtype, Exchange::kCluster);
      c.options.force_ctas_per_slice = s.group;
      c.expect_ctas_per_slice = s.group;
      c.expect_ctas_per_sm = 2;
      c.expect_registers = s.registers;
      const std::string why = std::string(s.why) + ", " + dtype_name(dtype);
      expect_cluster_case_passes(c, why, [](const Case& base, const std::string& what) {
        Case shifted = base;
        ASSERT_TRUE(parse_data_spec("1e4 + randn", &shifted.data).ok());
        shifted.zero_start_slice = 1;
        expect_passes(shifted, what + ", slice 1 starts with 0 amid 1e4 + randn");
        Case bare = base;
        bare.running = Running::kNone;
        bare.stats_outputs = false;
        expect_passes(bare, what + ", no running statistics, no saved mean and rstd");
      });
    }
  }
  // The planner's: 64 samples of 2 MiB (bfloat16, 64 channels of 128x128) fill two rounds of the
  // clusters of 16 an H100 or H200 holds at two CTAs an SM, their first round staggered.
  Case planned = channels_last_case(Pass::kForward, {64, 64, 128, 128}, DType::kBFloat16, Exchange::kCluster);
  planned.options.force_exchange = Exchange::kAuto;
  planned.expect_ctas_per_slice = 16;
  planned.expect_registers = true;
  ASSERT_TRUE(parse_data_spec("1000 + randn", &planned.data).ok());
  expect_passes(planned, "the planner's clusters of 16");
}

// The resident form with one row a pass (C of half the CTA's threads or more): 480 and 261
// channels alone on the SM (480 and 261 threads), 129 at three CTAs an SM (129 threads);
// InstanceNorm and GroupNorm with SiLU (a group's channels combined in the CTA before the group's
// exchange); x and y misaligned alike (16-byte stores after a ragged head) and unlike (element by
// element).
TEST(GpuChannelsLast, ResidentOneRowAPass) {
  INORM_REQUIRE_GPU();
  struct Shape {
    std::vector<int64_t> shape;
    int ctas_per_sm;
  };
  const Shape shapes[] = {{{2, 480, 9, 11}, 1}, {{2, 261, 5, 7}, 1}, {{2, 129, 17, 19}, 3}};
  for (DType dtype : kAllDtypes) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const Shape& s : shapes) {
        for (int groups : {0, 3}) {
          for (int64_t y_offset : {1, 2}) {
            Case c = channels_last_case(pass, s.shape, dtype, Exchange::kGlobal);
            c.options.force_ctas_per_sm = s.ctas_per_sm;
            c.groups = groups;
            if (groups != 0) {
              c.running = Running::kNone;
              c.activation = Activation::kSilu;
            }
            c.x_offset = 1;
            c.y_offset = y_offset;
            expect_passes(c, std::to_string(s.shape[1]) + " channels, " + std::to_string(s.ctas_per_sm) +
                                 " CTAs an SM, groups " + std::to_string(groups) + ", y offset " +
                                 std::to_string(y_offset));
          }
        }
      }
    }
  }
}

// The resident form over channel blocks (a CTA holds every row of a block of whole slices' channels
// and exchanges nothing), forced through PlanOptions force_channel_block with exchange global:
// blocks of one 16-byte vector of channels (the narrowest: 8, 4 or 2), blocks that end ragged
// (600 = 2 x 256 + 88, 520 = 8 x 64 + 8), channels_last_3d, GroupNorm with SiLU (20 channels a
// group: blocks of lcm(20, a vector) and of 120, the last of 40; 3 channels a group: lcm(3, a
// vector)), data far from zero, two CTAs taking every block in turn (the buffer and the
// coefficient cells reused), a CTA alone on its SM (up to 512 threads), in place and repeated;
// and each block's rows over a group of CTAs (PlanOptions force_ctas_per_slice: their partials
// through L2; 255 or 256 rows, so that even float64's narrowest blocks, 128 rows a pass, leave no
// CTA of a group empty): two, three with a short last tile (255 rows of blocks of 64 over three
// CTAs of 4-row passes: 88, 88, 79), GroupNorm's slices combined across the group, one group of
// three taking every block in turn, the wide CTA in groups, channels_last_3d.
// Also the planner's own choice of it: SD UNet's GroupNorm(32) + SiLU on 640 channels (the widest
// row of whole rows' resident form is 512), at batch 4 a CTA a block, at batch 2 in groups. And
// whole rows where a CTA holds a sample and the samples take rounds (140 past the 132 SMs: no
// exchange, so no CTA waits for another).
TEST(GpuChannelsLast, ResidentChannelBlocks) {
  INORM_REQUIRE_GPU();
  struct Blocks {
    const char* why;
    std::vector<int64_t> shape;
    int64_t groups;  // 0: InstanceNorm
    int block;       // 0: the narrowest, lcm(C / groups, a 16-byte vector of the dtype)
    int64_t max_groups;
    int ctas_per_sm = 0;  // 1: alone on the SM, the wide CTA (512 threads at most)
    int group = 1;        // CTAs sharing a block's rows
  };
  const Blocks cases[] = {
      {"one vector a block", {3, 600, 5, 7}, 0, 0, 0},
      {"blocks of 200, three a sample", {3, 600, 5, 7}, 0, 200, 0},
      {"blocks of 256, the last of 88", {3, 600, 5, 7}, 0, 256, 0},
      {"blocks of 64, the last of 8, two CTAs", {3, 520, 5, 7}, 0, 64, 2},
      {"channels_last_3d, one vector a block", {2, 32, 9, 11, 13}, 0, 0, 0},
      {"GroupNorm(32) of 640 channels, the narrowest blocks, two CTAs", {2, 640, 8, 8}, 32, 0, 2},
      {"GroupNorm(32) of 640 channels, blocks of 120, the last of 40", {2, 640, 8, 8}, 32, 120, 0},
      {"GroupNorm(32) of 96 channels (3 a group)", {2, 96, 10, 10}, 32, 0, 0},
      {"one vector a block, alone on the SM (the wide CTA)", {3, 600, 5, 7}, 0, 0, 0, 1},
      {"GroupNorm(32) of 640 channels, blocks of 120, alone on the SM, two CTAs", {2, 640, 8, 8}, 32, 120, 2, 1},
      {"one vector a block, rows over two CTAs", {3, 600, 15, 17}, 0, 0, 0, 0, 2},
      {"blocks of 64, the last of 8, rows over three CTAs, the last tile short", {3, 520, 15, 17}, 0, 64, 0, 0, 3},
      {"GroupNorm(32) of 640 channels, the narrowest blocks, rows over four CTAs", {2, 640, 16, 16}, 32, 0, 0, 0, 4},
      {"GroupNorm(32) of 640 channels, blocks of 120, one group of three taking every block", {2, 640, 16, 16}, 32,
       120, 1, 0, 3},
      {"GroupNorm(32) of 96 channels (3 a group), rows over two wide CTAs", {2, 96, 10, 10}, 32, 0, 0, 1, 2},
      {"channels_last_3d, rows over three CTAs", {2, 32, 9, 11, 13}, 0, 0, 0, 0, 3},
  };
  for (DType dtype : kAllDtypes) {
    const int vector = 16 / static_cast<int>(dtype_size(dtype));
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const Blocks& b : cases) {
        Case c = channels_last_case(pass, b.shape, dtype, Exchange::kGlobal);
        c.groups = b.groups;
        if (b.groups != 0) {  // GroupNorm keeps no running stats; SiLU as the SD UNet's blocks
          c.running = Running::kNone;
          c.activation = Activation::kSilu;
        }
        const int slice_channels = b.groups != 0 ? static_cast<int>(b.shape[1] / b.groups) : 1;
        c.options.force_channel_block = b.block != 0 ? b.block : std::lcm(slice_channels, vector);
        c.options.force_ctas_per_slice = b.group > 1 ? b.group : 0;
        c.expect_ctas_per_slice = b.group;
        c.options.force_ctas_per_sm = b.ctas_per_sm;
        c.expect_ctas_per_sm = b.ctas_per_sm;
        c.max_groups = b.max_groups;
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        const std::string why = std::string(b.why) + ", blocks of " + std::to_string(c.options.force_channel_block);
        expect_passes(c, why);
        expect_passes_in_place_and_repeated(c, why);
      }
      Case unet = channels_last_case(pass, {4, 640, 16, 16}, dtype, Exchange::kAuto);
      unet.groups = 32;
      unet.running = Running::kNone;
      unet.activation = Activation::kSilu;
      unet.expect_exchange = Exchange::kGlobal;
      unet.expect_ctas_per_slice = 1;
      expect_passes(unet, "the planner's channel blocks for GroupNorm(32) + SiLU on 640 channels");
      // At batch 2 on 32x32 the 16-bit types' 32 blocks of 40 channels leave most SMs idle: the
      // planner spreads each block's rows over four CTAs (the others' narrowest blocks hold 20).
      Case spread = channels_last_case(pass, {2, 640, 32, 32}, dtype, Exchange::kAuto);
      spread.groups = 32;
      spread.running = Running::kNone;
      spread.activation = Activation::kSilu;
      spread.expect_exchange = Exchange::kGlobal;
      spread.expect_ctas_per_slice = dtype_size(dtype) == 2 ? 4 : 0;
      expect_passes(spread, "the planner's channel blocks over groups of CTAs, SD UNet's 640 channels at batch 2");
      Case many = channels_last_case(pass, {140, 512, 4, 4}, dtype, Exchange::kAuto);
      many.expect_exchange = Exchange::kGlobal;
      many.expect_ctas_per_slice = 1;
      expect_passes(many, "the planner's whole rows, a sample a CTA, for 140 samples of 512 channels (rounds)");
    }
  }
}

// A shape of the streamed tests: InstanceNorm, or GroupNorm(groups) without an affine (the plain op).
struct Streamed {
  const char* why;
  std::vector<int64_t> shape;
  int64_t groups;
};

// `pass` of `s` on the three kernels, its reduction forced in `parts` parts a sample (-1: the
// planner's); *rows: a sample's spatial positions.
Case streamed_case(Pass pass, const Streamed& s, DType dtype, int64_t parts, int64_t* rows) {
  *rows = 1;
  for (std::size_t d = 2; d < s.shape.size(); ++d) *rows *= s.shape[d];
  Case c = channels_last_case(pass, s.shape, dtype, Exchange::kNone);
  c.groups = s.groups;
  if (s.groups != 0) {
    c.affine = false;
    c.running = Running::kNone;
  }
  c.options.force_stream_parts = static_cast<int>(parts);
  if (parts >= 0) c.expect_stream_parts = parts;
  return c;
}

// c on x of 1000 + randn and 1e4 + randn (the backward's d = x - mean keeps its digits); in the
// forward with a slice starting with 0 amid 1e4 + randn (channel 1 of sample 0, or GroupNorm's
// slice 0: its parts' one pass may have lost digits, so the CTA reads them again from global
// memory); with a NaN slice; where `two_ctas`, by two CTAs taking every part in
// turn (the ring's stages and phases carried across parts and samples); in place and three runs
// with the same bits.
void expect_streamed_passes(Case c, const std::string& why, bool two_ctas) {
  for (const char* data : {"1000 + randn", "1e4 + randn"}) {
    ASSERT_TRUE(parse_data_spec(data, &c.data).ok());
    expect_passes(c, why + ", " + data);
  }
  if (c.pass == Pass::kForward) {
    c.zero_start_slice = c.groups != 0 ? 0 : 1;
    expect_passes(c, why + ", its slice " + std::to_string(c.zero_start_slice) + " starts with 0 amid 1e4 + randn");
    c.zero_start_slice = -1;
  }
  c.data = DataSpec{};
  c.nan_slice = 3;
  expect_passes(c, why + ", NaN in slice 3");
  c.nan_slice = -1;
  if (two_ctas) {
    c.max_groups = 2;
    expect_passes(c, why + ", two CTAs");
    c.max_groups = 0;
  }
  expect_passes_in_place_and_repeated(c, why);
}

// The three kernels' reduction streamed (Plan::stream_parts, forced: the planner streams x of 128
// MiB or more), both passes, in one part a sample, in three (rows split unevenly), and in a row a
// part (a stage of one row); by tiles, and the planner's plan, beside them. Shapes: C = 64
// (cl-bf16's plan, smaller), channels_last_3d with odd extents (C = 32), C = 128 (32 runs a row: no
// shuffles between lanes), C = 8 (two runs: five shuffles), and GroupNorm(8) without an affine
// (the plain op; a slice's eight channels' partials combined by the finish kernel); each on
// expect_streamed_passes' data, two CTAs taking every part. float64 reduces by tiles. A slice
// whose first part lies far from its mean (below).
TEST(GpuChannelsLast, StreamedReduction) {
  INORM_REQUIRE_GPU();
  const Streamed shapes[] = {
      {"C=64, 128x128", {2, 64, 128, 128}, 0},
      {"channels_last_3d 2x32x17x19x23", {2, 32, 17, 19, 23}, 0},
      {"C=128, 9x11", {3, 128, 9, 11}, 0},
      {"C=8, 1000 rows", {5, 8, 1000}, 0},
      {"GroupNorm(8) of 64 channels, no affine", {2, 64, 40, 50}, 8},
  };
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (const Streamed& s : shapes) {
        int64_t rows = 0;
        streamed_case(pass, s, dtype, -1, &rows);
        for (int64_t parts : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{3}, rows}) {
          const Case c = streamed_case(pass, s, dtype, parts, &rows);
          const std::string why = std::string(pass == Pass::kForward ? "forward, " : "backward, ") + s.why +
                                  (parts < 0    ? ", the planner's parts"
                                   : parts == 0 ? ", by tiles"
                                                : ", " + std::to_string(parts) + " parts");
          if (parts < 0) {  // the planner's (tiles below 128 MiB of x: Planner.ChannelsLastStream)
            expect_passes(c, why);
            continue;
          }
          expect_streamed_passes(c, why, /*two_ctas=*/true);
        }
      }
    }
    Case float64 = channels_last_case(pass, {2, 64, 128, 128}, DType::kFloat64, Exchange::kNone);
    float64.expect_stream_parts = 0;
    expect_passes(float64, "float64 by tiles");
  }
  // A slice whose first part lies far from its mean: slice 1 of x = 8196 but a first 0, in parts of
  // one row. The combined mean's high part must be the whole mean's (8195.9976), not the first
  // part's (0): that left the mean to the float32 low part, rounded by half its ulp (4.9e-4), and y
  // off by 1.1e-4 at mean / sigma = 1832 (0.5 ulp of the shift at most against it: 4.8e-5 or more,
  // tolerance 1e-5). Constant data and no affine fix those roundings; 3,357,000 rows put the shift
  // just below 2048, where its ulp is the smallest against the mean's error.
  Case far_first = channels_last_case(Pass::kForward, {1, 4, 3357000}, DType::kFloat32, Exchange::kNone);
  far_first.affine = false;
  far_first.options.force_stream_parts = 3357000;
  far_first.expect_stream_parts = 3357000;
  far_first.zero_start_slice = 1;
  far_first.data = DataSpec{Distribution::kUniform, 8196.0, 0.0};
  expect_passes(far_first, "forward, a first part of one row of 0 amid 8196");
}

// The streamed kernel applying too (Plan::stream_applies, forced: PlanOptions force_stream_applies),
// both passes, in the planner's parts for it (the most of one round, up to 2048 partials a CTA or
// a CTA an SM), in one part and in three (rows split unevenly, each part's last stage short of
// rows), where each part holds a ring of stages. Shapes as StreamedReduction's, larger, and two
// edges: a part of exactly the ring's stages (none moved again) and of three rows more (the short
// last stage held, the first moved again); each on expect_streamed_passes' data. The backward
// without dx (weight gradients only) stops after its combine.
TEST(GpuChannelsLast, StreamedApply) {
  INORM_REQUIRE_GPU();
  const Streamed shapes[] = {
      {"C=64, 128x128", {2, 64, 128, 128}, 0},
      {"channels_last_3d 2x32x17x19x23", {2, 32, 17, 19, 23}, 0},
      {"C=128, 60x60", {3, 128, 60, 60}, 0},
      {"C=8, 12000 rows", {5, 8, 12000}, 0},
      {"GroupNorm(8) of 64 channels, no affine", {2, 64, 60, 70}, 8},
      // 2048 partials a CTA would leave the SMs idle: the planner's parts are a CTA an SM (132 on
      // the H200; Planner.ChannelsLastStreamApplies holds the rule).
      {"one sample of 128 channels, a CTA an SM", {1, 128, 42245}, 0},
  };
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    const int inputs = pass == Pass::kForward ? 1 : 2;
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      // Rows of C channels a stage (config.h: 16 KiB a stage, shared by the inputs), five a ring.
      const auto stage_rows_of = [&](int64_t channels) {
        return detail::channels_last_stream_input_bytes(inputs) / (channels * static_cast<int64_t>(dtype_size(dtype)));
      };
      const int64_t stage_rows = stage_rows_of(64);
      constexpr int kStages = detail::kChannelsLastStreamStages;
      std::vector<Streamed> cases(std::begin(shapes), std::end(shapes));
      cases.push_back({"a part of the ring's stages, C=64", {2, 64, kStages * stage_rows}, 0});
      cases.push_back({"a part of the ring's stages and 3 rows, C=64", {2, 64, kStages * stage_rows + 3}, 0});
      for (const Streamed& s : cases) {
        for (int64_t parts : {int64_t{-1}, int64_t{1}, int64_t{3}}) {
          int64_t rows = 0;
          Case c = streamed_case(pass, s, dtype, parts, &rows);
          if (rows / std::max<int64_t>(parts, 1) < kStages * stage_rows_of(s.shape[1])) continue;  // short of a ring
          c.options.force_stream_applies = 1;
          c.expect_stream_applies = true;
          const std::string why = std::string(pass == Pass::kForward ? "forward, " : "backward, ") + s.why +
                                  (parts < 0 ? ", the planner's parts" : ", " + std::to_string(parts) + " parts");
          expect_streamed_passes(c, why, /*two_ctas=*/false);  // its CTAs take a part each, all at once
          if (pass == Pass::kBackward && parts == 3 && s.groups == 0) {
            c.want_dx = false;
            expect_passes(c, why + ", weight gradients only");
          }
        }
      }
    }
  }
}

// The applying streamed kernel's L2 hints (Plan::evict_first, set on the planner's plan as a
// caller may: not the planner's) where they mark some of each part's rows, those past the rings and
// the share of 32 MiB of L2 (config.h kChannelsLastStreamL2KeepBytes): 64 MiB of bfloat16 x forward
// in 8 parts a sample (each part's first 384 rows of 2048 marked), 32 MiB of x and of dy backward
// in 16 (192 of 1024).
TEST(GpuChannelsLast, StreamedApplyHints) {
  INORM_REQUIRE_GPU();
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    const int64_t batch = pass == Pass::kForward ? 32 : 16;
    Case c = channels_last_case(pass, {batch, 64, 128, 128}, DType::kBFloat16, Exchange::kNone);
    c.expect_stream_parts = pass == Pass::kForward ? 8 : 16;
    c.expect_stream_applies = true;
    c.set_evict_first = true;
    ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
    expect_passes(c, std::string(pass == Pass::kForward ? "forward" : "backward") + " with L2 hints");
  }
}

// Tiles forced smaller than the planner's (PlanOptions force_channel_block, force_tile_rows): many
// tiles a channel, a channel block that does not divide C, and GroupNorm's groups across blocks
// with SiLU (600 channels in blocks of 96: 20 channels a group, some groups split between two blocks),
// two CTAs taking every item in turn. A group's 20 x 13 tile partials take the finish kernel's CTA
// a slice (config.h kChannelsLastFinishWarpParts), an InstanceNorm channel's 13 a warp.
TEST(GpuChannelsLast, ForcedTiles) {
  INORM_REQUIRE_GPU();
  for (DType dtype : kAllDtypes) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (int groups : {0, 30}) {
        Case c = channels_last_case(pass, {2, 600, 9, 11}, dtype, Exchange::kNone);
        c.groups = groups;
        if (groups != 0) {  // GroupNorm keeps no running stats; SiLU as the SD UNet's blocks
          c.running = Running::kNone;
          c.activation = Activation::kSilu;
        }
        c.options.force_channel_block = 96;
        c.options.force_tile_rows = 7;  // whole passes of two rows: 8 rows, 13 tiles a channel
        c.max_groups = 2;
        ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
        expect_passes(c, groups ? "GroupNorm(30), blocks of 96 x 8 rows" : "blocks of 96 x 8 rows");
      }
    }
  }
}

}  // namespace
}  // namespace inorm::testing
