// The plans compute-sanitizer checks (scripts/gpu-check.sh, stage "sanitize"): every kernel family
// and every exchange of both passes, each on the smallest shape that reaches it, checked in full
// like every other GPU test. Small enough to run under memcheck, racecheck, synccheck and initcheck
// in a few minutes.
//
// synccheck runs every test here but ManyClustersOfLargeChunks: with several clusters of CTAs that
// hold large chunks resident at once, the kernel faults under synccheck alone (an illegal address,
// no report), while memcheck, racecheck and initcheck pass the same launch and a grid of one such
// cluster passes synccheck; dev/synccheck_cluster_repro.cu reproduces it without the library.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "case_runner.h"
#include "config.h"
#include "expect_case.h"

namespace inorm::testing {
namespace {

struct Reach {
  const char* why;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  Path path = Path::kAuto;
  int ctas_per_slice = 0;
  int ctas_per_sm = 0;
  Exchange exchange = Exchange::kAuto;
  int64_t max_groups = 0;
  Running running = Running::kNone;
  int64_t offset = 0;
  Layout layout = Layout::kContiguous;
  int64_t groups = 0;  // GroupNorm's
  int slice_clusters = 0;
  int stream_parts = -1;  // PlanOptions force_stream_parts
  int stream_applies = -1;  // PlanOptions force_stream_applies
};

void expect_plan_passes(Pass pass, const Reach& r, std::optional<bool> registers = std::nullopt,
                        Activation activation = Activation::kNone) {
  Case c;
  c.pass = pass;
  c.shape = r.shape;
  c.dtype = r.dtype;
  c.affine = true;  // dweight and dbias in the backward: the channel reduction runs
  c.running = r.running;
  c.layout = r.layout;
  c.x_offset = c.y_offset = r.offset;
  force_plan(&c, r.path, r.ctas_per_slice, r.ctas_per_sm, r.exchange);
  c.options.force_slice_clusters = r.slice_clusters;
  c.options.force_stream_parts = r.stream_parts;
  c.options.force_stream_applies = r.stream_applies;
  c.max_groups = r.max_groups;
  c.expect_registers = registers;
  c.activation = activation;
  c.negative_slope = 0.2;
  c.groups = r.groups;
  ASSERT_TRUE(parse_data_spec("1000 + randn", &c.data).ok());
  expect_passes(c, std::string(r.why) + (activation == Activation::kNone ? "" : std::string(", ") +
                                                                                   activation_name(activation)));
}

// The plans both passes share, on 4097-element slices unless said otherwise (a ragged tail).
std::vector<Reach> plans_of_every_family(Pass pass) {
  std::vector<Reach> reaches = {
      {"group_registers, scalar (a misaligned view)", {2, 3, 100}, DType::kFloat32, Path::kGroupRegisters, 0, 0,
       Exchange::kAuto, 0, Running::kNone, 1},
      {"group_registers, vectors", {2, 3, 1024}, DType::kFloat32, Path::kGroupRegisters},
      {"group_registers, float64", {2, 3, 64}, DType::kFloat64, Path::kGroupRegisters},
      // The general op's fullest lanes (256 bytes of float32 values): 8 vectors of x in the forward,
      // 4 of x and 4 of dy in the backward.
      {"group_registers, bfloat16, the fullest lanes of every op", {2, 3, pass == Pass::kForward ? 2048 : 1024},
       DType::kBFloat16, Path::kGroupRegisters},
      {"eval mode with running stats", {2, 3, 100}, DType::kFloat16, Path::kAuto, 0, 0, Exchange::kAuto, 0,
       Running::kEval},
      {"shared_resident, one CTA a slice, no exchange", {2, 3, 4097}, DType::kFloat32, Path::kSharedResident, 1, 0,
       Exchange::kNone},
      {"shared_resident, 3 CTAs through L2", {2, 3, 4097}, DType::kBFloat16, Path::kSharedResident, 3, 0,
       Exchange::kGlobal},
      {"shared_resident, 17 CTAs through L2 (wider than a cluster)", {2, 3, 4097}, DType::kFloat32,
       Path::kSharedResident, 17, 0, Exchange::kGlobal},
      {"shared_resident, in order from the counter: 4 rounds of one cluster", {4, 1, 8192}, DType::kFloat32,
       Path::kSharedResident, 2, 3, Exchange::kCluster, 1},
      {"shared_resident, the first round staggered: two clusters of two over three rounds", {6, 1, 8192},
       DType::kFloat32, Path::kSharedResident, 2, 3, Exchange::kCluster, 2},
      {"shared_resident, a slice over three clusters of two (misaligned)", {2, 3, 4097}, DType::kFloat32,
       Path::kSharedResident, 6, 2, Exchange::kCluster, 0, Running::kNone, 1, Layout::kContiguous, 0, 3},
      {"shared_resident, a slice over 32 clusters of two (the spanning kernel's fullest inbox), two rounds",
       {2, 3, 70000}, DType::kFloat32, Path::kSharedResident, 2 * detail::kSharedMaxSliceClusters, 2,
       Exchange::kCluster, 0, Running::kNone, 0, Layout::kContiguous, 0, detail::kSharedMaxSliceClusters},
      {"split_pipelined, one part a slice (misaligned)", {2, 3, 4097}, DType::kFloat32, Path::kSplitPipelined, 0, 0,
       Exchange::kAuto, 0, Running::kNone, 1},
      {"split_pipelined, three parts a slice", {1, 2, 40000}, DType::kFloat32, Path::kSplitPipelined},
      {"split_pipelined, float64", {1, 2, 9000}, DType::kFloat64, Path::kSplitPipelined},
      {"channels_last's three kernels, 3 channels (the CTA's last thread idle), two tiles (misaligned)", {2, 3, 5600},
       DType::kFloat32, Path::kChannelsLast, 0, 0, Exchange::kNone, 0, Running::kNone, 1, Layout::kChannelsLast},
      {"channels_last's three kernels, bfloat16 whole rows of 16 bytes, every tensor aligned (no ragged head), "
       "a last tile ending mid-pass",
       {2, 8, 5601}, DType::kBFloat16, Path::kChannelsLast, 0, 0, Exchange::kNone, 0, Running::kNone, 0,
       Layout::kChannelsLast},
      {"channels_last resident, 3 channels, a group of CTAs a sample, one group for both (misaligned)", {2, 3, 40000},
       DType::kFloat32, Path::kChannelsLast, 0, 0, Exchange::kGlobal, 1, Running::kNone, 1, Layout::kChannelsLast},
      {"channels_last's three kernels, float64, 600 channels in three blocks", {1, 600, 30}, DType::kFloat64,
       Path::kChannelsLast, 0, 0, Exchange::kNone, 0, Running::kNone, 0, Layout::kChannelsLast},
      {"channels_last resident, float64 blocks of 6 channels, each CTA alone, two CTAs taking all 100", {1, 600, 30},
       DType::kFloat64, Path::kChannelsLast, 0, 0, Exchange::kGlobal, 2, Running::kNone, 0, Layout::kChannelsLast},
      {"channels_last resident, channel blocks over groups of three CTAs (partials through L2), two groups taking "
       "every block", {1, 600, 200}, DType::kBFloat16, Path::kChannelsLast, 3, 0, Exchange::kGlobal, 2,
       Running::kNone, 0, Layout::kChannelsLast},
      {"channels_last in eval mode", {2, 5, 40}, DType::kBFloat16, Path::kAuto, 0, 0, Exchange::kAuto, 0,
       Running::kEval, 0, Layout::kChannelsLast},
  };
  if (pass == Pass::kForward) {
    reaches.push_back({"running-stat update (channel reduction)", {3, 2, 4097}, DType::kFloat32, Path::kAuto, 0, 0,
                       Exchange::kAuto, 0, Running::kUpdate});
  }
  // The reduction streamed (Plan::stream_parts), three parts a sample, two CTAs taking every part in
  // turn: the ring's stages and phases carried across parts and samples.
  reaches.push_back({"channels_last's reduction streamed in three parts a sample by two CTAs", {2, 8, 5601},
                     DType::kBFloat16, Path::kChannelsLast, 0, 0, Exchange::kNone, 2, Running::kNone, 0,
                     Layout::kChannelsLast, 0, 0, 3});
  // The streamed kernel applying too (Plan::stream_applies), three parts a sample of 5333 rows: a
  // ring of five stages (1024 rows forward, 512 of x and of dy backward) and more, so each part's
  // first stage moves again; the forward's running stats written by each sample's first part.
  reaches.push_back({"channels_last's streamed kernel applying, three parts a sample", {2, 8, 16000},
                     DType::kBFloat16, Path::kChannelsLast, 0, 0, Exchange::kNone, 0,
                     pass == Pass::kForward ? Running::kUpdate : Running::kNone, 0, Layout::kChannelsLast, 0, 0, 3,
                     1});
  return reaches;
}

// group_registers' fullest lanes, not among the plans of every family: 16 vectors of float32 a lane
// (the forward's 16 of x, the backward's 8 of x and 8 of dy), and two warps a slice, their sums
// through shared memory; the forward's two warps also with an activation and GroupNorm's channel
// affine (the general op holds at most 8 vectors a lane, its backward in one warp: config.h
// group_config_fits).
void expect_full_group_lanes_pass(Pass pass) {
  const Reach sixteen{"group_registers, 16 vectors a lane", {2, 3, pass == Pass::kForward ? 2048 : 1024},
                      DType::kFloat32, Path::kGroupRegisters};
  const Reach two_warps{"group_registers, two warps a slice", {2, 3, 4096}, DType::kBFloat16, Path::kGroupRegisters};
  expect_plan_passes(pass, sixteen);
  expect_plan_passes(pass, two_warps);
  if (pass == Pass::kForward) {
    expect_plan_passes(pass, two_warps, std::nullopt, Activation::kLeakyRelu);
    Reach grouped{"group_registers, two warps a slice of two channels", {2, 4, 2044}, DType::kBFloat16,
                  Path::kGroupRegisters};
    grouped.groups = 2;
    expect_plan_passes(pass, grouped, std::nullopt, Activation::kSilu);
  }
}

// Clusters of every size the planner may pick, on small chunks.
void expect_every_cluster_size_passes(Pass pass) {
  for (int ctas = 2; ctas <= detail::kSharedMaxClusterCtas; ++ctas) {
    expect_plan_passes(pass, {"a cluster exchange", {2, 1, 4097}, DType::kFloat32, Path::kSharedResident, ctas, 0,
                              Exchange::kCluster});
  }
}

TEST(GpuSanitize, ForwardPlans) {
  INORM_REQUIRE_GPU();
  for (const Reach& r : plans_of_every_family(Pass::kForward)) expect_plan_passes(Pass::kForward, r);
  expect_full_group_lanes_pass(Pass::kForward);
  expect_every_cluster_size_passes(Pass::kForward);
  // channels_last's cluster form: one cluster of two taking three samples, 440 rows of each CTA's
  // 7000 in its threads' registers (a row of 16 bytes: 6560 in its shared memory), the running
  // statistics updated.
  expect_plan_passes(Pass::kForward, {"channels_last's cluster form, one cluster of two over three samples",
                                      {3, 8, 14000}, DType::kBFloat16, Path::kChannelsLast, 2, 0, Exchange::kCluster,
                                      1, Running::kUpdate, 0, Layout::kChannelsLast},
                     /*registers=*/true);
}

TEST(GpuSanitize, BackwardPlans) {
  INORM_REQUIRE_GPU();
  for (const Reach& r : plans_of_every_family(Pass::kBackward)) expect_plan_passes(Pass::kBackward, r);
  expect_full_group_lanes_pass(Pass::kBackward);
  expect_every_cluster_size_passes(Pass::kBackward);
  // channels_last's cluster form: one cluster of three taking three samples (its cells alternating
  // and its pieces refilled across samples), the last CTA's rows short.
  expect_plan_passes(Pass::kBackward, {"channels_last's cluster form, one cluster of three over three samples",
                                       {3, 8, 1001}, DType::kBFloat16, Path::kChannelsLast, 3, 0, Exchange::kCluster,
                                       1, Running::kNone, 0, Layout::kChannelsLast});
}

// Every family of both passes with an activation fused (the ops' epilogue), the activations in turn.
TEST(GpuSanitize, ActivatedPlans) {
  INORM_REQUIRE_GPU();
  const Activation activations[] = {Activation::kRelu, Activation::kLeakyRelu, Activation::kSilu};
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    int turn = 0;
    for (Reach r : plans_of_every_family(pass)) {
      // An activation's spanning kernel holds 16 clusters' partials (config.h shared_max_slice_clusters).
      if (r.slice_clusters > detail::shared_max_slice_clusters(true)) {
        r.why = "shared_resident, a slice over 16 clusters of two (an activation's fullest spanning inbox)";
        r.slice_clusters = detail::shared_max_slice_clusters(true);
        r.ctas_per_slice = 2 * r.slice_clusters;
      }
      if (r.stream_parts > 0) continue;  // the streamed reduction is the plain op's
      expect_plan_passes(pass, r, std::nullopt, activations[turn++ % 3]);
    }
  }
}

// GroupNorm in every family it runs, both passes, with silu fused and without, the weight and bias
// following the channel of each element (or of each chunk, where chunks lie in channels); the
// backward's per-channel sums of each chunk in the workspace. Slices of two channels.
TEST(GpuSanitize, GroupNormPlans) {
  INORM_REQUIRE_GPU();
  std::vector<Reach> reaches = {
      {"group_registers, scalar (a misaligned view)", {2, 6, 50}, DType::kFloat32, Path::kGroupRegisters, 0, 0,
       Exchange::kAuto, 0, Running::kNone, 1},
      {"group_registers, vectors", {2, 6, 512}, DType::kFloat32, Path::kGroupRegisters},
      {"shared_resident, one CTA a slice, no exchange", {2, 6, 4097}, DType::kFloat32, Path::kSharedResident, 1, 0,
       Exchange::kNone},
      {"shared_resident, 3 CTAs through L2", {2, 6, 4097}, DType::kBFloat16, Path::kSharedResident, 3, 0,
       Exchange::kGlobal},
      {"shared_resident, a cluster of 5", {2, 6, 4097}, DType::kFloat32, Path::kSharedResident, 5, 0,
       Exchange::kCluster},
      {"split_pipelined, several parts a slice", {1, 6, 13335}, DType::kFloat32, Path::kSplitPipelined},
      // Chunks inside channels: the affine a chunk's channel at a time (plan_internal.h
      // takes_chunk_channel_affine: the forward's plain op; the backward's chunk form, in both
      // families, each chunk's sums left for its one channel).
      {"shared_resident, a cluster of 4, half a channel a chunk", {2, 4, 4096}, DType::kFloat32,
       Path::kSharedResident, 4, 0, Exchange::kCluster},
      {"split_pipelined, parts inside channels", {1, 4, 32768}, DType::kFloat32, Path::kSplitPipelined},
      // The backward's plans in two rounds at most (planner.cpp plan_shared): six 128-thread CTAs an
      // SM, chunks of one channel (the chunk form) and of two (the element form).
      {"shared_resident, a cluster of 2 at six an SM, a channel a chunk", {2, 4, 1024}, DType::kFloat16,
       Path::kSharedResident, 2, detail::kSharedMaxCtasPerSm, Exchange::kCluster},
      {"shared_resident, a cluster of 5 at six an SM, across channels", {2, 6, 4097}, DType::kFloat32,
       Path::kSharedResident, 5, detail::kSharedMaxCtasPerSm, Exchange::kCluster},
      {"channels_last's three kernels, whole rows, two tiles a channel (misaligned)", {2, 6, 5600}, DType::kFloat32,
       Path::kChannelsLast, 0, 0, Exchange::kNone, 0, Running::kNone, 1, Layout::kChannelsLast},
      {"channels_last resident, a group of CTAs a sample, one group for both (misaligned)", {2, 6, 40000},
       DType::kFloat32, Path::kChannelsLast, 0, 0, Exchange::kGlobal, 1, Running::kNone, 1, Layout::kChannelsLast},
      {"channels_last's three kernels, 16-byte runs of 600 channels in three blocks", {1, 600, 30}, DType::kBFloat16,
       Path::kChannelsLast, 0, 0, Exchange::kNone, 0, Running::kNone, 0, Layout::kChannelsLast},
      {"channels_last resident, blocks of 8 channels (four groups), each CTA alone, two CTAs taking all 75",
       {1, 600, 30}, DType::kBFloat16, Path::kChannelsLast, 0, 0, Exchange::kGlobal, 2, Running::kNone, 0,
       Layout::kChannelsLast},
      {"channels_last resident, channel blocks over groups of three CTAs, two groups taking every block",
       {1, 600, 200}, DType::kBFloat16, Path::kChannelsLast, 3, 0, Exchange::kGlobal, 2, Running::kNone, 0,
       Layout::kChannelsLast},
  };
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (Reach& r : reaches) {
      r.groups = r.shape[1] / 2;  // slices of two channels
      // With SiLU, and without an activation (the backward's GroupNorm op without its epilogue).
      expect_plan_passes(pass, r, std::nullopt, Activation::kSilu);
      expect_plan_passes(pass, r, std::nullopt, Activation::kNone);
    }
    // Register parts on slices of two channels: the backward's without an activation (no backward
    // with one takes them), the forward's general op with SiLU in one cluster (its spanning
    // instance: kernels/shared_resident.cuh) and over two (config.h shared_register_part_max_group).
    Reach registers{"register parts, two channels of a slice", {2, 2, pass == Pass::kForward ? 65540 : 32770},
                    DType::kFloat32, Path::kSharedResident, 4, detail::kSharedRegisterCtasPerSm, Exchange::kCluster, 1};
    registers.groups = 1;
    if (pass == Pass::kBackward) {
      expect_plan_passes(pass, registers, true);
    } else {
      expect_plan_passes(pass, registers, true, Activation::kSilu);
      registers.slice_clusters = 2;
      expect_plan_passes(pass, registers, true, Activation::kSilu);
    }
    // Chunks of 8 inside channels of 48 (the forward's plain op, a chunk's channel's affine), the
    // last four of 16 CTAs without a chunk.
    Reach channel_chunks{"16 CTAs on slices of two 48-element channels", {2, 4, 48}, DType::kFloat32,
                         Path::kSharedResident, 16, 0, Exchange::kCluster};
    channel_chunks.groups = 2;
    expect_plan_passes(pass, channel_chunks);
  }
}

