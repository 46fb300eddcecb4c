// GoogleTest expectations over run_case (case_runner.h), shared by the GPU tests of every pass.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "case_runner.h"
#include "config.h"
#include "plan_internal.h"

namespace inorm::testing {

inline void expect_passes(const Case& c, const std::string& why) {
  const Outcome outcome = run_case(c);
  std::string failures;
  for (const std::string& f : outcome.failures) failures += "\n  " + f;
  EXPECT_TRUE(outcome.failures.empty()) << why << ": " << pass_name(c.pass) << " " << describe(c) << " ["
                                        << outcome.plan << "] seed " << outcome.seed
                                        << " (rerun: INORM_CASE_SEED=" << outcome.seed << ")" << failures;
}

// `c` again in place, and three times (without a running-stat update, which would change from run
// to run) with the same bits.
inline void expect_passes_in_place_and_repeated(const Case& c, const std::string& why) {
  Case in_place = c;
  in_place.in_place = true;
  expect_passes(in_place, why + ", in place");
  Case repeated = c;
  if (repeated.running == Running::kUpdate) repeated.running = Running::kNone;
  repeated.bitwise_repeats = 3;
  expect_passes(repeated, why + ", three runs, same bits");
}

// The channels_last forms a shape (N, C, spatial...) runs in, each forced through
// PlanOptions.force_exchange: the resident one (kGlobal) where a CTA's threads hold whole rows
// (C <= 512) and there is a batch to hold, and the three kernels (kNone).
inline std::vector<Exchange> channels_last_forms(const std::vector<int64_t>& shape) {
  if (shape[0] == 0 || shape[1] > 512) return {Exchange::kNone};
  return {Exchange::kGlobal, Exchange::kNone};
}

inline constexpr DType kAllDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};

// A case of `pass` forced onto `path`, with affine parameters (a running-stat update in the
// forward), and every tensor one element off 16-byte alignment, so that vector accesses start at
// ragged heads.
inline Case forced_misaligned_case(Pass pass, std::vector<int64_t> shape, DType dtype, Path path) {
  Case c;
  c.pass = pass;
  c.shape = std::move(shape);
  c.dtype = dtype;
  c.affine = true;
  if (pass == Pass::kForward) c.running = Running::kUpdate;
  c.x_offset = 1;
  c.y_offset = 1;
  c.options.force_path = path;
  c.expect_path = path;
  return c;
}

struct Shape {
  const char* why;
  std::vector<int64_t> shape;
};

// split_pipelined hands out the reduction items of the first slices alone, then reduction and
// elementwise items in turn, then the elementwise items left (plan_internal.h pipelined_item).
// Forced on tensors with more items than the lead, so that every phase runs: one part a slice
// (1000 slices, a slice boundary at every pair), and parts with a ragged last one, on views off
// 16-byte alignment, in every dtype. The last parts of a slice may be resident (written by the CTA
// that reduced them): the planner's count (half the parts), none, and one (every part of a
// one-part slice, else the ragged last); each slice's elementwise items walking forward and back.
// float32 also in place (an elementwise item writes its part only after every read of it) and
// repeated.
inline void expect_split_pipelined_orders_pass(Pass pass) {
  const Shape shapes[] = {
      {"1000 slices of one part", {1, 1000, 4097}},
      {"600 slices of 1-5 parts, the last ragged", {2, 300, 20001}},
  };
  for (DType dtype : kAllDtypes) {
    for (const Shape& s : shapes) {
      for (int resident : {-1, 0, 1}) {
        for (int walk_back : {0, 1}) {
          Case c = forced_misaligned_case(pass, s.shape, dtype, Path::kSplitPipelined);
          c.options.force_resident_parts = resident;
          c.options.force_walk_back = walk_back;
          ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
          const std::string why = std::string(s.why) + ", resident " + std::to_string(resident) +
                                  (walk_back == 1 ? ", walking back" : "");
          expect_passes(c, why + ", " + dtype_name(dtype));
          if (dtype == DType::kFloat32) expect_passes_in_place_and_repeated(c, why);
        }
      }
    }
  }
}