// Register parts: chunks longer than a CTA's share of shared memory at two per SM hold their end in
// registers (forced group and CTAs per SM on the smallest such slice), in a grid of one cluster;
// 64 rounds or more take each next slice early.
TEST(GpuSanitize, RegisterParts) {
  INORM_REQUIRE_GPU();
  // Forward: 4 CTAs a 512 KiB + 16 B slice (128 KiB each); backward: 4 CTAs a 256 KiB + 16 B slice
  // of x and of dy.
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    const int64_t slice_len = pass == Pass::kForward ? 131076 : 65540;
    expect_plan_passes(pass, {"register parts, 2 slices", {2, 1, slice_len}, DType::kFloat32, Path::kSharedResident,
                              4, detail::kSharedRegisterCtasPerSm, Exchange::kCluster, 1},
                       true);
    expect_plan_passes(pass, {"register parts, 64 rounds: slices taken early", {64, 1, slice_len}, DType::kFloat32,
                              Path::kSharedResident, 4, detail::kSharedRegisterCtasPerSm, Exchange::kCluster, 1},
                       true);
    // A slice over two clusters of four in a grid of those two (one group): eight chunks of 128 KiB
    // (64 KiB of x and of dy), three slices in three rounds of parts.
    expect_plan_passes(pass, {"register parts, a slice over two clusters", {3, 1, 2 * slice_len - 8},
                              DType::kFloat32, Path::kSharedResident, 8, detail::kSharedRegisterCtasPerSm,
                              Exchange::kCluster, 1, Running::kNone, 0, Layout::kContiguous, 0, 2},
                       true);
  }
}

// Clusters of 16 CTAs with 72 KiB chunks (of x, or 36 KiB of x and of dy), three per SM: a grid of
// one cluster, and the full grid of 21 clusters (the plan of 61x1x289796 fp32 that failed under
// synccheck).
TEST(GpuSanitize, OneClusterOfLargeChunks) {
  INORM_REQUIRE_GPU();
  expect_plan_passes(Pass::kForward, {"one cluster of 16 with large chunks", {3, 1, 289796}, DType::kFloat32,
                                      Path::kSharedResident, 16, 3, Exchange::kCluster, 1});
  expect_plan_passes(Pass::kBackward, {"one cluster of 16 with large chunks", {3, 1, 144898}, DType::kFloat32,
                                       Path::kSharedResident, 16, 3, Exchange::kCluster, 1});
}

TEST(GpuSanitize, ManyClustersOfLargeChunks) {
  INORM_REQUIRE_GPU();
  expect_plan_passes(Pass::kForward, {"21 clusters of 16 with large chunks", {61, 1, 289796}, DType::kFloat32,
                                      Path::kSharedResident, 16, 3, Exchange::kCluster});
  expect_plan_passes(Pass::kBackward, {"21 clusters of 16 with large chunks", {61, 1, 144898}, DType::kFloat32,
                                       Path::kSharedResident, 16, 3, Exchange::kCluster});
}

}  // namespace
}  // namespace inorm::testing