// Slices no one cluster holds span clusters of two (planner.cpp plan_spanning_pairs) from
// kSharedPairSpanMinRounds* rounds of the pairs this device holds at two CTAs an SM; one slice
// fewer keeps the plan they replace. The planner's own plans, offset data, GroupNorm's backward with
// weight gradients (sums per channel) among them; a view off 16-byte alignment takes no register
// part and so no pairs. The pairs a slice are the H200's (227 KiB of shared memory a block).
inline void expect_slices_span_pairs(Pass pass) {
  DeviceLimits limits;
  ASSERT_TRUE(query_device_limits(0, &limits).ok());
  ASSERT_TRUE(detail::fill_resident_clusters(&limits).ok());
  const int64_t pairs = limits.resident_clusters[detail::kSharedRegisterCtasPerSm][detail::kSharedPairClusterCtas];
  const int min_rounds =
      pass == Pass::kForward ? detail::kSharedPairSpanMinRoundsForward : detail::kSharedPairSpanMinRoundsBackward;
  struct Span {
    const char* why;
    int64_t channels;  // a slice's (GroupNorm's: one group of all of them)
    int64_t spatial;
    DType dtype;
    int clusters;
    Exchange below;  // the plan one slice fewer keeps: split_pipelined (kAuto) or a group through L2
    int64_t x_offset = 0;
    Activation activation = Activation::kNone;  // one makes the forward's general op
  };
  const std::vector<Span> spans =
      pass == Pass::kForward
          ? std::vector<Span>{
                {"4 MiB float32 slices (mid-4mib-fp32's)", 1, 1048576, DType::kFloat32, 15, Exchange::kAuto},
                {"1.5 MiB bfloat16 slices", 1, 786432, DType::kBFloat16, 6, Exchange::kAuto},
                {"4 MiB float64 slices", 1, 524288, DType::kFloat64, 15, Exchange::kAuto},
                {"4 MiB float32 slices of a misaligned view: no pairs", 1, 1048576, DType::kFloat32, 0,
                 Exchange::kAuto, 1},
                // The general op: an activation; GroupNorm's affine over chunks of two channels.
                {"4 MiB float32 slices + ReLU", 1, 1048576, DType::kFloat32, 15, Exchange::kAuto, 0,
                 Activation::kRelu},
                {"2 MiB bfloat16 GroupNorm slices of 32 channels + SiLU (sd-vae-mid-gn-silu's)", 32, 32768,
                 DType::kBFloat16, 8, Exchange::kAuto, 0, Activation::kSilu},
                // Past 16 pairs (config.h kSharedPairSpanMaxClustersForward): the spanning kernel's
                // wider inbox.
                {"6 MiB bfloat16 slices (mid-6mib-bf16's)", 1, 3145728, DType::kBFloat16, 22, Exchange::kAuto},
                {"7 MiB bfloat16 slices: the forward's widest", 1, 3670016, DType::kBFloat16, 26, Exchange::kAuto},
            }
          : std::vector<Span>{
                {"2 MiB float32 slices", 1, 524288, DType::kFloat32, 15, Exchange::kAuto},
                {"1.1 MiB bfloat16 slices (mid-1mib-bf16's)", 1, 589824, DType::kBFloat16, 9, Exchange::kGlobal},
                {"1 MiB GroupNorm slices of 16 channels, weight gradients", 16, 16384, DType::kFloat32, 8,
                 Exchange::kGlobal},
                // Past 16 pairs (config.h kSharedPairSpanMaxClustersBackward): the spanning kernel's
                // wider inbox.
                {"3 MiB float16 slices (mid-3mib-fp16's)", 1, 1404928, DType::kFloat16, 20, Exchange::kAuto},
                {"4 MiB float32 slices (mid-4mib-fp32's)", 1, 1048576, DType::kFloat32, 30, Exchange::kAuto},
            };
  for (const Span& s : spans) {
    const int64_t fill = s.clusters > 0 ? min_rounds * (pairs / s.clusters) : 16;
    for (const int64_t slices : {fill, fill - 1}) {
      Case c;
      c.pass = pass;
      c.shape = {slices, s.channels, s.spatial};
      c.groups = s.channels > 1 ? 1 : 0;
      c.dtype = s.dtype;
      c.affine = true;
      c.x_offset = c.y_offset = s.x_offset;
      c.activation = s.activation;
      c.negative_slope = 0.2;
      ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
      const bool spans_pairs = s.clusters > 0 && slices == fill;
      if (spans_pairs) {
        c.expect_path = Path::kSharedResident;
        c.expect_ctas_per_slice = s.clusters * detail::kSharedPairClusterCtas;
        c.expect_slice_clusters = s.clusters;
        c.expect_ctas_per_sm = detail::kSharedRegisterCtasPerSm;
        c.expect_registers = true;
        if (s.activation != Activation::kNone) c.expect_general_op = true;
      } else {
        c.expect_path = s.below == Exchange::kGlobal ? Path::kSharedResident : Path::kSplitPipelined;
        c.expect_exchange = s.below;
      }
      const std::string why = std::string(s.why) + ", " + std::to_string(slices) + " slices";
      expect_passes(c, why);
      if (spans_pairs && s.dtype == DType::kFloat32 && s.channels == 1) expect_passes_in_place_and_repeated(c, why);
    }
  }
}

// The largest slice the plain op holds in group_registers' vector configurations, with `inputs`
// inputs a lane (x; x and dy): the planner-boundary tests' edge.
inline int64_t largest_group_vector_slice(DType dtype, int inputs) {
  const int elem = static_cast<int>(dtype_size(dtype));
  const int acc = static_cast<int>(dtype_size(stats_dtype(dtype)));
  int64_t largest = 0;
  for (const detail::GroupConfig& config : detail::kGroupConfigs) {
    if (config.vector && detail::group_config_fits(config, elem, acc, inputs, false)) {
      largest = std::max<int64_t>(largest, int64_t{config.group} * config.items * (16 / elem));
    }
  }
  return largest;
}

// group_registers with a forced number of lanes a slice: 16 (inorm-bench's lanes16 variant; the
// planner takes 32) on slices of exactly 16 x 4 vectors, and 64 (two warps, the planner's past a
// warp's 8 vectors a lane for the plain op) on slices of 64 x 8 vectors and one vector less (the
// last lane's last item absent), 15 slices (the last CTA's last pair of warps idle); every dtype,
// offset data, float32 also in place and repeated. InstanceNorm with a weight and bias per channel;
// and GroupNorm over two channels a slice without them (with them it runs the general op, whose
// backward keeps to one warp: GpuActivation.GroupRegistersGeneralForward), as the two warps'
// exchange serves every reduction of the op. CTAs smaller than kGroupCtaThreads: a warp of two
// 16-lane slices (the 15th slice's CTA has its second group idle) and two warps of one slice.
inline void expect_forced_lane_groups_pass(Pass pass) {
  struct Forced {
    int lanes;
    int items;
    int64_t vectors_short;
    int64_t groups;   // of 10 channels (0: InstanceNorm of 5)
    int cta_threads;  // 0: the planner's
  };
  const Forced forced[] = {{16, 4, 0, 0, 0}, {64, 8, 0, 0, 0}, {64, 8, 1, 0, 0},
                           {64, 8, 0, 5, 0}, {16, 4, 0, 0, 32}, {64, 8, 1, 0, 64}};
  for (const Forced& f : forced) {
    for (DType dtype : kAllDtypes) {
      const int64_t vec = 16 / static_cast<int64_t>(dtype_size(dtype));
      const int64_t slice_len = (int64_t{f.lanes} * f.items - f.vectors_short) * vec;
      Case c;
      c.pass = pass;
      c.shape = f.groups > 0 ? std::vector<int64_t>{3, 10, slice_len / 2} : std::vector<int64_t>{3, 5, slice_len};
      c.dtype = dtype;
      c.affine = f.groups == 0;
      c.groups = f.groups;
      if (f.groups > 0) c.running = Running::kNone;  // GroupNorm has none
      c.options.force_path = Path::kGroupRegisters;
      c.options.force_group_lanes = f.lanes;
      c.options.force_group_cta_threads = f.cta_threads;
      c.expect_path = Path::kGroupRegisters;
      ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
      const std::string why = std::to_string(f.lanes) + " lanes a slice of " + std::to_string(slice_len) +
                              (f.groups > 0 ? ", GroupNorm" : "") +
                              (f.cta_threads > 0 ? ", CTAs of " + std::to_string(f.cta_threads) : "");
      expect_passes(c, why + ", " + dtype_name(dtype));
      if (dtype == DType::kFloat32) expect_passes_in_place_and_repeated(c, why);
    }
  }
}

// The edge shapes both passes are tested on in every dtype, each with why it is there.
inline const std::vector<Shape>& edge_shapes() {
  static const std::vector<Shape> shapes = {
      {"S=2: the smallest slice with statistics, a 4-lane group", {3, 5, 2}},
      {"S=3: odd and shorter than any vector", {2, 3, 3}},
      {"S=4097: one past a power of two, slices start off 16-byte boundaries", {2, 3, 4097}},
      {"127x129: odd 2D extents, ragged ends in every slice", {2, 3, 127, 129}},
      {"N*C=1: a single slice does all the work", {1, 1, 1000}},
      {"1x3x2048x2048: three 16 MiB slices, larger than the chip holds", {1, 3, 2048, 2048}},
      {"256x256x16x16: many tiny slices, a warp each", {256, 256, 16, 16}},
      {"2x4x17x19x23: 3D with odd extents", {2, 4, 17, 19, 23}},
      {"N=0: an empty batch (the backward's dweight and dbias are zeros)", {0, 3, 8, 8}},
      {"2x4x512x512: each slice spread over several CTAs", {2, 4, 512, 512}},
  };
  return shapes;
}

// The plans EveryPathForced tests force onto shapes they would not be chosen for: every group size
// the planner may pick small and large, with each exchange (clusters, the planner's choice on
// those shapes; L2; a cluster of one CTA; wider than a cluster; a slice over several clusters),
// and split_pipelined.
struct ForcedPlan {
  Path path;
  int ctas_per_slice;
  Exchange exchange = Exchange::kAuto;
  int slice_clusters = 0;  // PlanOptions::force_slice_clusters

  PlanOptions options() const {
    PlanOptions o;
    o.force_path = path;
    o.force_ctas_per_slice = ctas_per_slice;
    o.force_exchange = exchange;
    o.force_slice_clusters = slice_clusters;
    return o;
  }
  std::string describe() const {
    return std::string("forced to ") + path_name(path) + " ctas " + std::to_string(ctas_per_slice) + " exchange " +
           exchange_name(exchange) + (slice_clusters > 1 ? " in " + std::to_string(slice_clusters) + " clusters" : "");
  }
};
inline const std::vector<ForcedPlan>& forced_plans() {
  static const std::vector<ForcedPlan> plans = {
      {Path::kSharedResident, 1},  {Path::kSharedResident, 2},
      {Path::kSharedResident, 3},  {Path::kSharedResident, 5},
      {Path::kSharedResident, 12}, {Path::kSharedResident, 16},
      {Path::kSharedResident, 1, Exchange::kCluster},
      {Path::kSharedResident, 3, Exchange::kGlobal},
      {Path::kSharedResident, 16, Exchange::kGlobal},
      {Path::kSharedResident, 64},  // wider than a cluster: through L2
      // A slice over clusters: two of three CTAs; eight of two, whose last clusters hold empty chunks
      // on short slices.
      {Path::kSharedResident, 6, Exchange::kAuto, 2},
      {Path::kSharedResident, 16, Exchange::kCluster, 8},
      {Path::kSplitPipelined, 0}};
  return plans;
}

// Each forced plan on each shape and dtype, every tensor one element off 16-byte alignment.
inline void expect_every_forced_plan_passes(Pass pass, const std::vector<Shape>& shapes) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat64}) {
    for (const Shape& s : shapes) {
      for (const ForcedPlan& f : forced_plans()) {
        Case c = forced_misaligned_case(pass, s.shape, dtype, f.path);
        c.options = f.options();
        c.expect_exchange = f.exchange;
        expect_passes(c, std::string(s.why) + " " + f.describe());
      }
    }
  }
}

}  // namespace inorm::testing
