// The planner's choices for the public suite and at every path boundary, on the H200's limits.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "inorm/inorm.h"
#include "plan_internal.h"

namespace inorm {
namespace {

constexpr std::uintptr_t kAligned = 0x10000000;

ForwardParams problem(DType dtype, std::initializer_list<int64_t> shape) {
  ForwardParams p;
  p.dtype = dtype;
  p.x = reinterpret_cast<void*>(kAligned);
  p.y = reinterpret_cast<void*>(kAligned * 64);
  const int64_t* dims = shape.begin();
  p.batch = dims[0];
  p.channels = dims[1];
  p.spatial_rank = static_cast<int>(shape.size()) - 2;
  for (int i = 0; i < p.spatial_rank; ++i) p.spatial[i] = dims[2 + i];
  return p;
}

// The backward of p's problem (its shape, type and layout), with the forward's statistics.
BackwardParams backward_of(const ForwardParams& p) {
  BackwardParams b;
  b.dtype = p.dtype;
  b.layout = p.layout;
  b.x = p.x;
  b.dy = reinterpret_cast<void*>(kAligned * 128);
  b.dx = reinterpret_cast<void*>(kAligned * 192);
  b.batch = p.batch;
  b.channels = p.channels;
  b.spatial_rank = p.spatial_rank;
  for (int i = 0; i < p.spatial_rank; ++i) b.spatial[i] = p.spatial[i];
  b.mean = reinterpret_cast<void*>(kAligned * 3);
  b.rstd = reinterpret_cast<void*>(kAligned * 4);
  return b;
}

// GroupNorm with `groups` groups and a weight: an affine by channel inside each slice.
ForwardParams affine_groups(DType dtype, std::initializer_list<int64_t> shape, int64_t groups) {
  ForwardParams p = problem(dtype, shape);
  p.groups = groups;
  p.weight = reinterpret_cast<void*>(kAligned * 2);
  return p;
}

Plan plan_of(const ForwardParams& p, const PlanOptions& options = {}) {
  Plan plan;
  const Status status = plan_forward(p, hopper_h200_limits(), &plan, options);
  EXPECT_TRUE(status.ok()) << status.message();
  return plan;
}

// shared_resident's own plan: the forward's planner takes split_pipelined instead where that plan
// spreads a slice over kForwardSplitMinGroup CTAs or more (Planner.WideForwardGroupsSplit).
Plan shared_plan_of(const ForwardParams& p, PlanOptions options = {}) {
  options.force_path = Path::kSharedResident;
  return plan_of(p, options);
}

// The steady plan: 64 KiB chunks, three CTAs per SM.
TEST(Planner, SeedFloat32UsesEightCtasPerSliceTwoPerSmWithRegisterParts) {
  const Plan plan = plan_of(problem(DType::kFloat32, {112, 64, 512, 512}));
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_slice, 8);
  EXPECT_EQ(plan.ctas_per_sm, 2);
  EXPECT_EQ(plan.grid, 240);  // the 30 clusters of 8 an H200's GPCs hold at two per SM
  EXPECT_EQ(plan.chunk_len, 32768);
  EXPECT_EQ(plan.register_len, 8192);  // 32 KiB of each 128 KiB chunk in registers
  EXPECT_EQ(plan.threads, detail::kSharedRegisterThreads);
  EXPECT_EQ(plan.smem_bytes, 98432);  // the rest + 16, 128-aligned
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  // The cluster exchanges chunk statistics on chip; 239 rounds of slices take them in order from
  // a counter, the workspace's one piece, each taken before the current one is normalized.
  EXPECT_TRUE(detail::shared_slices_in_order(plan));
  EXPECT_TRUE(detail::shared_takes_slices_early(plan));
  EXPECT_EQ(plan.workspace_bytes, detail::kWorkspaceAlign);
  EXPECT_TRUE(plan.coaligned);
}

// Slices wider than eight 64 KiB chunks go to the narrowest cluster that holds them at two CTAs per
// SM, each CTA holding 32 KiB of its chunk in registers where its shared memory is too small; only
// with 16-byte access (the part moves in whole vectors) and the cluster exchange. Clusters of up to
// eight CTAs, and of up to 16 for the plain forward of 4- and 8-byte elements
// (config.h shared_register_part_max_group). Where no such cluster holds the slice, the plain
// forward's wide part (48 KiB) in the same clusters.
TEST(Planner, RegisterPartsHoldWideSlicesInNarrowClusters) {
  const DeviceLimits limits = hopper_h200_limits();
  // The longest chunk: a buffer of the SM's half share (beside the 16 bytes that mirror x's
  // alignment) and the register part, in whole 512-byte units.
  const int64_t share = detail::shared_sm_share(limits, detail::kSharedRegisterCtasPerSm) - 16;
  const auto longest_with = [&](int64_t register_bytes) {
    return (share + register_bytes) / detail::kChunkAlignBytes * detail::kChunkAlignBytes;
  };
  const int64_t longest = longest_with(detail::kSharedRegisterBytes);
  const int64_t eight = detail::kSharedRegisterMaxGroup * longest / 4;  // fp32 values
  const int64_t largest = detail::kSharedMaxClusterCtas * longest / 4;
  const int64_t largest_wide = detail::kSharedMaxClusterCtas * longest_with(detail::kSharedWideRegisterBytes) / 4;
  enum Registers { kNone, kNarrow, kWide };
  struct Wide {
    const char* why;
    int64_t slice_len;
    int64_t offset;
    Exchange exchange;
    int ctas_per_slice;
    int ctas_per_sm;
    Registers registers;
    int slice_clusters = 1;
  };
  // Groups wider than eight: whole pairs of CTAs in clusters of two (config.h kSharedPairClusterCtas).
  const Wide wides[] = {
      {"512 KiB: eight 64 KiB chunks, three per SM", 131072, 0, Exchange::kAuto, 8, 3, kNone},
      {"16 bytes more: four chunks at two per SM, registers", 131076, 0, Exchange::kAuto, 4, 2, kNarrow},
      {"eight of the longest chunks", eight, 0, Exchange::kAuto, 8, 2, kNarrow},
      {"16 bytes more: nine chunks, ten in five clusters of two", eight + 4, 0, Exchange::kAuto, 10, 2, kNarrow, 5},
      {"the largest: 16 of the longest chunks", largest, 0, Exchange::kAuto, 16, 2, kNarrow, 8},
      {"16 bytes more: 15 wide chunks, 16 in pairs", largest + 4, 0, Exchange::kAuto, 16, 2, kWide, 8},
      {"the largest wide: 16 of the longest wide chunks", largest_wide, 0, Exchange::kAuto, 16, 2, kWide, 8},
      {"16 bytes more: no register plan", largest_wide + 4, 0, Exchange::kAuto, 0, 0, kNone},
      {"1 MiB of a misaligned view: no 16-byte access", 262144, 1, Exchange::kAuto, 16, 3, kNone},
      {"1 MiB through L2: no cluster", 262144, 0, Exchange::kGlobal, 16, 3, kNone},
  };
  for (const Wide& w : wides) {
    ForwardParams p = problem(DType::kFloat32, {1, 64, w.slice_len});
    p.x = static_cast<const float*>(p.x) + w.offset;
    p.y = static_cast<float*>(p.y) + w.offset;
    PlanOptions options;
    options.force_exchange = w.exchange;
    const Plan plan = shared_plan_of(p, options);
    SCOPED_TRACE(std::string(w.why) + ": " + plan.describe());
    EXPECT_EQ(plan.path, Path::kSharedResident);
    EXPECT_EQ(plan.register_len > 0, w.registers != kNone);
    if (w.ctas_per_slice != 0) {
      EXPECT_EQ(plan.ctas_per_slice, w.ctas_per_slice);
      EXPECT_EQ(plan.ctas_per_sm, w.ctas_per_sm);
      EXPECT_EQ(plan.slice_clusters, w.slice_clusters);
    }
    if (w.registers != kNone) {
      EXPECT_EQ(plan.register_len, w.registers == kWide ? detail::shared_wide_register_len(DType::kFloat32)
                                                        : detail::shared_register_len(DType::kFloat32, 1));
      EXPECT_EQ(plan.threads, detail::kSharedRegisterThreads);
      EXPECT_EQ(plan.exchange, Exchange::kCluster);
      EXPECT_LE(plan.smem_bytes, share + 16);
      EXPECT_EQ(plan.smem_bytes, detail::shared_buffer_bytes((plan.chunk_len - plan.register_len) * 4, 1));
    }
  }
  // Past eight narrow chunks, 16-bit elements take eight wide ones (and no wider clusters); the ops
  // with an activation or a channel's affine take no register part in the plan shared_resident
  // keeps (16 CTAs at two per SM hold these slices in shared memory alone; in place of
  // split_pipelined they do: Planner.GeneralForwardRegisterPartsInPlaceOfSplit).
  const Plan half = shared_plan_of(problem(DType::kBFloat16, {1, 64, 2 * eight + 8}));
  EXPECT_EQ(half.register_len, detail::shared_wide_register_len(DType::kBFloat16)) << half.describe();
  EXPECT_EQ(half.ctas_per_slice, 8) << half.describe();
  EXPECT_EQ(shared_plan_of(problem(DType::kBFloat16, {1, 64, 2 * eight})).ctas_per_slice, 8);
  const int64_t eight_wide = detail::kSharedRegisterMaxGroup * longest_with(detail::kSharedWideRegisterBytes) / 2;
  EXPECT_EQ(shared_plan_of(problem(DType::kFloat16, {1, 64, eight_wide})).register_len,
            detail::shared_wide_register_len(DType::kFloat16));
  EXPECT_EQ(shared_plan_of(problem(DType::kFloat16, {1, 64, eight_wide + 8})).register_len, 0);
  ForwardParams activated = problem(DType::kFloat32, {1, 64, eight + 4});
  activated.activation = Activation::kSilu;
  EXPECT_EQ(shared_plan_of(activated).register_len, 0) << shared_plan_of(activated).describe();
  const ForwardParams grouped = affine_groups(DType::kFloat32, {1, 64, (eight + 4) / 2}, 32);  // two channels a slice
  EXPECT_EQ(shared_plan_of(grouped).register_len, 0) << shared_plan_of(grouped).describe();
}

// The wide register part: where narrow ones hold no cluster's chunks, the planner's own plan takes
// it (layouts.json's mid-1mib-bf16, 1.125 MiB bfloat16 slices, eight CTAs instead of
// split_pipelined); PlanOptions::force_register_vecs keeps the narrow part alone (8) or takes the
// wide one wherever a part is held (12: the seed in seven CTAs); the backward holds narrow parts
// only; any other count is refused.
TEST(Planner, WideRegisterParts) {
  const Plan mid = plan_of(problem(DType::kBFloat16, {4, 64, 768, 768}));
  EXPECT_EQ(mid.path, Path::kSharedResident) << mid.describe();
  EXPECT_EQ(mid.ctas_per_slice, 8);
  EXPECT_EQ(mid.register_len, detail::shared_wide_register_len(DType::kBFloat16));
  PlanOptions narrow;
  narrow.force_register_vecs = detail::kSharedRegisterVecs;
  EXPECT_EQ(plan_of(problem(DType::kBFloat16, {4, 64, 768, 768}), narrow).path, Path::kSplitPipelined);
  const Plan seed = plan_of(problem(DType::kFloat32, {112, 64, 512, 512}));
  EXPECT_EQ(seed.ctas_per_slice, 8);
  EXPECT_EQ(seed.register_len, detail::shared_register_len(DType::kFloat32, 1));
  PlanOptions wide;
  wide.force_register_vecs = detail::kSharedWideRegisterVecs;
  const Plan seed_wide = plan_of(problem(DType::kFloat32, {112, 64, 512, 512}), wide);
  EXPECT_EQ(seed_wide.ctas_per_slice, 7) << seed_wide.describe();
  EXPECT_EQ(seed_wide.register_len, detail::shared_wide_register_len(DType::kFloat32));
  PlanOptions odd;
  odd.force_register_vecs = 10;
  Plan refused;
  const Status status = plan_forward(problem(DType::kFloat32, {2, 3, 64}), hopper_h200_limits(), &refused, odd);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("register vectors"), std::string::npos) << status.message();
}

// The forward's general op (an activation, or GroupNorm's affine across a chunk's channels) takes
// register parts only where its plan without them would give way to split_pipelined (16 steady CTAs
// or more), or where shared_resident's shape is forced; the steady plan stays elsewhere (config.h
// shared_register_part_max_group). Its parts are narrow ones.
TEST(Planner, GeneralForwardRegisterPartsInPlaceOfSplit) {
  // InstanceNorm + LeakyReLU on 1 MiB float32 and float16 slices: 16 steady CTAs, which would
  // split, so eight at two per SM with register parts, in one cluster.
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    ForwardParams p = problem(dtype, {8, 64, 512, dtype == DType::kFloat32 ? 512 : 1024});
    p.activation = Activation::kLeakyRelu;
    const Plan plan = plan_of(p);
    SCOPED_TRACE(plan.describe());
    EXPECT_EQ(plan.path, Path::kSharedResident);
    EXPECT_EQ(plan.ctas_per_slice, 8);
    EXPECT_EQ(plan.slice_clusters, 1);
    EXPECT_EQ(plan.ctas_per_sm, detail::kSharedRegisterCtasPerSm);
    EXPECT_EQ(plan.register_len, detail::shared_register_len(dtype, 1));
    EXPECT_TRUE(detail::runs_general_op(plan));
    // Forced, the same shape takes them too; the wide part is refused (the narrow one is held).
    PlanOptions eight;
    eight.force_path = Path::kSharedResident;
    eight.force_ctas_per_slice = 8;
    eight.force_ctas_per_sm = 2;
    EXPECT_EQ(plan_of(p, eight).register_len, detail::shared_register_len(dtype, 1));
    PlanOptions wide;
    wide.force_register_vecs = detail::kSharedWideRegisterVecs;
    EXPECT_EQ(plan_of(p, wide).register_len, detail::shared_register_len(dtype, 1));
  }
  // 2 MiB float32 slices + ReLU: a register cluster of 16, so eight pairs (config.h
  // kSharedPairClusterCtas), as the plain op.
  ForwardParams relu = problem(DType::kFloat32, {4, 64, 512, 1024});
  relu.activation = Activation::kRelu;
  const Plan pairs = plan_of(relu);
  EXPECT_EQ(pairs.ctas_per_slice, 16) << pairs.describe();
  EXPECT_EQ(pairs.slice_clusters, 8) << pairs.describe();
  EXPECT_GT(pairs.register_len, 0) << pairs.describe();
  // GroupNorm(16) of 96x96 channels (576 KiB slices, chunks across channels): nine steady CTAs at
  // three per SM stay (five with register parts lost: 1.20 -> 1.66x a copy).
  const Plan steady = plan_of(affine_groups(DType::kFloat32, {16, 256, 96, 96}, 16));
  EXPECT_EQ(steady.path, Path::kSharedResident);
  EXPECT_EQ(steady.ctas_per_slice, 9);
  EXPECT_EQ(steady.ctas_per_sm, 3);
  EXPECT_EQ(steady.register_len, 0);
  // 1 MiB bfloat16 GroupNorm slices whose 16 steady chunks lie in channels: the plain op, which does
  // not split; its steady plan stays.
  const Plan by_channel = plan_of(affine_groups(DType::kBFloat16, {16, 128, 256, 256}, 16));
  EXPECT_EQ(by_channel.ctas_per_slice, 16) << by_channel.describe();
  EXPECT_EQ(by_channel.register_len, 0);
  EXPECT_FALSE(detail::runs_general_op(by_channel));
}

// Register-part plans take each next slice before normalizing from 64 rounds of slices up.
TEST(Planner, EarlyDispatchFromSixtyFourRounds) {
  // 1 MiB fp32 slices, 30 clusters of 8 at two per SM.
  EXPECT_TRUE(detail::shared_takes_slices_early(plan_of(problem(DType::kFloat32, {1, 1920, 512, 512}))));
  EXPECT_FALSE(detail::shared_takes_slices_early(plan_of(problem(DType::kFloat32, {1, 1919, 512, 512}))));
  // Three CTAs per SM and no register part: never (seed bf16, 159 rounds).
  const Plan bf16 = plan_of(problem(DType::kBFloat16, {112, 64, 512, 512}));
  EXPECT_TRUE(detail::shared_slices_in_order(bf16));
  EXPECT_FALSE(detail::shared_takes_slices_early(bf16));
  EXPECT_EQ(bf16.describe().find(" early"), std::string::npos);
}

// The first round's groups start kSharedStaggerCycles apart where there are several rounds of
// groups of more than one CTA, at most kSharedStaggerMaxSpreadCycles from the first to the last
// (kSharedSpanStaggerMaxSpreadCycles where slices span clusters).
TEST(Planner, FirstRoundStaggeredByGroup) {
  struct Stagger {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int cycles;
  };
  const Stagger staggers[] = {
      {"1 MiB slices, 30 clusters of 8 over 4.3 rounds", DType::kFloat32, {2, 64, 512, 512}, 250},
      {"30 slices: one round", DType::kFloat32, {1, 30, 512, 512}, 0},
      {"31 slices: the 31st waits a round", DType::kFloat32, {1, 31, 512, 512}, 250},
      {"mid-affine's 92 groups of four: the spread capped", DType::kFloat32, {32, 128, 256, 256}, 130},
      {"odd-fp16's 792 groups of one CTA: none", DType::kFloat16, {16, 64, 127, 129}, 0},
  };
  for (const Stagger& s : staggers) {
    const Plan plan = shared_plan_of(problem(s.dtype, s.shape));
    SCOPED_TRACE(std::string(s.why) + ": " + plan.describe());
    EXPECT_EQ(plan.stagger_cycles, s.cycles);
    EXPECT_EQ(plan.describe().find(" stagger=" + std::to_string(s.cycles)) != std::string::npos, s.cycles > 0);
  }
  // The groups of a slice spanning clusters are its clusters: 16 of two CTAs a 4 MiB slice, 132 in
  // the grid of 264, so the spanning plans' cap gives 24,000 / 132 cycles.
  PlanOptions spans;
  spans.force_path = Path::kSharedResident;
  spans.force_ctas_per_slice = 32;
  spans.force_slice_clusters = 16;
  const Plan spanning = plan_of(problem(DType::kFloat32, {1, 32, 1024, 1024}), spans);
  ASSERT_EQ(spanning.slice_clusters, 16) << spanning.describe();
  EXPECT_EQ(spanning.grid, 264);
  EXPECT_EQ(spanning.stagger_cycles, 181);
  // Other paths never wait.
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {256, 256, 16, 16})).stagger_cycles, 0);
}

// Slices in order from the counter from three rounds on, 16 KiB or more of a slice per CTA, with the
// cluster exchange or none; the L2 exchange and shorter grids stride.
TEST(Planner, SlicesInOrderFromThreeRoundsOfLongChunks) {
  struct Walk {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    bool in_order;
  };
  const Walk walks[] = {
      {"1 MiB slices, 30 clusters of 8: three rounds", DType::kFloat32, {1, 90, 512, 512}, true},
      {"one slice fewer", DType::kFloat32, {1, 89, 512, 512}, false},
      {"16 KiB slices, 792 groups of one: three rounds", DType::kFloat32, {2376, 1, 64, 64}, true},
      {"one slice fewer", DType::kFloat32, {2375, 1, 64, 64}, false},
      {"16380-byte slices", DType::kFloat32, {4000, 1, 4095}, false},
      {"8 KiB slices (gan-fp16: 7% slower in order)", DType::kFloat16, {16, 256, 64, 64}, false},
      {"2 MiB slices through L2, 33 rounds", DType::kBFloat16, {4, 128, 1024, 1024}, false},
      {"the GPU tests' in-order steady plans", DType::kBFloat16, {600, 1, 65536}, true},
      {"", DType::kFloat16, {2400, 1, 16384}, true},
      {"", DType::kFloat32, {500, 1, 49157}, true},
      {"and their strided ones", DType::kBFloat16, {400, 1, 65536}, false},
      {"", DType::kFloat16, {1600, 1, 16384}, false},
  };
  for (const Walk& w : walks) {
    const Plan plan = shared_plan_of(problem(w.dtype, w.shape));
    SCOPED_TRACE(std::string(w.why) + ": " + plan.describe());
    EXPECT_EQ(plan.path, Path::kSharedResident);
    EXPECT_EQ(detail::shared_slices_in_order(plan), w.in_order);
    EXPECT_EQ(plan.describe().find(" in-order") != std::string::npos, w.in_order);
    // The counter is the only workspace of a plan without the L2 exchange or running stats.
    if (plan.exchange != Exchange::kGlobal) EXPECT_EQ(plan.workspace_bytes > 0, w.in_order);
  }
}

TEST(Planner, SeedHalfTypesUseEightCtasPerSliceThreePerSm) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const Plan plan = plan_of(problem(dtype, {112, 64, 512, 512}));
    SCOPED_TRACE(dtype_name(dtype));
    EXPECT_EQ(plan.path, Path::kSharedResident);
    EXPECT_EQ(plan.ctas_per_slice, 8);
    EXPECT_EQ(plan.ctas_per_sm, 3);
    EXPECT_EQ(plan.threads, 256);
    EXPECT_EQ(plan.grid, 360);  // 45 clusters of 8
  }
}

TEST(Planner, MidAffineUsesFourCtasPerSliceThreePerSm) {
  const Plan plan = plan_of(problem(DType::kFloat32, {32, 128, 256, 256}));
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_sm, 3);
  EXPECT_EQ(plan.ctas_per_slice, 4);
  EXPECT_EQ(plan.grid, 368);  // 92 clusters of 4
}

// Measured (dev/VARIANTS.md, variant 9): these shapes fell to slow plans before the steady rule.
TEST(Planner, SteadyPlanAvoidsTheOldCliffs) {
  // 512 slices of 576 KiB: one CTA per SM kept more slots busy and ran 2.2x copy; nine 64 KiB
  // chunks at three per SM ran 1.15x (1.07x in order); five at two per SM, 32 KiB of each in
  // registers, 1.04-1.06x.
  const Plan wide = plan_of(problem(DType::kFloat32, {8, 64, 384, 384}));
  EXPECT_EQ(wide.ctas_per_slice, 5);
  EXPECT_EQ(wide.ctas_per_sm, 2);
  EXPECT_GT(wide.register_len, 0);
  // 8192 slices of 32 KiB: two CTAs a slice kept more slots busy and ran 1.38x; one, six per SM,
  // ran 1.07x.
  const Plan small = plan_of(problem(DType::kFloat16, {64, 128, 128, 128}));
  EXPECT_EQ(small.ctas_per_slice, 1);
  EXPECT_EQ(small.ctas_per_sm, 6);
  EXPECT_EQ(small.threads, 128);
}

// Fewer than two rounds of slices: the search keeps the most CTA slots busy (128 slices of
// 16 KiB on 128 CTAs, two per SM), and 1.7 MiB slices that fit two CTAs per SM only as 16 CTAs
// of 108 KiB take that over one CTA per SM (1.38x against 1.64x).
TEST(Planner, WithoutSteadyPlanTwoCtasPerSmFirst) {
  const Plan few = plan_of(problem(DType::kFloat32, {2, 64, 64, 64}));
  EXPECT_EQ(few.ctas_per_slice, 1);
  EXPECT_EQ(few.ctas_per_sm, 2);
  EXPECT_EQ(few.grid, 128);
  const Plan vol = shared_plan_of(problem(DType::kBFloat16, {2, 64, 96, 96, 96}));
  EXPECT_EQ(vol.ctas_per_slice, 16);
  EXPECT_EQ(vol.ctas_per_sm, 2);
  // 2 MiB slices fit a cluster of 16 only at one CTA per SM (1.52-1.54x); a wider group through
  // L2, 32 CTAs of 64 KiB at three per SM, ran 1.28-1.31x. (In bfloat16: float32's now take
  // register parts, Planner.RegisterPartsHoldWideSlicesInNarrowClusters.)
  const Plan big = shared_plan_of(problem(DType::kBFloat16, {8, 16, 1024, 1024}));
  EXPECT_EQ(big.path, Path::kSharedResident);
  EXPECT_EQ(big.ctas_per_slice, 32);
  EXPECT_EQ(big.ctas_per_sm, 3);
  EXPECT_EQ(big.exchange, Exchange::kGlobal);
  // ... but where a cluster holds the slice at two per SM, it wins (1.5 MiB: 16 CTAs at two per SM
  // 1.13x, 32 at three through L2 1.39-1.41x).
  const Plan mid = shared_plan_of(problem(DType::kBFloat16, {8, 32, 768, 1024}));
  EXPECT_EQ(mid.ctas_per_slice, 16);
  EXPECT_EQ(mid.ctas_per_sm, 2);
  EXPECT_EQ(mid.exchange, Exchange::kCluster);
}

// The forward of slices that shared_resident would spread over 16 CTAs or more without register
// parts runs split_pipelined (config.h kForwardSplitMinGroup), where too few slices fill the rounds
// that clusters of two would take (Planner.SlicesNoClusterHoldsSpanPairs); narrower groups, groups
// with register parts and forced options keep shared_resident (the backward too:
// PlanBackward.WideGroupsStayShared).
TEST(Planner, WideForwardGroupsSplit) {
  struct Shape {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int shared_ctas_per_slice;
  };
  const Shape shapes[] = {
      // (1.1 MiB bf16 slices fit eight CTAs with wide register parts: Planner.WideRegisterParts.)
      {"1.5 MiB bf16 slices: a cluster of 16", DType::kBFloat16, {1, 16, 1024, 768}, 16},
      {"2 MiB bf16 slices: 32 CTAs through L2", DType::kBFloat16, {1, 16, 1024, 1024}, 32},
      {"3.5 MiB bf16 slices: 56 CTAs through L2", DType::kBFloat16, {1, 16, 1344, 1344}, 56},
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.why);
    const ForwardParams p = problem(s.dtype, s.shape);
    EXPECT_EQ(shared_plan_of(p).ctas_per_slice, s.shared_ctas_per_slice);
    EXPECT_EQ(plan_of(p).path, Path::kSplitPipelined);
    // Any of shared_resident's options forced keeps it.
    PlanOptions capped;
    capped.max_ctas_per_sm = 3;
    EXPECT_EQ(plan_of(p, capped).path, Path::kSharedResident);
    PlanOptions exchange;
    exchange.force_exchange = Exchange::kGlobal;
    EXPECT_EQ(plan_of(p, exchange).path, Path::kSharedResident);
  }
  // Eight CTAs a slice with register parts (the seed's 1 MiB fp32 slices) stay, and 16 (2 MiB: the
  // 15 of one cluster rounded up to eight clusters of two, config.h kSharedPairClusterCtas).
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {112, 64, 512, 512})).path, Path::kSharedResident);
  const Plan registers = plan_of(problem(DType::kFloat32, {8, 16, 1024, 512}));
  EXPECT_EQ(registers.path, Path::kSharedResident);
  EXPECT_EQ(registers.ctas_per_slice, 16) << registers.describe();
  EXPECT_EQ(registers.slice_clusters, 8) << registers.describe();
  EXPECT_EQ(registers.grid, 264) << registers.describe();  // the 132 clusters of two an H200 holds
  EXPECT_GT(registers.register_len, 0);
}

// Slices that no one cluster holds (the plan would be split_pipelined, or a group through L2) span
// clusters of two: the narrowest group of whole pairs with register parts (planner.cpp
// plan_spanning_pairs), where the slices fill two rounds of the H200's 132 pairs in the forward
// (config.h kSharedPairSpanMinRoundsForward; the backward's: PlanBackward.SlicesNoClusterHoldsSpanPairs),
// up to 26 pairs a slice (16 for the general op: config.h kSharedPairSpanMaxClusters*).
TEST(Planner, SlicesNoClusterHoldsSpanPairs) {
  struct Span {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int clusters;  // 0: split_pipelined
  };
  const Span spans[] = {
      // 15 pairs a slice: eight slices a round.
      {"mid-4mib-fp32: 32 slices of 4 MiB", DType::kFloat32, {1, 32, 1024, 1024}, 15},
      {"16 of them: two rounds", DType::kFloat32, {1, 16, 1024, 1024}, 15},
      {"15 of them: fewer than two rounds", DType::kFloat32, {1, 15, 1024, 1024}, 0},
      {"mid-3mib-fp16", DType::kFloat16, {2, 48, 112, 112, 112}, 10},
      {"1.5 MiB bf16 slices, past a cluster of eight", DType::kBFloat16, {4, 32, 1024, 768}, 6},
      {"4 MiB float64 slices", DType::kFloat64, {4, 32, 724, 724}, 15},
      // Past 16 pairs, up to kSharedPairSpanMaxClustersForward: 22 pairs a slice, six slices a round.
      {"mid-6mib-bf16", DType::kBFloat16, {2, 24, 2048, 1536}, 22},
      {"7 MiB bfloat16 slices: the widest, five a round", DType::kBFloat16, {1, 16, 2048, 1792}, 26},
      {"vol3d: 8 MiB float32 slices would take 29 pairs", DType::kFloat32, {2, 32, 128, 128, 128}, 0},
  };
  for (const Span& s : spans) {
    const Plan plan = plan_of(problem(s.dtype, s.shape));
    SCOPED_TRACE(std::string(s.why) + ": " + plan.describe());
    if (s.clusters == 0) {
      EXPECT_EQ(plan.path, Path::kSplitPipelined);
      continue;
    }
    EXPECT_EQ(plan.path, Path::kSharedResident);
    EXPECT_EQ(plan.ctas_per_slice, 2 * s.clusters);
    EXPECT_EQ(plan.slice_clusters, s.clusters);
    EXPECT_EQ(plan.ctas_per_sm, detail::kSharedRegisterCtasPerSm);
    EXPECT_EQ(plan.exchange, Exchange::kCluster);
    EXPECT_EQ(plan.register_len, detail::shared_register_len(s.dtype, 1));  // the narrow part
    EXPECT_EQ(plan.grid, 264);  // every one of the 132 pairs
    EXPECT_EQ(plan.stagger_cycles, 181);  // 24,000 cycles over 132 pairs
  }
  // The general op spans them too (mid-3mib-fp16 + LeakyReLU, ten pairs); views without 16-byte
  // access and forced options keep split_pipelined.
  ForwardParams activation = problem(DType::kFloat16, {2, 48, 112, 112, 112});
  activation.activation = Activation::kLeakyRelu;
  const Plan activated = plan_of(activation);
  EXPECT_EQ(activated.slice_clusters, 10) << activated.describe();
  EXPECT_GT(activated.register_len, 0) << activated.describe();
  // ... up to 16 pairs (config.h kSharedPairSpanMaxClustersGeneralForward): mid-6mib-bf16 + SiLU
  // would take 22.
  ForwardParams wide_activation = problem(DType::kBFloat16, {2, 24, 2048, 1536});
  wide_activation.activation = Activation::kSilu;
  EXPECT_EQ(plan_of(wide_activation).path, Path::kSplitPipelined);
  ForwardParams misaligned = problem(DType::kFloat32, {1, 32, 1024, 1024});
  misaligned.x = static_cast<const float*>(misaligned.x) + 1;
  misaligned.y = static_cast<float*>(misaligned.y) + 1;
  EXPECT_EQ(plan_of(misaligned).path, Path::kSplitPipelined);
  PlanOptions parts;
  parts.force_part_bytes = 32 * 1024;
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {1, 32, 1024, 1024}), parts).path, Path::kSplitPipelined);
}

// The exchange follows CTAs per SM (planner.cpp choose_exchange): none for groups of one,
// clusters where two or more CTAs share an SM, L2 at one per SM and for groups wider than a
// cluster; the L2 exchange alone needs workspace (chunk statistics of every (slice, CTA), then an
// arrival counter per slice).
TEST(Planner, ExchangeFollowsCtasPerSm) {
  const Plan one = plan_of(problem(DType::kFloat32, {2, 64, 64, 64}));
  EXPECT_EQ(one.ctas_per_slice, 1);
  EXPECT_EQ(one.exchange, Exchange::kNone);
  EXPECT_EQ(one.workspace_bytes, 0u);
  // 2 MiB bfloat16 slices (float32's and float64's take register parts in clusters of 16).
  const Plan big = shared_plan_of(problem(DType::kBFloat16, {8, 16, 1024, 1024}));
  EXPECT_EQ(big.exchange, Exchange::kGlobal);
  EXPECT_EQ(big.workspace_bytes, 128u * big.ctas_per_slice * 16 + 512);
  EXPECT_NE(big.describe().find("exchange=global"), std::string::npos) << big.describe();
  PlanOptions through_l2;
  through_l2.force_exchange = Exchange::kGlobal;
  // 32-byte chunk statistics
  const Plan fp64 = shared_plan_of(problem(DType::kFloat64, {8, 16, 512, 512}), through_l2);
  EXPECT_EQ(fp64.exchange, Exchange::kGlobal);
  EXPECT_EQ(fp64.workspace_bytes, 128u * fp64.ctas_per_slice * 32 + 512);

  PlanOptions global;  // forced: the seed's plan with the L2 exchange
  global.force_exchange = Exchange::kGlobal;
  const Plan seed = plan_of(problem(DType::kFloat32, {112, 64, 512, 512}), global);
  EXPECT_EQ(seed.ctas_per_slice, 16);
  EXPECT_EQ(seed.exchange, Exchange::kGlobal);
  EXPECT_EQ(seed.workspace_bytes, 7168u * 16 * 16 + 7168 * 4);
  PlanOptions cluster;
  cluster.force_exchange = Exchange::kCluster;
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {8, 16, 1024, 512}), cluster).exchange, Exchange::kCluster);
  PlanOptions none;  // nothing to exchange only where a CTA holds a whole slice
  none.force_exchange = Exchange::kNone;
  Plan plan;
  const Status status = plan_forward(problem(DType::kFloat32, {112, 64, 512, 512}), hopper_h200_limits(), &plan, none);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("exchange none"), std::string::npos) << status.message();
}

// Forced group shapes outside what the kernel holds are refused by name, not planned: the kernel's
// inbox has room for kSharedMaxCtasPerSlice chunk statistics, a cluster for kSharedMaxClusterCtas.
TEST(Planner, ForcedSharedShapesOutOfRangeAreRefused) {
  const ForwardParams seed = problem(DType::kFloat32, {112, 64, 512, 512});
  for (int ctas : {-1, detail::kSharedMaxCtasPerSlice + 1}) {
    PlanOptions options;
    options.force_path = Path::kSharedResident;
    options.force_ctas_per_slice = ctas;
    Plan plan;
    const Status status = plan_forward(seed, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << ctas;
    EXPECT_NE(status.message().find("forced CTAs per slice must be in 1..64, got"), std::string::npos)
        << status.message();
  }
  PlanOptions cluster;
  cluster.force_path = Path::kSharedResident;
  cluster.force_ctas_per_slice = detail::kSharedMaxClusterCtas + 1;
  cluster.force_exchange = Exchange::kCluster;
  Plan wide;
  const Status refused = plan_forward(seed, hopper_h200_limits(), &wide, cluster);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("must be in 1..16 for the cluster exchange, got 17"), std::string::npos)
      << refused.message();
  PlanOptions per_sm;
  per_sm.force_path = Path::kSharedResident;
  per_sm.force_ctas_per_sm = detail::kSharedMaxCtasPerSm + 1;
  Plan plan;
  const Status status = plan_forward(seed, hopper_h200_limits(), &plan, per_sm);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("forced CTAs per SM must be in 1..6"), std::string::npos) << status.message();
}

// A slice over several clusters (forced: PlanOptions::force_slice_clusters): 4 MiB float32 slices in
// four clusters of eight at two CTAs an SM, each CTA holding 128 KiB (32 KiB of it in registers).
// The clusters take parts of slices in order from the counter and publish each cluster's combined
// partial through L2: the workspace holds a partial per cluster of each slice, an arrival counter
// per slice and the counter. Shapes the kernel does not take are refused by name.
TEST(Planner, ForcedSliceOverClusters) {
  const ForwardParams mid = problem(DType::kFloat32, {1, 32, 1024, 1024});
  PlanOptions options;
  options.force_path = Path::kSharedResident;
  options.force_ctas_per_slice = 32;
  options.force_slice_clusters = 4;
  Plan plan;
  ASSERT_TRUE(plan_forward(mid, hopper_h200_limits(), &plan, options).ok());
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_slice, 32);
  EXPECT_EQ(plan.slice_clusters, 4);
  EXPECT_EQ(detail::shared_cluster_ctas(plan), 8);
  EXPECT_EQ(plan.ctas_per_sm, 2);  // the only CTAs an SM such plans take
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  EXPECT_EQ(plan.chunk_len, 32768);
  EXPECT_EQ(plan.register_len, 8192);
  EXPECT_EQ(plan.grid, 240);  // 30 clusters of 8, each a part of a slice at a time
  EXPECT_TRUE(detail::shared_slices_in_order(plan));
  EXPECT_FALSE(detail::shared_takes_slices_early(plan));
  EXPECT_TRUE(detail::shared_exchanges_through_l2(plan));
  const detail::WorkspaceLayout layout = detail::workspace_layout(plan);
  EXPECT_EQ(layout.chunk_partials, 0u);
  EXPECT_EQ(layout.slice_arrivals, 32u * 4 * 16);  // after a 16-byte partial per cluster of each slice
  EXPECT_EQ(layout.slice_counter, 32u * 4 * 16 + detail::kWorkspaceAlign);
  EXPECT_EQ(plan.workspace_bytes, layout.total);
  EXPECT_NE(plan.describe().find("ctas_per_slice=32 ctas_per_sm=2 exchange=cluster clusters=4x8"), std::string::npos)
      << plan.describe();

  // Without forced CTAs the planner picks the group, still of whole clusters at two CTAs an SM.
  PlanOptions clusters_only;
  clusters_only.force_path = Path::kSharedResident;
  clusters_only.force_slice_clusters = 2;
  Plan picked;
  ASSERT_TRUE(plan_forward(mid, hopper_h200_limits(), &picked, clusters_only).ok());
  EXPECT_EQ(picked.slice_clusters, 2);
  EXPECT_EQ(picked.ctas_per_slice % 2, 0);
  EXPECT_EQ(picked.ctas_per_sm, 2);
  EXPECT_EQ(picked.exchange, Exchange::kCluster);

  struct Refused {
    const char* why;
    int ctas;
    int clusters;
    Exchange exchange;
  };
  const Refused refused[] = {
      {"a cluster's partials go through L2 only beside the cluster exchange", 32, 4, Exchange::kGlobal},
      {"32 CTAs are not three whole clusters", 32, 3, Exchange::kAuto},
      {"the inbox holds 32 clusters' partials", 66, 33, Exchange::kAuto},
      {"a negative count", 32, -1, Exchange::kAuto},
  };
  for (const Refused& r : refused) {
    PlanOptions o = options;
    o.force_ctas_per_slice = r.ctas;
    o.force_slice_clusters = r.clusters;
    o.force_exchange = r.exchange;
    Plan p;
    const Status status = plan_forward(mid, hopper_h200_limits(), &p, o);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << r.why;
    EXPECT_NE(status.message().find("forced clusters a slice must be in 1..32"), std::string::npos)
        << r.why << ": " << status.message();
  }
  // Ops with a runtime epilogue (here an activation) keep inboxes of 16 (config.h
  // shared_max_slice_clusters); 17 clusters of two hold 4 MiB float32 slices otherwise.
  ForwardParams relu = mid;
  relu.activation = Activation::kRelu;
  PlanOptions seventeen = options;
  seventeen.force_ctas_per_slice = 34;
  seventeen.force_slice_clusters = 17;
  Plan plain;
  ASSERT_TRUE(plan_forward(mid, hopper_h200_limits(), &plain, seventeen).ok());
  EXPECT_EQ(plain.slice_clusters, 17) << plain.describe();
  Plan general;
  const Status refused_general = plan_forward(relu, hopper_h200_limits(), &general, seventeen);
  EXPECT_EQ(refused_general.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused_general.message().find("forced clusters a slice must be in 1..16"), std::string::npos)
      << refused_general.message();
  // Clusters wider than the cluster exchange allows.
  PlanOptions wide = options;
  wide.force_ctas_per_slice = 34;
  wide.force_slice_clusters = 2;
  Plan p;
  const Status status = plan_forward(mid, hopper_h200_limits(), &p, wide);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("must be in 1..32 for the cluster exchange, got 34"), std::string::npos)
      << status.message();
}

TEST(Planner, TinySlicesUseWarpVectorRegisters) {
  const Plan plan = plan_of(problem(DType::kFloat32, {256, 256, 16, 16}));
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.group_size, 32);
  EXPECT_EQ(plan.items_per_lane, 2);
  EXPECT_TRUE(plan.vector_io);
  EXPECT_EQ(plan.grid, 256 * 256 / (detail::kGroupCtaThreads / 32));
}

// inorm-bench's lanesN variants: fewer lanes a slice, each holding more of it; refused where no
// compiled configuration holds the slice with that many lanes, or the count is not one of them.
TEST(Planner, ForcedGroupLanes) {
  PlanOptions options;
  options.force_path = Path::kGroupRegisters;
  options.force_group_lanes = 16;
  Plan plan = plan_of(problem(DType::kFloat32, {256, 256, 16, 16}), options);
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.group_size, 16);
  EXPECT_EQ(plan.items_per_lane, 4);
  EXPECT_TRUE(plan.vector_io);
  EXPECT_EQ(plan.grid, 256 * 256 / (detail::kGroupCtaThreads / 16));
  // Scalars (an odd slice): 16 lanes of one value each.
  plan = plan_of(problem(DType::kFloat32, {3, 5, 9}), options);
  EXPECT_EQ(plan.group_size, 16);
  EXPECT_EQ(plan.items_per_lane, 1);
  EXPECT_FALSE(plan.vector_io);
  // 16 lanes x 4 vectors hold 256 float32; 512 need a configuration that is not compiled.
  ForwardParams p = problem(DType::kFloat32, {2, 3, 512});
  Plan refused;
  Status status = plan_forward(p, hopper_h200_limits(), &refused, options);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("with 16 lanes a slice"), std::string::npos) << status.message();
  // 64 lanes (two warps) take vectors only, in the one configuration of 8 items a lane.
  options.force_group_lanes = 64;
  plan = plan_of(problem(DType::kFloat32, {2, 3, 2048}), options);
  EXPECT_EQ(plan.group_size, 64);
  EXPECT_EQ(plan.items_per_lane, 8);
  EXPECT_EQ(plan.grid, 2);  // four slices a CTA
  for (const int64_t len : {int64_t{256}, int64_t{2047}}) {  // one vector a lane; scalars
    status = plan_forward(problem(DType::kFloat32, {2, 3, len}), hopper_h200_limits(), &refused, options);
    EXPECT_NE(status.message().find("with 64 lanes a slice"), std::string::npos) << status.message();
  }
  for (int lanes : {-1, 2, 12, 128}) {
    options.force_group_lanes = lanes;
    status = plan_forward(problem(DType::kFloat32, {256, 256, 16, 16}), hopper_h200_limits(), &refused, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << lanes;
    EXPECT_NE(status.message().find("forced group lanes"), std::string::npos) << status.message();
  }
}

// GroupNorm's affine forward leaves group_registers for shared_resident where a lane would hold
// more than kGroupSeekingMaxItems (4) items on fewer than 256 lanes an SM (33,792 on the H200):
// its window's move at each item is then the kernel's time. Its backward, and GroupNorm without an
// affine (nothing moves), keep group_registers.
TEST(Planner, GroupNormAffineOnFewLanesLeavesGroupRegisters) {
  struct Expected {
    DType dtype;
    std::initializer_list<int64_t> shape;
    Path path;
  };
  const Expected expected[] = {
      {DType::kFloat16, {2, 512, 16, 16}, Path::kSharedResident},    // 64 slices x 64 lanes x 8 items
      {DType::kFloat32, {16, 256, 16, 16}, Path::kSharedResident},   // 32,768 lanes: one short
      {DType::kFloat16, {32, 512, 16, 16}, Path::kGroupRegisters},   // 65,536 lanes
      {DType::kBFloat16, {2, 128, 16, 16}, Path::kGroupRegisters},   // four items a lane
  };
  for (const Expected& e : expected) {
    const Plan plan = plan_of(affine_groups(e.dtype, e.shape, 32));
    EXPECT_EQ(plan.path, e.path) << plan.describe();
  }
  ForwardParams plain = problem(DType::kFloat16, {2, 512, 16, 16});
  plain.groups = 32;
  EXPECT_EQ(plan_of(plain).path, Path::kGroupRegisters);
}

// inorm-bench's lanesL-ctaT variants: group_registers' CTAs of whole warps and whole slices' lanes,
// up to kGroupCtaThreads; the grid covers every slice. Refused otherwise, naming the bounds.
TEST(Planner, ForcedGroupCtaThreads) {
  PlanOptions options;
  options.force_path = Path::kGroupRegisters;
  options.force_group_cta_threads = 64;
  Plan plan = plan_of(problem(DType::kFloat32, {3, 5, 256}), options);  // 32 lanes a slice
  EXPECT_EQ(plan.threads, 64);
  EXPECT_EQ(plan.grid, 8);  // 15 slices, two a CTA: the last CTA's second warp idle
  options.force_group_lanes = 64;
  plan = plan_of(problem(DType::kFloat32, {3, 5, 2048}), options);
  EXPECT_EQ(plan.threads, 64);
  EXPECT_EQ(plan.grid, 15);
  options.force_group_lanes = 16;
  options.force_group_cta_threads = 32;
  plan = plan_of(problem(DType::kFloat32, {3, 5, 256}), options);
  EXPECT_EQ(plan.grid, 8);
  Plan refused;
  // 16 lanes in 48 threads: not whole warps; 64 lanes in one warp; past 256; negative.
  const std::pair<int, int> bad[] = {{16, 48}, {64, 32}, {32, 512}, {32, -32}};
  for (const auto& [lanes, threads] : bad) {
    options.force_group_lanes = lanes;
    options.force_group_cta_threads = threads;
    const Status status =
        plan_forward(problem(DType::kFloat32, {3, 5, lanes == 64 ? 2048 : 256}), hopper_h200_limits(), &refused, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << lanes << " " << threads;
    EXPECT_NE(status.message().find("forced group_registers CTA threads"), std::string::npos) << status.message();
  }
}

// GroupNorm: a slice is C / groups channels x S, planned as one slice of that length; the affine
// changes inside it only with weight or bias (the general op then follows each element's channel).
TEST(Planner, GroupNormSlicesSpanTheGroupsChannels) {
  ForwardParams p = affine_groups(DType::kFloat16, {2, 320, 64, 64}, 32);
  Plan plan = plan_of(p);
  EXPECT_EQ(plan.num_slices, 2 * 32);
  EXPECT_EQ(plan.slice_len, 10 * 64 * 64);
  EXPECT_EQ(plan.slice_channels, 10);
  EXPECT_EQ(plan.channels, 320);
  EXPECT_TRUE(plan.channel_affine);
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_NE(plan.describe().find("groups=32 channel-affine"), std::string::npos) << plan.describe();
  EXPECT_TRUE(detail::runs_general_op(plan));  // chunks of 8192 in channels of 4096
  p.weight = nullptr;
  plan = plan_of(p);
  EXPECT_FALSE(plan.channel_affine);
  EXPECT_EQ(plan.describe().find("channel-affine"), std::string::npos) << plan.describe();
  // One channel a group is InstanceNorm's plan; one group holds a whole sample.
  p.groups = 320;
  plan = plan_of(p);
  EXPECT_EQ(plan.slice_channels, 1);
  EXPECT_EQ(plan.num_slices, 2 * 320);
  EXPECT_EQ(plan.describe().find("groups="), std::string::npos) << plan.describe();
  p.groups = 1;
  plan = plan_of(p);
  EXPECT_EQ(plan.num_slices, 2);
  EXPECT_EQ(plan.slice_len, 320 * 64 * 64);
  // A GroupNorm slice may be 16-byte aligned where a channel is not: 8 channels of 2 floats.
  ForwardParams odd = problem(DType::kFloat32, {4, 64, 2});
  odd.groups = 8;
  EXPECT_TRUE(detail::plan_signature(odd).vector_io);
  odd.groups = 0;
  EXPECT_FALSE(detail::plan_signature(odd).vector_io);
  // A plan for GroupNorm does not run InstanceNorm of the same tensor, nor another group count.
  ForwardParams a = problem(DType::kFloat32, {2, 8, 32, 32});
  a.groups = 4;
  ForwardParams b = a;
  b.groups = 2;
  ForwardParams in = a;
  in.groups = 0;
  EXPECT_FALSE(detail::same_problem(detail::plan_signature(a), detail::plan_signature(b)));
  EXPECT_FALSE(detail::same_problem(detail::plan_signature(a), detail::plan_signature(in)));
}

// Chunks that each lie in one channel (their length divides the channel's) take the plain op with
// the affine of their channel: GroupNorm(32) of 16x256x128x128 float32 (gn-only-fp32) is eight
// CTAs a slice of eight 16384-element channels; forced onto split_pipelined its parts are channels
// too. Chunks across channels and an activation keep the general op (the backward too:
// PlanBackward.GroupNormSumsChannelsInsideSlices).
TEST(Planner, ChunksInsideChannelsTakeThePlainOp) {
  ForwardParams p = affine_groups(DType::kFloat32, {16, 256, 128, 128}, 32);
  Plan plan = plan_of(p);
  ASSERT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_slice, 8);
  EXPECT_EQ(plan.chunk_len, 128 * 128);
  EXPECT_TRUE(plan.channel_affine);
  EXPECT_TRUE(detail::chunks_lie_in_channels(plan));
  EXPECT_FALSE(detail::runs_general_op(plan));
  EXPECT_NE(plan.describe().find("groups=32 chunk-channel-affine"), std::string::npos) << plan.describe();
  // Half a channel a CTA: still inside one.
  PlanOptions sixteen;
  sixteen.force_path = Path::kSharedResident;
  sixteen.force_ctas_per_slice = 16;
  EXPECT_FALSE(detail::runs_general_op(plan_of(p, sixteen)));
  // Six CTAs: chunks of 21856 cross channels.
  PlanOptions six = sixteen;
  six.force_ctas_per_slice = 6;
  plan = plan_of(p, six);
  EXPECT_FALSE(detail::chunks_lie_in_channels(plan));
  EXPECT_TRUE(detail::runs_general_op(plan));
  EXPECT_NE(plan.describe().find("groups=32 channel-affine"), std::string::npos) << plan.describe();
  PlanOptions split;
  split.force_path = Path::kSplitPipelined;
  plan = plan_of(p, split);
  ASSERT_EQ(plan.path, Path::kSplitPipelined);
  EXPECT_EQ(128 * 128 % plan.chunk_len, 0) << plan.describe();
  EXPECT_FALSE(detail::runs_general_op(plan));
  p.activation = Activation::kSilu;
  EXPECT_TRUE(detail::runs_general_op(plan_of(p)));
}

// GroupNorm's affine where the steady plan's 64 KiB chunks lie in channels: the steady plan stays,
// in the plain op, rather than a register group of eight whose chunks cross channels (the general
// op) or split_pipelined at 16 CTAs. Measured on the H200 (dev/VARIANTS.md 62): GroupNorm(16) of
// 32x256x128x128 float32 1.28x -> 1.16x, of 16x256x256x128 float16 2.6x -> 1.24x.
TEST(Planner, SteadyChunksInsideChannelsStay) {
  ForwardParams p = affine_groups(DType::kFloat32, {32, 256, 128, 128}, 16);
  Plan plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_slice, 16);
  EXPECT_EQ(plan.ctas_per_sm, 3);
  EXPECT_EQ(plan.register_len, 0);
  EXPECT_FALSE(detail::runs_general_op(plan)) << plan.describe();
  // 16-bit: chunks of 32768 in channels of 32768; twelve channels a slice: twelve CTAs.
  plan = plan_of(affine_groups(DType::kFloat16, {16, 256, 256, 128}, 16));
  EXPECT_EQ(plan.ctas_per_slice, 16);
  EXPECT_FALSE(detail::runs_general_op(plan)) << plan.describe();
  plan = plan_of(affine_groups(DType::kFloat32, {16, 192, 128, 128}, 16));
  EXPECT_EQ(plan.ctas_per_slice, 12);
  EXPECT_EQ(plan.ctas_per_sm, 3);
  EXPECT_FALSE(detail::runs_general_op(plan)) << plan.describe();
  // Without the affine the plain op runs anyway: register parts in groups of eight.
  p.weight = nullptr;
  plan = plan_of(p);
  EXPECT_EQ(plan.ctas_per_slice, 8);
  EXPECT_GT(plan.register_len, 0);
  // With an activation the op is general whatever the chunks; 16 CTAs without register parts would
  // split, so eight with them (chunks of two channels).
  p = affine_groups(DType::kFloat32, {32, 256, 128, 128}, 16);
  p.activation = Activation::kSilu;
  plan = plan_of(p);
  EXPECT_EQ(plan.ctas_per_slice, 8) << plan.describe();
  EXPECT_GT(plan.register_len, 0);
  EXPECT_TRUE(detail::runs_general_op(plan));
  // Steady chunks inside channels but wider than a cluster (32 of 64 KiB a 2 MiB bfloat16 slice),
  // which no cluster of eight holds: its 32 slices fill two rounds of pairs (eight a slice, in
  // chunks of one channel: the plain op).
  plan = plan_of(affine_groups(DType::kBFloat16, {1, 512, 256, 256}, 32));
  EXPECT_EQ(plan.slice_clusters, 8) << plan.describe();
  EXPECT_GT(plan.register_len, 0);
  EXPECT_FALSE(detail::runs_general_op(plan)) << plan.describe();
}

TEST(Planner, OddHalfSlicesUseOneCtaEach) {
  // 127 x 129 half values: 32766 bytes, slices not 16-byte aligned. Four CTAs per SM give 528
  // CTAs for 1024 slices: two full rounds (six would leave the second round a third empty).
  const Plan plan = plan_of(problem(DType::kFloat16, {16, 64, 127, 129}));
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_slice, 1);
  EXPECT_EQ(plan.ctas_per_sm, 6);  // 32 KiB slices: six fill 192 KiB of an SM
  EXPECT_EQ(plan.grid, 792);
  EXPECT_EQ(plan.chunk_len, 16384);
  EXPECT_EQ(plan.threads, 128);
  EXPECT_EQ(plan.workspace_bytes, 0u);
}

// Slices too large for the chip: split_pipelined, one 64 KiB stage a part, three CTAs per SM
// (what the stage buffer allows), statistics half an item per CTA ahead of one slice with L2 hints
// and each slice's second reads walking back up to 16 MiB a slice (two items per CTA without hints
// beyond), and resident parts (read once) one per SM, at most half of a slice's.
TEST(Planner, SlicesTooLargeForTheChipPipeline) {
  const Plan few = plan_of(problem(DType::kFloat32, {4, 3, 2048, 2048}));
  EXPECT_EQ(few.path, Path::kSplitPipelined);
  EXPECT_EQ(few.parts_per_slice, 256);
  EXPECT_EQ(few.chunk_len, 16384);
  EXPECT_EQ(few.smem_bytes, 65536 + 128);  // + 16 to mirror x's alignment, rounded to 128 (a region)
  EXPECT_EQ(few.grid, 396);
  EXPECT_EQ(few.pipeline_lead, 256 + 396 / 2);  // 16 MiB slices: the short lead, walking back
  EXPECT_TRUE(few.evict_first);
  EXPECT_TRUE(few.walk_back);
  // Partials (12 x 256 of 32 bytes: 98,304), the slices' statistics (384, rounded to 512),
  // counters (52, to 256).
  EXPECT_EQ(few.workspace_bytes, 98304u + 512 + 256);
  EXPECT_EQ(few.resident_parts, 128);
  EXPECT_EQ(few.describe(),
            "split_pipelined parts=256 part_len=16384 grid=396 lead=454 resident=128 evict-first walk-back");
  const Plan vol = plan_of(problem(DType::kFloat32, {2, 32, 128, 128, 128}));
  EXPECT_EQ(vol.path, Path::kSplitPipelined);
  EXPECT_EQ(vol.parts_per_slice, 128);
  EXPECT_EQ(vol.pipeline_lead, 128 + 396 / 2);  // 8 MiB slices: the short lead
  EXPECT_TRUE(vol.evict_first);
  EXPECT_TRUE(vol.walk_back);
  EXPECT_EQ(vol.describe(),
            "split_pipelined parts=128 part_len=16384 grid=396 lead=326 resident=64 evict-first walk-back");
  // The boundaries: one element past 8 MiB a slice (129 parts, the last of 4 bytes) still takes the
  // short lead, walking back; one past 16 MiB (257 parts) the long lead without hints, walking forward.
  const Plan past = plan_of(problem(DType::kFloat32, {2, 32, 2 * 1024 * 1024 + 1}));
  EXPECT_EQ(past.parts_per_slice, 129);
  EXPECT_TRUE(past.evict_first);
  EXPECT_TRUE(past.walk_back);
  EXPECT_EQ(past.pipeline_lead, 129 + 396 / 2);
  const Plan long_lead = plan_of(problem(DType::kFloat32, {2, 32, 4 * 1024 * 1024 + 1}));
  EXPECT_EQ(long_lead.parts_per_slice, 257);
  EXPECT_FALSE(long_lead.evict_first);
  EXPECT_FALSE(long_lead.walk_back);
  EXPECT_EQ(long_lead.pipeline_lead, 257 + 2 * 396);
  EXPECT_EQ(vol.resident_parts, 64);
  // A stage is 64 KiB in every dtype: 32768 bfloat16 values.
  const Plan bf16 = plan_of(problem(DType::kBFloat16, {4, 3, 2048, 2048}));
  EXPECT_EQ(bf16.path, Path::kSplitPipelined);
  EXPECT_EQ(bf16.chunk_len, 32768);
  EXPECT_EQ(bf16.parts_per_slice, 128);
  // The smallest such slices: 56 parts (the last ragged), a grid no larger than the 224 items, and
  // a lead of every statistics item, since the slack exceeds them.
  const int64_t largest = detail::largest_resident_slice(DType::kFloat32, 1, hopper_h200_limits());
  const Plan small = plan_of(problem(DType::kFloat32, {1, 2, largest + 1}));
  EXPECT_EQ(small.path, Path::kSplitPipelined);
  EXPECT_EQ(small.parts_per_slice, 56);
  EXPECT_EQ(small.chunk_len, 16384);
  EXPECT_EQ(small.grid, 224);
  EXPECT_EQ(small.pipeline_lead, 112);
  EXPECT_EQ(small.resident_parts, 28);
  // One slice: the lead is the whole slice (every statistics item before the first normalize
  // item), and the grid holds all 512 items it fits.
  const Plan one = plan_of(problem(DType::kFloat32, {1, 1, 2048, 2048}));
  EXPECT_EQ(one.path, Path::kSplitPipelined);
  EXPECT_EQ(one.grid, 396);
  EXPECT_EQ(one.describe(),
            "split_pipelined parts=256 part_len=16384 grid=396 lead=256 resident=128 evict-first walk-back");
  // One per SM at most: 132 of the 512 parts of a slice of 32 MiB.
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {1, 2, 4096, 2048})).resident_parts, 132);
  // With an activation, one per four SMs (its elementwise pass is bound by instructions).
  ForwardParams activated = problem(DType::kFloat32, {4, 3, 2048, 2048});
  activated.activation = Activation::kSilu;
  EXPECT_EQ(plan_of(activated).resident_parts, 33);
}

// Resident parts can be forced from none to every part of a slice while fewer than the grid's
// CTAs (each waits for the rest of its slice); more is refused. (With nothing to write the planner
// takes none: backward_plan_test.cpp.)
TEST(Planner, ResidentPartsForcedWithinTheirBounds) {
  const ForwardParams p = problem(DType::kFloat32, {4, 3, 2048, 2048});
  PlanOptions options;
  for (int resident : {0, 1, 255, 256}) {
    options.force_resident_parts = resident;
    EXPECT_EQ(plan_of(p, options).resident_parts, resident);
  }
  Plan plan;
  for (int resident : {257, -2}) {
    options.force_resident_parts = resident;
    const Status status = plan_forward(p, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << resident;
    EXPECT_NE(status.message().find("forced resident parts"), std::string::npos) << status.message();
  }
  // 512 parts on a grid of 396: 395 at most.
  const ForwardParams wide = problem(DType::kFloat32, {1, 1, 4096, 2048});
  options.force_resident_parts = 395;
  EXPECT_EQ(plan_of(wide, options).resident_parts, 395);
  options.force_resident_parts = 396;
  EXPECT_EQ(plan_forward(wide, hopper_h200_limits(), &plan, options).code(), StatusCode::kInvalidArgument);
}

// A part's stage can be forced smaller (more, shorter parts: a shorter lead in bytes) in 4 KiB
// steps up to the stage the kernel is built for; anything else is refused.
TEST(Planner, PartBytesForcedWithinTheirBounds) {
  // 4 MiB slices: 64 parts of 64 KiB (eight of them fill no two rounds of clusters of two)
  const ForwardParams p = problem(DType::kFloat32, {1, 8, 1024, 1024});
  EXPECT_EQ(plan_of(p).parts_per_slice, 64);
  PlanOptions options;
  options.force_part_bytes = 16 * 1024;
  const Plan small = plan_of(p, options);
  EXPECT_EQ(small.chunk_len, 4096);
  EXPECT_EQ(small.parts_per_slice, 256);
  EXPECT_EQ(small.pipeline_lead, 256 + small.grid / 2);  // 4 MiB slices: the short lead
  // The backward's stage holds x and dy: a part of each is half as long.
  BackwardParams b = backward_of(p);
  Plan backward;
  ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &backward, options).ok());
  EXPECT_EQ(backward.chunk_len, 2048);
  Plan plan;
  for (int bytes : {-4096, 1024, 6000, 68 * 1024}) {
    options.force_part_bytes = bytes;
    const Status status = plan_forward(p, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bytes;
    EXPECT_NE(status.message().find("forced part bytes"), std::string::npos) << status.message();
  }
}

// The elementwise walk can be forced back or forward whatever the slice's bytes (the planner walks
// back up to 16 MiB of each input); anything else is refused.
TEST(Planner, WalkBackForcedOrRefused) {
  const ForwardParams p = problem(DType::kFloat32, {4, 3, 2048, 2048});  // 16 MiB slices
  ASSERT_EQ(plan_of(p).path, Path::kSplitPipelined);
  EXPECT_TRUE(plan_of(p).walk_back);
  PlanOptions options;
  options.force_walk_back = 0;
  const Plan forward = plan_of(p, options);
  EXPECT_FALSE(forward.walk_back);
  EXPECT_EQ(forward.describe().find("walk-back"), std::string::npos) << forward.describe();
  const ForwardParams wide = problem(DType::kFloat32, {1, 2, 4096, 2048});  // 32 MiB slices
  EXPECT_FALSE(plan_of(wide).walk_back);
  options.force_walk_back = 1;
  EXPECT_TRUE(plan_of(wide, options).walk_back);
  for (int walk_back : {-2, 2}) {
    options.force_walk_back = walk_back;
    Plan plan;
    const Status status = plan_forward(p, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << walk_back;
    EXPECT_NE(status.message().find("forced walk back"), std::string::npos) << status.message();
  }
}

// pipelined_item hands out every reduction item and every elementwise item of a non-resident part
// exactly once, each slice's reductions all before its first elementwise item (or the grid could
// wait forever), each stream in order (walking back, each slice's elementwise items from its last
// streamed part), and nothing for resident parts' elementwise passes.
TEST(Planner, PipelinedItemsComeInAnOrderThatCannotDeadlock) {
  struct Order {
    int64_t slices, parts, resident, lead;
  };
  const Order orders[] = {
      {1, 1, 0, 1},     {1, 1, 1, 1},    {5, 1, 0, 2},     {5, 1, 1, 5},    {3, 7, 0, 7},
      {3, 7, 3, 7},     {3, 7, 3, 10},   {3, 7, 7, 21},    {12, 256, 128, 1048}, {12, 512, 132, 1304},
      {64, 128, 64, 920}, {2, 1025, 132, 1025}, {1000, 1, 0, 792}, {600, 3, 1, 795}, {7, 5, 4, 35},
  };
  for (const bool walk_back : {false, true}) {
    for (const Order& o : orders) {
      SCOPED_TRACE(std::to_string(o.slices) + " slices, " + std::to_string(o.parts) + " parts, " +
                   std::to_string(o.resident) + " resident, lead " + std::to_string(o.lead) +
                   (walk_back ? ", walking back" : ""));
      const int64_t streamed = o.parts - o.resident;
      const int64_t items = detail::pipelined_items(o.slices, o.parts, o.resident);
      std::vector<int> reduced(o.slices * o.parts, 0), written(o.slices * o.parts, 0);
      std::vector<int64_t> reductions_out(o.slices, 0);
      int64_t next_reduction = 0, next_elementwise = 0;
      bool ok = true;
      for (int64_t item = 0; item < items && ok; ++item) {
        const detail::PipelinedItem work =
            detail::pipelined_item(item, o.slices, o.parts, o.resident, o.lead, walk_back);
        const int64_t index = work.slice * o.parts + work.part;
        ok = work.slice >= 0 && work.slice < o.slices && work.part >= 0 && work.part < o.parts;
        if (!ok) break;
        if (work.elementwise) {
          const int64_t nth = work.slice * streamed + (walk_back ? streamed - 1 - work.part : work.part);
          ok = work.part < streamed && nth == next_elementwise++ && reductions_out[work.slice] == o.parts;
          ++written[index];
        } else {
          ok = index == next_reduction++;
          ++reduced[index];
          ++reductions_out[work.slice];
          if (work.part >= streamed) ++written[index];  // a resident part: written by its reduction item
        }
        EXPECT_TRUE(ok) << "item " << item << ": slice " << work.slice << " part " << work.part
                        << (work.elementwise ? " elementwise" : " reduction");
      }
      EXPECT_EQ(next_reduction, o.slices * o.parts);
      EXPECT_EQ(next_elementwise, o.slices * streamed);
      for (int64_t i = 0; i < o.slices * o.parts && ok; ++i) {
        EXPECT_EQ(reduced[i], 1) << "part " << i;
        EXPECT_EQ(written[i], 1) << "part " << i;
      }
    }
  }
}

// split_pipelined takes slices of any length, one or many, in parts of one 64 KiB stage: 64 MiB
// is 1024 parts, and one value more a 1025th.
TEST(Planner, PipelinedTakesSlicesOfAnyLength) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const int64_t stage = static_cast<int64_t>(detail::split_stage_len(dtype_size(dtype), 1));
    for (int64_t slices : {1, 2}) {
      const Plan at = plan_of(problem(dtype, {1, slices, 1024 * stage}));
      EXPECT_EQ(at.path, Path::kSplitPipelined);
      EXPECT_EQ(at.parts_per_slice, 1024);
      const Plan past = plan_of(problem(dtype, {1, slices, 1024 * stage + 1}));
      EXPECT_EQ(past.path, Path::kSplitPipelined);
      EXPECT_EQ(past.parts_per_slice, 1025);
      EXPECT_EQ(past.chunk_len, stage);
    }
  }
  // A 1 GiB float32 slice: 16384 parts, the lead all of them (one slice).
  const Plan giant = plan_of(problem(DType::kFloat32, {1, 1, 16384, 16384}));
  EXPECT_EQ(giant.describe(), "split_pipelined parts=16384 part_len=16384 grid=396 lead=16384 resident=132");
  EXPECT_FALSE(giant.evict_first);
}

TEST(Planner, TinySlicesUseSubWarpGroups) {
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {3, 5, 2})).group_size, 4);
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {3, 5, 3})).group_size, 4);
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {3, 5, 5})).group_size, 8);
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {3, 5, 17})).group_size, 32);
  const Plan plan = plan_of(problem(DType::kFloat32, {3, 5, 33}));
  EXPECT_EQ(plan.group_size, 32);
  EXPECT_EQ(plan.items_per_lane, 2);
  EXPECT_FALSE(plan.vector_io);
}

TEST(Planner, GroupBoundaries) {
  // Aligned float32: 32 lanes x 16 vectors x 4 = 2048 values; the next aligned size is shared.
  Plan plan = plan_of(problem(DType::kFloat32, {2, 3, 2048}));
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.items_per_lane, 16);
  EXPECT_TRUE(plan.vector_io);
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {2, 3, 2052})).path, Path::kSharedResident);
  // Aligned half: 32 lanes x 8 vectors x 8 = 2048 values (16 vectors would be 128 values a lane);
  // past that two warps, 64 lanes x 8 vectors, 4096 values (CycleGAN's 64x64 channels).
  plan = plan_of(problem(DType::kFloat16, {2, 3, 2048}));
  EXPECT_EQ(plan.group_size, 32);
  EXPECT_EQ(plan.items_per_lane, 8);
  plan = plan_of(problem(DType::kFloat16, {2, 3, 2056}));
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.group_size, 64);
  EXPECT_EQ(plan.items_per_lane, 8);
  EXPECT_EQ(plan_of(problem(DType::kFloat16, {2, 3, 4096})).group_size, 64);
  EXPECT_EQ(plan_of(problem(DType::kFloat16, {2, 3, 4104})).path, Path::kSharedResident);
  // float64: 16 vectors of two, as many as its scalars hold.
  EXPECT_EQ(plan_of(problem(DType::kFloat64, {2, 3, 1024})).path, Path::kGroupRegisters);
  EXPECT_EQ(plan_of(problem(DType::kFloat64, {2, 3, 1026})).path, Path::kSharedResident);
  // The general forward (an activation fixed around each item) takes the plain op's lanes up to 8
  // vectors: with ReLU 4096 half values in two warps (CycleGAN's residual blocks); 2048 float32
  // in two warps of 8 vectors, not one of 16; one warp forced refused. (Its backward keeps to a
  // warp: PlanBackward.GeneralGroupRegistersKeepToAWarp.)
  ForwardParams activated = problem(DType::kFloat16, {2, 3, 2056});
  activated.activation = Activation::kRelu;
  plan = plan_of(activated);
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_TRUE(detail::runs_general_op(plan));
  EXPECT_EQ(plan.group_size, 64);
  EXPECT_EQ(plan.items_per_lane, 8);
  activated.spatial[0] = 4104;
  EXPECT_EQ(plan_of(activated).path, Path::kSharedResident);
  ForwardParams activated_float = problem(DType::kFloat32, {2, 3, 2048});
  activated_float.activation = Activation::kSilu;
  plan = plan_of(activated_float);
  EXPECT_EQ(plan.group_size, 64);
  EXPECT_EQ(plan.items_per_lane, 8);
  PlanOptions one_warp;
  one_warp.force_path = Path::kGroupRegisters;
  one_warp.force_group_lanes = 32;
  Plan refused;
  const Status status = plan_forward(activated_float, hopper_h200_limits(), &refused, one_warp);
  EXPECT_NE(status.message().find("no group_registers configuration holds a slice of 2048 elements with 32 lanes"),
            std::string::npos)
      << status.message();
  activated_float.spatial[0] = 2052;
  EXPECT_EQ(plan_of(activated_float).path, Path::kSharedResident);
  // Scalar (slices not 16-byte aligned): 32 lanes x 32 values.
  plan = plan_of(problem(DType::kFloat32, {2, 3, 1023}));
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.items_per_lane, 32);
  EXPECT_FALSE(plan.vector_io);
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {2, 3, 1025})).path, Path::kSharedResident);
}

TEST(Planner, MisalignedViewLosesVectorLoadsOnly) {
  ForwardParams p = problem(DType::kFloat32, {256, 256, 16, 16});
  p.x = reinterpret_cast<void*>(kAligned + 4);
  const Plan plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_FALSE(plan.vector_io);
  EXPECT_FALSE(plan.coaligned);
  p.y = reinterpret_cast<void*>(kAligned * 64 + 4);  // both offset alike: stores stay vectorized
  EXPECT_TRUE(plan_of(p).coaligned);
}

TEST(Planner, SharedBoundaries) {
  const DeviceLimits limits = hopper_h200_limits();
  // A slice below 16 KiB stays on one CTA.
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {2, 3, 4096})).ctas_per_slice, 1);
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    const int64_t largest = detail::largest_resident_slice(dtype, 1, limits);
    // What a cluster of 16 CTAs holds at one per SM ...
    PlanOptions cluster;
    cluster.force_exchange = Exchange::kCluster;
    const Plan at = plan_of(problem(dtype, {1, 2, largest}), cluster);
    EXPECT_EQ(at.path, Path::kSharedResident) << dtype_name(dtype);
    EXPECT_EQ(at.ctas_per_slice, detail::kSharedMaxClusterCtas);
    EXPECT_EQ(at.ctas_per_sm, 1);
    EXPECT_LE(at.smem_bytes + detail::kSharedStaticReserve, limits.max_smem_per_block_optin);
    // ... shared_resident's own plan spreads it over 64 CTAs at two per SM, through L2 (the
    // forward's planner takes split_pipelined there) ...
    const Plan wide = shared_plan_of(problem(dtype, {1, 2, largest}));
    EXPECT_EQ(wide.ctas_per_slice, detail::kSharedMaxCtasPerSlice) << dtype_name(dtype);
    EXPECT_EQ(wide.ctas_per_sm, 2);
    EXPECT_EQ(wide.exchange, Exchange::kGlobal);
    EXPECT_EQ(plan_of(problem(dtype, {1, 2, largest})).path, Path::kSplitPipelined) << dtype_name(dtype);
    // ... and one element more splits.
    EXPECT_EQ(plan_of(problem(dtype, {1, 2, largest + 1})).path, Path::kSplitPipelined) << dtype_name(dtype);
    EXPECT_EQ(plan_of(problem(dtype, {1, 1, largest + 1})).path, Path::kSplitPipelined) << dtype_name(dtype);
  }
  // 16 CTAs of 223.5 KiB: the largest multiple of 512 bytes that leaves the alignment mirror room.
  EXPECT_EQ(detail::largest_resident_slice(DType::kFloat32, 1, limits), 915456);
}

// Chunks and parts of at least 16 KiB are whole multiples of 512 bytes; shorter ones, of 16 bytes.
TEST(Planner, LongChunksAreMultiplesOf512Bytes) {
  // 8x32x300x300 fp32: 6 chunks of 15000 values (60,000 bytes) would be 16-byte multiples.
  const Plan h300 = plan_of(problem(DType::kFloat32, {8, 32, 300, 300}));
  EXPECT_EQ(h300.path, Path::kSharedResident);
  EXPECT_EQ(h300.ctas_per_slice, 6);
  EXPECT_EQ(h300.chunk_len, 15104);
  EXPECT_EQ(h300.chunk_len * 4 % detail::kChunkAlignBytes, 0);
  // The same for split_pipelined's parts: 915,457 values in 56 parts would be 16,348 each.
  const int64_t largest = detail::largest_resident_slice(DType::kFloat32, 1, hopper_h200_limits());
  const Plan split = plan_of(problem(DType::kFloat32, {1, 2, largest + 1}));
  EXPECT_EQ(split.path, Path::kSplitPipelined);
  EXPECT_EQ(split.chunk_len, 16384);
  // Below 16 KiB a chunk stays a multiple of 16 bytes (ForcedPaths: 1368 values).
}

// Where the chunks leave room for one more CTA on an SM, the buffer takes the SM's share, so that
// only the plan's CTAs fit (the cluster launch packed SMs unevenly otherwise).
TEST(Planner, BufferTakesTheSmShareWhereOneMoreCtaWouldFit) {
  const DeviceLimits limits = hopper_h200_limits();
  auto per_cta = [&](const Plan& p) {
    return p.smem_bytes + detail::kSharedStaticReserve + limits.reserved_smem_per_block;
  };
  const Plan f200 = plan_of(problem(DType::kFloat32, {64, 64, 200, 200}));
  EXPECT_EQ(f200.ctas_per_sm, 3);
  EXPECT_EQ(f200.chunk_len, 13440);  // 52.5 KiB: four such buffers would fit
  EXPECT_EQ(f200.smem_bytes, 73728);
  EXPECT_LE(3 * per_cta(f200), limits.smem_per_sm);
  EXPECT_GT(4 * per_cta(f200), limits.smem_per_sm);
  // The bf16 seed's 64 KiB chunks fill an SM three at a time already: the buffer is the chunk's.
  EXPECT_EQ(plan_of(problem(DType::kBFloat16, {112, 64, 512, 512})).smem_bytes, 65536 + 128);
}

// A cluster must fit in one GPC, so fewer clusters may be resident than the SM slots hold (an
// H200 holds 62 clusters of 4 at two per SM, not 66). The planner counts rounds of slices with the
// clusters the limits know (plan_forward for a device asks it, hopper_h200_limits has an H200's),
// and with the SM slots where they are unknown.
TEST(Planner, ResidentClustersSetTheRounds) {
  const DeviceLimits h200 = hopper_h200_limits();
  DeviceLimits slots_only = h200;
  for (auto& row : slots_only.resident_clusters) {
    for (int& clusters : row) clusters = 0;
  }
  auto plan_with = [](const ForwardParams& p, const DeviceLimits& l, const PlanOptions& options = {}) {
    Plan plan;
    const Status status = plan_forward(p, l, &plan, options);
    EXPECT_TRUE(status.ok()) << status.message();
    return plan;
  };
  // 1x64x256x256 fp32: by slots, 64 slices of 256 KiB take one round of 66 clusters of 4 at two
  // per SM; the 62 resident need a second round for two slices (1.32-1.38x copy on the H200).
  // With the clusters counted: 64 clusters of 7 at four per SM, one round (1.16-1.17x).
  const ForwardParams few = problem(DType::kFloat32, {1, 64, 256, 256});
  const Plan by_slots = plan_with(few, slots_only);
  EXPECT_EQ(by_slots.ctas_per_slice, 4);
  EXPECT_EQ(by_slots.ctas_per_sm, 2);
  EXPECT_EQ(by_slots.grid, 64 * 4);
  const Plan by_clusters = plan_with(few, h200);
  EXPECT_EQ(by_clusters.ctas_per_slice, 7);
  EXPECT_EQ(by_clusters.ctas_per_sm, 4);
  EXPECT_EQ(by_clusters.exchange, Exchange::kCluster);
  EXPECT_EQ(by_clusters.grid, 64 * 7);
  // The seed keeps its steady plan; its grid is the 30 clusters of 8 resident, not 33 by slots.
  const ForwardParams seed = problem(DType::kFloat32, {112, 64, 512, 512});
  EXPECT_EQ(plan_with(seed, slots_only).grid, 33 * 8);
  EXPECT_EQ(plan_with(seed, h200).grid, 30 * 8);
  // Groups through L2 count slots: the L2 exchange's CTAs need only be resident (16 at three per
  // SM: no register parts without a cluster).
  PlanOptions global;
  global.force_exchange = Exchange::kGlobal;
  EXPECT_EQ(plan_with(seed, h200, global).grid, 24 * 16);
}

TEST(Planner, OccupancyCapIsHonoured) {
  PlanOptions options;
  options.max_ctas_per_sm = 2;
  const Plan plan = plan_of(problem(DType::kFloat16, {16, 64, 127, 129}), options);
  EXPECT_EQ(plan.ctas_per_sm, 2);
  EXPECT_EQ(plan.grid, 264);
}

TEST(Planner, ForcedCtasPerSm) {
  PlanOptions options;
  options.force_ctas_per_sm = 4;
  const Plan plan = plan_of(problem(DType::kFloat32, {32, 128, 256, 256}), options);
  EXPECT_EQ(plan.ctas_per_sm, 4);
  // Of the groups whose chunks fit four to an SM, the busiest slots with the clusters resident:
  // 62 clusters of 8 (496 of 528 slots), where 79 of 6 fill 474.
  EXPECT_EQ(plan.ctas_per_slice, 8);
  // 1 MiB slices at four per SM need more CTAs than a cluster holds: 33, through L2.
  const Plan seed = plan_of(problem(DType::kFloat32, {112, 64, 512, 512}), options);
  EXPECT_EQ(seed.ctas_per_slice, 33);
  EXPECT_EQ(seed.exchange, Exchange::kGlobal);
  // With clusters forced, nothing fits four to an SM.
  options.force_exchange = Exchange::kCluster;
  Plan none;
  EXPECT_FALSE(plan_forward(problem(DType::kFloat32, {112, 64, 512, 512}), hopper_h200_limits(), &none, options).ok());
}

TEST(Planner, EmptyAndEval) {
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {0, 3, 8, 8})).path, Path::kEmpty);
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {2, 0, 8, 8})).path, Path::kEmpty);
  ForwardParams p = problem(DType::kFloat32, {2, 3, 1, 1});
  p.use_input_stats = false;
  p.running_mean = reinterpret_cast<void*>(kAligned * 2);
  p.running_var = reinterpret_cast<void*>(kAligned * 3);
  const Plan plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kElementwiseEval);
  EXPECT_EQ(plan.grid, 1);  // 6 elements
  EXPECT_EQ(plan_of([&] {
              ForwardParams big = p;
              big.batch = 1 << 20;
              return big;
            }()).grid,
            132 * 2048 / 256 * 4);  // four waves of the grid-stride loop
  EXPECT_FALSE(plan.update_running_stats);
  EXPECT_EQ(plan.workspace_bytes, 0u);
}

// channels_last's three kernels (forced where the resident form would fit): the channels in equal
// blocks of at most 256 (whole 16-byte vectors where every row starts aligned), as many rows a pass
// as 256 threads hold, and as many whole passes as 64 KiB of shared memory holds (both passes stage
// each tile there).
TEST(Planner, ChannelsLastTiles) {
  struct Expect {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int channel_block, threads;
    int64_t tile_rows, tiles;
    bool vector;
  };
  const Expect cases[] = {
      {"cl-bf16: a row of 64 channels is 128 bytes, so 512 rows", DType::kBFloat16, {64, 64, 128, 128}, 64, 256, 512, 32,
       true},
      {"three channels: rows of 12 bytes, no vectors; 85 rows a pass, 64 passes", DType::kFloat32, {32, 3, 256, 256}, 3,
       255, 5440, 13, false},
      {"one channel: a column of 256 threads, the whole slice in whole passes", DType::kFloat32, {2, 1, 100, 100}, 1,
       256, 10240, 1, false},
      {"129 channels: one row a pass, 127 rows of 516 bytes", DType::kFloat32, {8, 129, 57, 61}, 129, 129, 127, 28,
       false},
      {"600 channels: three blocks of 200, 163 rows of 400 bytes", DType::kFloat16, {2, 600, 30, 30}, 200, 200, 163, 6,
       true},
      {"520 channels: blocks of 174 raised to whole vectors, 176 (the last 168)", DType::kBFloat16,
       {2, 520, 10, 10}, 176, 176, 100, 1, true},
      {"a slice shorter than a tile: one tile of it, in whole passes", DType::kFloat32, {4, 8, 5, 7}, 8, 256, 64, 1,
       true},
  };
  PlanOptions three_kernels;
  three_kernels.force_exchange = Exchange::kNone;
  three_kernels.force_stream_parts = 0;  // a partial a tile (Planner.ChannelsLastStream streams them)
  for (const Expect& e : cases) {
    ForwardParams p = problem(e.dtype, e.shape);
    p.layout = Layout::kChannelsLast;
    const Plan plan = plan_of(p, three_kernels);
    EXPECT_EQ(plan.path, Path::kChannelsLast) << e.why;
    EXPECT_EQ(plan.exchange, Exchange::kNone) << e.why;
    EXPECT_EQ(plan.channel_block, e.channel_block) << e.why;
    EXPECT_EQ(plan.threads, e.threads) << e.why;
    EXPECT_EQ(plan.tile_rows, e.tile_rows) << e.why;
    EXPECT_EQ(plan.parts_per_slice, e.tiles) << e.why;
    EXPECT_EQ(plan.vector_io, e.vector) << e.why;
    // Whole rows (C <= 256) are one run, staged by a bulk copy into a buffer that mirrors its
    // alignment (16 bytes of slack, 128-byte regions); channel blocks' rows are packed.
    const int64_t tile_bytes = e.tile_rows * e.channel_block * static_cast<int64_t>(dtype_size(e.dtype));
    const bool whole_rows = e.channel_block == e.shape.begin()[1];
    EXPECT_EQ(plan.smem_bytes, whole_rows ? (tile_bytes + 16 + 127) / 128 * 128 : tile_bytes) << e.why;
    EXPECT_LE(tile_bytes, 64 * 1024) << e.why;
    EXPECT_EQ(plan.workspace_bytes,
              detail::workspace_layout(plan).total) << e.why;  // partials and coefficients
    EXPECT_GE(plan.workspace_bytes, static_cast<std::size_t>(plan.num_slices) * (e.tiles * 32 + 64)) << e.why;
  }
  // A misaligned x (an element past a 16-byte boundary) moves element by element.
  ForwardParams misaligned = problem(DType::kBFloat16, {64, 64, 128, 128});
  misaligned.layout = Layout::kChannelsLast;
  misaligned.x = reinterpret_cast<void*>(kAligned + 2);
  EXPECT_FALSE(plan_of(misaligned, three_kernels).vector_io);
  EXPECT_EQ(plan_of(misaligned, three_kernels).channel_block, 64);
  // With running stats, elementwise whatever the layout; the NCHW families are refused.
  ForwardParams p = problem(DType::kFloat32, {2, 3, 8, 8});
  p.layout = Layout::kChannelsLast;
  Plan plan;
  PlanOptions options;
  options.force_path = Path::kSplitPipelined;
  EXPECT_EQ(plan_forward(p, hopper_h200_limits(), &plan, options).code(), StatusCode::kInvalidArgument);
  p.layout = Layout::kContiguous;
  options.force_path = Path::kChannelsLast;
  EXPECT_EQ(plan_forward(p, hopper_h200_limits(), &plan, options).code(), StatusCode::kInvalidArgument);
  p.layout = Layout::kChannelsLast;
  p.use_input_stats = false;
  p.running_mean = reinterpret_cast<void*>(kAligned * 2);
  p.running_var = reinterpret_cast<void*>(kAligned * 3);
  EXPECT_EQ(plan_of(p).path, Path::kElementwiseEval);
}

// The three kernels' reduction streamed (Plan::stream_parts), wherever it can and x holds 128 MiB
// or more: the forward's plain op in float32 and the 16-bit types, C = 4, 8, ... 128 (a power of
// two of runs of four channels a thread) with rows aligned to 16 bytes. Its CTAs: a ring of five
// 16 KiB stages and 16 bytes a channel a warp of eight, two an SM on the H200 (its launch bound),
// 264 at once; the parts a sample that cost the least rounds of the grid, each a part's bytes and
// 64 KiB more.
TEST(Planner, ChannelsLastStream) {
  struct Expect {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int64_t parts, grid;
  };
  const Expect cases[] = {
      {"cl-bf16, x of 128 MiB exactly: 64 samples of 2 MiB in four parts, 256 CTAs in one round (five parts "
       "take two)",
       DType::kBFloat16, {64, 64, 128, 128}, 4, 256},
      {"cl-seed-bf16: 112 samples of 32 MiB in 7 parts, 784 in three rounds of 264 (16 parts: seven rounds, "
       "33: 14)",
       DType::kBFloat16, {112, 64, 512, 512}, 7, 264},
      {"cl-seed-fp32: the same parts of 64 MiB samples", DType::kFloat32, {112, 64, 512, 512}, 7, 264},
      {"two volumes of 128 MiB, the stream alone: 132 parts each, one round of the grid", DType::kFloat16,
       {2, 32, 128, 128, 128}, 132, 264},
  };
  PlanOptions three_kernels;
  three_kernels.force_exchange = Exchange::kNone;
  for (const Expect& e : cases) {
    ForwardParams p = problem(e.dtype, e.shape);
    p.layout = Layout::kChannelsLast;
    // The stream alone (where it would apply too: Planner.ChannelsLastStreamApplies).
    PlanOptions options = three_kernels;
    if (e.shape.size() == 5) options.force_stream_applies = 0;
    const Plan plan = plan_of(p, options);
    EXPECT_TRUE(detail::channels_last_streams(plan)) << e.why;
    EXPECT_EQ(plan.stream_parts, e.parts) << e.why;
    EXPECT_EQ(plan.stream_grid, e.grid) << e.why;
    EXPECT_NE(plan.describe().find("stream_parts=" + std::to_string(e.parts)), std::string::npos) << plan.describe();
    // A partial a part of each channel, where the tiles took one a tile.
    EXPECT_EQ(detail::channels_last_reduce_parts(plan), e.parts) << e.why;
    EXPECT_EQ(plan.workspace_bytes, detail::workspace_layout(plan).total) << e.why;
    // cl-bf16 applies too (Planner.ChannelsLastStreamApplies), the rest only streams; there the
    // elementwise kernel takes the tiles a CTA each (dev/VARIANTS.md 124).
    EXPECT_EQ(plan.stream_applies, e.shape.begin()[0] == 64) << e.why;
    if (!plan.stream_applies) EXPECT_EQ(plan.grid, detail::channels_last_tile_items(plan)) << e.why;
  }
  // The seeds' elementwise grid by hand: 112 samples of 1024 float32 tiles (256 rows of 64
  // channels) and of 512 bfloat16 tiles; with the tiles' reduction instead, which the grid also
  // runs, the persistent grid of eight CTAs a slot (three of 64 KiB an SM, 132 SMs).
  ForwardParams seed = problem(DType::kFloat32, {112, 64, 512, 512});
  seed.layout = Layout::kChannelsLast;
  EXPECT_EQ(plan_of(seed, three_kernels).grid, 112 * 1024);
  PlanOptions seed_tiles = three_kernels;
  seed_tiles.force_stream_parts = 0;
  EXPECT_EQ(plan_of(seed, seed_tiles).grid, 8 * 132 * 3);
  seed.dtype = DType::kBFloat16;
  EXPECT_EQ(plan_of(seed, three_kernels).grid, 112 * 512);
  // Where it does not stream: each case the one fact apart from cl-bf16's plan (x a row short of
  // 128 MiB a sample and the tiles' reduction is the planner's where the stream does not apply:
  // Planner.ChannelsLastStreamApplies; forced, it streams).
  ForwardParams short_x = problem(DType::kBFloat16, {64, 64, 128, 127});
  short_x.layout = Layout::kChannelsLast;
  PlanOptions apart_from_apply = three_kernels;
  apart_from_apply.force_stream_applies = 0;
  EXPECT_EQ(plan_of(short_x, apart_from_apply).stream_parts, 0);
  PlanOptions three = apart_from_apply;
  three.force_stream_parts = 3;
  EXPECT_EQ(plan_of(short_x, three).stream_parts, 3);
  const auto cl_bf16 = [] {
    ForwardParams p = problem(DType::kBFloat16, {64, 64, 128, 128});
    p.layout = Layout::kChannelsLast;
    return p;
  };
  struct Apart {
    const char* why;
    ForwardParams params;
  };
  std::vector<Apart> apart;
  apart.push_back({"an activation: the general op", cl_bf16()});
  apart.back().params.activation = Activation::kSilu;
  apart.push_back({"float64: its statistics take two passes", cl_bf16()});
  apart.back().params.dtype = DType::kFloat64;
  apart.push_back({"x an element past 16 bytes: no bulk copies of rows", cl_bf16()});
  apart.back().params.x = reinterpret_cast<void*>(kAligned + 2);
  apart.push_back({"256 channels: 64 runs a row, past a warp's lanes", cl_bf16()});
  apart.back().params.channels = 256;
  apart.push_back({"96 channels: 24 runs, not a power of two", cl_bf16()});
  apart.back().params.channels = 96;
  apart.push_back({"GroupNorm's affine by channel inside a slice: the general op", cl_bf16()});
  apart.back().params.groups = 8;
  apart.back().params.weight = reinterpret_cast<void*>(kAligned * 2);
  for (const Apart& a : apart) {
    const Plan plan = plan_of(a.params, three_kernels);
    EXPECT_EQ(plan.path, Path::kChannelsLast) << a.why;
    EXPECT_EQ(plan.stream_parts, 0) << a.why;
    EXPECT_EQ(detail::channels_last_reduce_parts(plan), plan.parts_per_slice) << a.why;
  }
  // GroupNorm without an affine streams (the plain op), its channels' partials combined a slice.
  ForwardParams groups = cl_bf16();
  groups.groups = 8;
  EXPECT_EQ(plan_of(groups, three_kernels).stream_parts, 4);
  // The resident form (the whole batch on chip at once) reads x once and never streams.
  ForwardParams small = problem(DType::kBFloat16, {8, 64, 32, 32});
  small.layout = Layout::kChannelsLast;
  EXPECT_TRUE(detail::channels_last_resident(plan_of(small)));
  EXPECT_EQ(plan_of(small).stream_parts, 0);
  PlanOptions resident;
  resident.force_exchange = Exchange::kGlobal;
  resident.force_stream_parts = 3;
  Plan refused;
  EXPECT_EQ(plan_forward(small, hopper_h200_limits(), &refused, resident).code(), StatusCode::kInvalidArgument);
  // Forced: by tiles, or in K parts; refused where it cannot stream, past a sample's rows, below -1.
  PlanOptions tiles = three_kernels;
  tiles.force_stream_parts = 0;
  EXPECT_EQ(plan_of(cl_bf16(), tiles).stream_parts, 0);
  PlanOptions seven = three_kernels;
  seven.force_stream_parts = 7;
  const Plan forced = plan_of(cl_bf16(), seven);
  EXPECT_EQ(forced.stream_parts, 7);
  EXPECT_EQ(forced.stream_grid, 264);
  Plan plan;
  ForwardParams silu = cl_bf16();
  silu.activation = Activation::kSilu;
  Status status = plan_forward(silu, hopper_h200_limits(), &plan, seven);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("stream parts need"), std::string::npos) << status.message();
  PlanOptions past = three_kernels;
  past.force_stream_parts = 128 * 128 + 1;
  EXPECT_EQ(plan_forward(cl_bf16(), hopper_h200_limits(), &plan, past).code(), StatusCode::kInvalidArgument);
  PlanOptions negative = three_kernels;
  negative.force_stream_parts = -2;
  EXPECT_EQ(plan_forward(cl_bf16(), hopper_h200_limits(), &plan, negative).code(), StatusCode::kInvalidArgument);
  // The backward streams its plain op the same way, x and dy through the ring (half a stage each):
  // cl-bf16's 128 MiB of x applies too (Planner.ChannelsLastStreamApplies), or streams alone, or
  // in K parts; with an activation (the general op) it reduces its tiles, and refuses forced parts.
  BackwardParams b = backward_of(cl_bf16());
  ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &plan, three_kernels).ok());
  EXPECT_TRUE(plan.stream_applies) << plan.describe();
  EXPECT_EQ(plan.stream_parts, 4);
  EXPECT_EQ(plan.workspace_bytes, detail::workspace_layout(plan).total);
  EXPECT_FALSE(plan.evict_first) << "no elementwise kernel";
  ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &plan, apart_from_apply).ok());
  EXPECT_FALSE(plan.stream_applies);
  EXPECT_EQ(plan.stream_parts, 4) << "256 CTAs in one round, as the forward's";
  EXPECT_FALSE(plan.evict_first) << "256 MiB of x and dy";
  // Three kernels' ring: half a stage of each input, and three float64 sums a channel a warp.
  EXPECT_EQ(detail::channels_last_stream_stage_rows(plan), 64);
  EXPECT_EQ(detail::channels_last_stream_smem_bytes(plan), 5 * 16384 + 8 * 64 * 24);
  ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &plan, seven).ok());
  EXPECT_EQ(plan.stream_parts, 7);
  BackwardParams silu_b = b;
  silu_b.activation = Activation::kSilu;
  ASSERT_TRUE(plan_backward(silu_b, hopper_h200_limits(), &plan, three_kernels).ok());
  EXPECT_EQ(plan.stream_parts, 0);
  EXPECT_EQ(plan_backward(silu_b, hopper_h200_limits(), &plan, seven).code(), StatusCode::kInvalidArgument);
  // Its elementwise kernel marks what it reads and writes evict-first in L2 on up to 64 MiB of x and
  // dy together (cl-3d-fp16's 2x32x64^3 float16, where the streamed kernel does not apply), not
  // past it, nor in the forward, nor where the streamed kernel applies.
  b.dtype = DType::kFloat16;
  b.batch = 2;
  b.channels = 32;
  b.spatial_rank = 3;
  b.spatial[0] = b.spatial[1] = b.spatial[2] = 64;
  ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &plan, apart_from_apply).ok());
  EXPECT_TRUE(plan.evict_first);
  EXPECT_NE(plan.describe().find("evict-first"), std::string::npos) << plan.describe();
  ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &plan, three_kernels).ok());
  EXPECT_TRUE(plan.stream_applies) << plan.describe();
  EXPECT_FALSE(plan.evict_first) << "the streamed kernel's own hints are not the planner's";
  b.spatial[2] = 65;
  ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &plan, apart_from_apply).ok());
  EXPECT_FALSE(plan.evict_first) << "a row past 64 MiB";
  ForwardParams cl_3d = problem(DType::kFloat16, {2, 32, 64, 64, 64});
  cl_3d.layout = Layout::kChannelsLast;
  EXPECT_FALSE(plan_of(cl_3d, three_kernels).evict_first);
}

// The streamed kernel applying too (Plan::stream_applies): where every part fits one round of its
// CTAs (264 on the H200) and holds a ring of stages (five of 16 KiB: 640 rows of 64 16-bit
// channels), in the most parts that do whose CTAs each combine at most 2048 partials (C x parts;
// where that leaves half the 132 SMs idle, 132 CTAs),
// for x of 32 MiB to 1 GiB (the backward: x and dy of 32 MiB to 8 GiB) on 64 CTAs or more. Forced
// (force_stream_applies 1) wherever it can; refused elsewhere.
TEST(Planner, ChannelsLastStreamApplies) {
  PlanOptions three_kernels;
  three_kernels.force_exchange = Exchange::kNone;
  const auto cl = [](DType dtype, std::initializer_list<int64_t> shape) {
    ForwardParams p = problem(dtype, shape);
    p.layout = Layout::kChannelsLast;
    return p;
  };
  struct Expect {
    const char* why;
    ForwardParams params;
    bool applies;
    int64_t parts;  // where it applies
  };
  const Expect cases[] = {
      {"cl-bf16: 64 samples in 4 parts, 256 CTAs", cl(DType::kBFloat16, {64, 64, 128, 128}), true, 4},
      {"32 MiB exactly: 16 samples in 16 parts (264 / 16)", cl(DType::kBFloat16, {16, 64, 128, 128}), true, 16},
      {"a row short of 32 MiB: the tiles", cl(DType::kBFloat16, {16, 64, 128, 127}), false, 0},
      {"1 GiB exactly: 128 samples in 2 parts", cl(DType::kBFloat16, {128, 64, 256, 256}), true, 2},
      {"past 1 GiB: the stream alone", cl(DType::kBFloat16, {128, 64, 256, 257}), false, 0},
      {"cl-3d-fp16: 2 volumes in 64 parts (32 x 64 partials a CTA), not 132", cl(DType::kFloat16, {2, 32, 64, 64, 64}),
       true, 64},
      {"two volumes of 128 MiB: 64 parts each", cl(DType::kFloat16, {2, 32, 128, 128, 128}), true, 64},
      {"4 samples of 128 channels: 2048 partials leave 64 CTAs, so a CTA an SM, 33 parts",
       cl(DType::kBFloat16, {4, 128, 128, 256}), true, 33},
      {"2 samples of 64 channels: 66 parts, not 32", cl(DType::kBFloat16, {2, 64, 64, 64, 64}), true, 66},
      {"one sample of 128 channels: 132 parts, not 16", cl(DType::kBFloat16, {1, 128, 256, 512}), true, 132},
      {"one sample of 128 channels in 1,280 rows: 320 KiB on 4 CTAs, the tiles", cl(DType::kBFloat16, {1, 128, 1280}),
       false, 0},
      {"GroupNorm(8) without an affine: the plain op", cl(DType::kBFloat16, {64, 64, 128, 128}), true, 4},
  };
  for (const Expect& e : cases) {
    ForwardParams params = e.params;
    if (std::string(e.why).rfind("GroupNorm", 0) == 0) params.groups = 8;
    const Plan plan = plan_of(params, three_kernels);
    EXPECT_EQ(plan.stream_applies, e.applies) << e.why << ": " << plan.describe();
    EXPECT_EQ(detail::channels_last_stream_applies(plan), e.applies) << e.why;
    if (!e.applies) continue;
    EXPECT_EQ(plan.stream_parts, e.parts) << e.why;
    EXPECT_EQ(plan.stream_grid, detail::batch_of(plan) * e.parts) << e.why;
    EXPECT_NE(plan.describe().find("stream-applies"), std::string::npos) << plan.describe();
    // An arrival counter a sample, no coefficients between kernels; its cells in shared memory.
    const detail::WorkspaceLayout layout = detail::workspace_layout(plan);
    EXPECT_EQ(plan.workspace_bytes, layout.total) << e.why;
    EXPECT_EQ(layout.slice_coefficients, 0u) << e.why;
    EXPECT_GT(layout.slice_arrivals, layout.split_partials) << e.why;
    EXPECT_EQ(detail::channels_last_stream_smem_bytes(plan),
              detail::channels_last_stream_smem_bytes(plan, false) +
                  plan.channels * int64_t{detail::kSliceCoefficientBytes})
        << e.why;
    EXPECT_FALSE(plan.evict_first) << e.why;
  }
  // Forced: wherever it can (16 MiB in 25 parts, a ring of rows each; one sample on 4 CTAs; cl-bf16
  // in 3), or not at all.
  PlanOptions applies = three_kernels;
  applies.force_stream_applies = 1;
  const Plan small = plan_of(cl(DType::kBFloat16, {8, 64, 128, 128}), applies);
  EXPECT_TRUE(small.stream_applies);
  EXPECT_EQ(small.stream_parts, 25);
  const Plan one = plan_of(cl(DType::kBFloat16, {1, 128, 1280}), applies);
  EXPECT_TRUE(one.stream_applies);
  EXPECT_EQ(one.stream_grid, 4);
  PlanOptions three_parts = applies;
  three_parts.force_stream_parts = 3;
  EXPECT_EQ(plan_of(cl(DType::kBFloat16, {64, 64, 128, 128}), three_parts).stream_grid, 192);
  PlanOptions never = three_kernels;
  never.force_stream_applies = 0;
  const Plan streamed = plan_of(cl(DType::kBFloat16, {64, 64, 128, 128}), never);
  EXPECT_FALSE(streamed.stream_applies);
  EXPECT_EQ(streamed.stream_parts, 4);
  // Refused: more CTAs than one round, parts short of a ring, without a streamed reduction, or
  // outside -1..1.
  struct Refused {
    const char* why;
    ForwardParams params;
    int parts;
    int applies;
  };
  const Refused refused[] = {
      {"300 samples: past 264 CTAs", cl(DType::kBFloat16, {300, 64, 64, 64}), -1, 1},
      {"cl-bf16 in 5 parts: 320 CTAs", cl(DType::kBFloat16, {64, 64, 128, 128}), 5, 1},
      {"639 rows: a row short of a ring", cl(DType::kBFloat16, {2, 64, 639}), -1, 1},
      {"the tiles' reduction", cl(DType::kBFloat16, {64, 64, 128, 128}), 0, 1},
      {"an activation: no stream", cl(DType::kBFloat16, {64, 64, 128, 128}), -1, 1},
      {"2", cl(DType::kBFloat16, {64, 64, 128, 128}), -1, 2},
      {"-2", cl(DType::kBFloat16, {64, 64, 128, 128}), -1, -2},
  };
  for (const Refused& r : refused) {
    ForwardParams params = r.params;
    if (std::string(r.why).rfind("an activation", 0) == 0) params.activation = Activation::kRelu;
    PlanOptions options = three_kernels;
    options.force_stream_parts = r.parts;
    options.force_stream_applies = r.applies;
    Plan plan;
    const Status status = plan_forward(params, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << r.why << ": " << plan.describe();
    EXPECT_NE(status.message().find("stream"), std::string::npos) << status.message();
  }
  // A ring of rows exactly is enough: 640 rows in one part.
  EXPECT_TRUE(plan_of(cl(DType::kBFloat16, {2, 64, 640}), applies).stream_applies);
  // The backward: its inputs' bytes, x and dy, from 32 MiB to 8 GiB; its ring half a stage of x and
  // of dy (320 rows of 64 16-bit channels, 640 of 32). cl-3d-fp16 in 64 parts; 16 MiB of x, and a
  // row short of it; the bfloat16 seed's 3.5 GiB of x in 2 parts (224 CTAs), the float32 seed's 7
  // GiB streamed alone; 639 rows in a part forced.
  const auto cl_backward = [&cl](DType dtype, std::initializer_list<int64_t> shape) {
    return backward_of(cl(dtype, shape));
  };
  struct Backward {
    const char* why;
    BackwardParams params;
    bool applies;
    int64_t parts;
  };
  const Backward backward[] = {
      {"cl-3d-fp16: 64 parts", cl_backward(DType::kFloat16, {2, 32, 64, 64, 64}), true, 64},
      {"16 MiB of x: 8 samples in 32 parts", cl_backward(DType::kBFloat16, {8, 64, 128, 128}), true, 32},
      {"a row short of 16 MiB of x: the tiles", cl_backward(DType::kBFloat16, {8, 64, 128, 127}), false, 0},
      {"cl-seed-bf16: 2 parts, 224 CTAs", cl_backward(DType::kBFloat16, {112, 64, 512, 512}), true, 2},
      {"cl-seed-fp32: past 8 GiB, the stream alone", cl_backward(DType::kFloat32, {112, 64, 512, 512}), false, 7},
  };
  Plan plan;
  for (const Backward& e : backward) {
    ASSERT_TRUE(plan_backward(e.params, hopper_h200_limits(), &plan, three_kernels).ok()) << e.why;
    EXPECT_EQ(plan.stream_applies, e.applies) << e.why << ": " << plan.describe();
    EXPECT_EQ(plan.stream_parts, e.parts) << e.why << ": " << plan.describe();
  }
  ASSERT_TRUE(plan_backward(cl_backward(DType::kFloat16, {2, 32, 64, 64, 64}), hopper_h200_limits(), &plan,
                            three_kernels).ok());
  EXPECT_EQ(detail::channels_last_stream_apply_min_rows(plan), 5 * 128);
  ASSERT_TRUE(plan_backward(cl_backward(DType::kBFloat16, {2, 64, 639}), hopper_h200_limits(), &plan, applies).ok());
  EXPECT_TRUE(plan.stream_applies) << plan.describe();
  EXPECT_EQ(plan.stream_parts, 1);
}

// channels_last's tiles forced (PlanOptions force_channel_block, force_tile_rows; inorm-bench's
// cl-tiles<C>x<rows>): the block as asked, rows rounded up to whole passes and down to the slice's
// whole passes, the three kernels either way; refused where the block is not whole vectors, wider
// than C or 256 threads, the rows negative or past a CTA's shared memory, or the resident form is
// forced beside them.
TEST(Planner, ChannelsLastForcedTiles) {
  ForwardParams p = problem(DType::kBFloat16, {8, 640, 32, 32});
  p.layout = Layout::kChannelsLast;
  PlanOptions options;
  options.force_channel_block = 128;
  options.force_tile_rows = 31;
  Plan plan = plan_of(p, options);
  EXPECT_EQ(plan.path, Path::kChannelsLast);
  EXPECT_EQ(plan.exchange, Exchange::kNone);
  EXPECT_EQ(plan.channel_block, 128);
  EXPECT_EQ(plan.threads, 256);
  EXPECT_EQ(plan.tile_rows, 32) << "31 rows rounded up to whole passes of two";
  EXPECT_EQ(plan.parts_per_slice, 32);
  EXPECT_EQ(plan.smem_bytes, 32 * 128 * 2);
  EXPECT_EQ(plan.workspace_bytes, detail::workspace_layout(plan).total);
  // A CTA an item, the forced block's: 8 samples x 5 blocks of 128 x 32 tiles (the planner's 3
  // blocks of 216 would count 768), under the cap of eight grids of what fits at once.
  EXPECT_EQ(plan.grid, 8 * 5 * 32);
  ForwardParams small = problem(DType::kBFloat16, {8, 640, 8, 8});  // the planner's blocks, rows past the slice
  small.layout = Layout::kChannelsLast;
  options.force_channel_block = 0;
  options.force_tile_rows = 5000;
  plan = plan_of(small, options);
  EXPECT_EQ(plan.channel_block, 216);
  EXPECT_EQ(plan.tile_rows, 64);
  EXPECT_EQ(plan.parts_per_slice, 1);
  // Whole rows where C fits a block: the bulk path's buffer, rows in whole passes of four.
  ForwardParams narrow = problem(DType::kBFloat16, {64, 64, 128, 128});
  narrow.layout = Layout::kChannelsLast;
  options.force_tile_rows = 30;
  plan = plan_of(narrow, options);
  EXPECT_EQ(plan.channel_block, 64);
  EXPECT_EQ(plan.tile_rows, 32);
  EXPECT_EQ(plan.parts_per_slice, 512);
  struct Refused {
    const char* why;
    int channel_block;
    int64_t tile_rows;
    Exchange exchange;
  };
  const Refused refused[] = {
      {"a block of 100: not whole 8-element vectors", 100, 0, Exchange::kAuto},
      {"a block of 264: past 256 threads", 264, 0, Exchange::kAuto},
      {"a block of -8", -8, 0, Exchange::kAuto},
      {"negative rows", 0, -1, Exchange::kAuto},
      {"a tile of 600 rows of 216 channels: 253 KiB, past a CTA's shared memory", 0, 600, Exchange::kAuto},
      {"the resident form forced beside them", 0, 32, Exchange::kGlobal},
  };
  for (const Refused& r : refused) {
    PlanOptions bad;
    bad.force_channel_block = r.channel_block;
    bad.force_tile_rows = r.tile_rows;
    bad.force_exchange = r.exchange;
    EXPECT_EQ(plan_forward(p, hopper_h200_limits(), &plan, bad).code(), StatusCode::kInvalidArgument) << r.why;
  }
  options.force_channel_block = 128;  // wider than C
  options.force_tile_rows = 0;
  EXPECT_EQ(plan_forward(narrow, hopper_h200_limits(), &plan, options).code(), StatusCode::kInvalidArgument);
}

// channels_last's resident form, the planner's where the whole batch fits the chip at once at one
// CTA an SM (InstanceNorm and GroupNorm): whole rows a pass of up to 512 threads with a share of
// the H200's 228 KiB less 1 KiB for the driver and 32 bytes a thread and 2 KiB of static memory,
// less 80 bytes of coefficients a channel, a 128-byte region of whole passes per input (16 bytes
// of slack); each sample then takes an equal part of the 132 SMs, its rows spread evenly. Also
// where one CTA holds a sample, whatever the rounds. Elsewhere channel blocks or the three kernels;
// forced (exchange global, or CTAs an SM), the fewest CTAs that hold a sample at 3, else 2, else 1
// CTAs an SM (256 threads at most there; 32 bytes a thread of static memory too).
TEST(Planner, ChannelsLastResident) {
  struct Expect {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int force_ctas_per_sm;  // 0: the planner's own plan; -1: exchange global forced
    int ctas_per_sm, threads;
    int64_t tile_rows, group, grid;
    int64_t groups = 0;  // GroupNorm's (0: InstanceNorm)
  };
  const Expect cases[] = {
      {"cl-c3: rows of 12 bytes, 104 passes of 170 hold a sample in 4 CTAs; 32 samples of 4 fill one round",
       DType::kFloat32, {32, 3, 256, 256}, 0, 1, 510, 16490, 4, 128},
      {"cl-odd: 7 CTAs would hold a sample; 8 samples take 16 CTAs each, 220 rows (whole passes of 5)",
       DType::kFloat32, {8, 96, 57, 61}, 0, 1, 480, 220, 16, 128},
      {"8x256x32x32: 2 rows a pass, 16 CTAs of 64 rows a sample", DType::kBFloat16, {8, 256, 32, 32}, 0, 1, 512, 64,
       16, 128},
      {"a sample of 4 rows: one CTA of one pass (8 rows)", DType::kFloat32, {5, 64, 4}, 0, 1, 512, 8, 1, 5},
      {"480 channels: one row a pass of 480 threads, 91 rows of 1920 bytes fit; 2 samples of 66 CTAs would take 2 "
       "rows each, so 50 CTAs a sample", DType::kFloat32, {2, 480, 9, 11}, 0, 1, 480, 2, 50, 100},
      {"GroupNorm(32) as InstanceNorm, 8x320x32x32 (SD UNet's first stage): 303 rows of 640 bytes fit a CTA of 320 "
       "threads, so 4 would hold a sample; 8 samples take 16 CTAs of 64 rows each", DType::kBFloat16,
       {8, 320, 32, 32}, 0, 1, 320, 64, 16, 128, 32},
      {"cl-bf16 at three CTAs an SM: 119 passes of 4 rows; 16384 rows over 35 CTAs, 11 groups", DType::kBFloat16,
       {64, 64, 128, 128}, 3, 3, 256, 472, 35, 385},
      {"cl-bf16 alone on the SM: 203 passes of 8 rows; 11 CTAs of 1496 rows, 12 groups", DType::kBFloat16,
       {64, 64, 128, 128}, 1, 1, 512, 1496, 11, 132},
      {"10^5 rows of 64 float32 channels: 424 CTAs at three an SM, 258 at two: one group", DType::kFloat32,
       {2, 64, 100000}, -1, 2, 256, 388, 258, 258},
      {"140 samples of 16 rows of 512 channels: a CTA holds a sample (no exchange), 132 take them in rounds",
       DType::kBFloat16, {140, 512, 4, 4}, 0, 1, 512, 16, 1, 132},
  };
  for (const Expect& e : cases) {
    ForwardParams p = problem(e.dtype, e.shape);
    p.groups = e.groups;
    p.layout = Layout::kChannelsLast;
    PlanOptions options;
    if (e.force_ctas_per_sm > 0) options.force_ctas_per_sm = e.force_ctas_per_sm;
    if (e.force_ctas_per_sm < 0) options.force_exchange = Exchange::kGlobal;
    const Plan plan = plan_of(p, options);
    EXPECT_EQ(plan.path, Path::kChannelsLast) << e.why;
    EXPECT_EQ(plan.exchange, Exchange::kGlobal) << e.why;
    EXPECT_TRUE(detail::channels_last_resident(plan)) << e.why;
    EXPECT_EQ(plan.ctas_per_sm, e.ctas_per_sm) << e.why;
    EXPECT_EQ(plan.threads, e.threads) << e.why;
    EXPECT_EQ(plan.tile_rows, e.tile_rows) << e.why;
    EXPECT_EQ(plan.parts_per_slice, e.group) << e.why;
    EXPECT_EQ(plan.ctas_per_slice, e.group) << e.why;
    EXPECT_EQ(plan.grid, e.grid) << e.why;
    // The tiles' region, then the coefficients; within the SM's share.
    const int64_t channels = e.shape.begin()[1];
    EXPECT_EQ(plan.slice_channels, e.groups > 0 ? channels / e.groups : 1) << e.why;
    const int64_t tile_bytes = e.tile_rows * channels * static_cast<int64_t>(dtype_size(e.dtype));
    EXPECT_EQ(plan.smem_bytes, (tile_bytes + 16 + 127) / 128 * 128 + channels * 80) << e.why;
    EXPECT_LE(plan.smem_bytes, 233472 / e.ctas_per_sm - 1024 - (e.threads * 32 + 2048)) << e.why;
    // A group's partials and the samples' arrival counters; no coefficients in the workspace. A
    // CTA alone (a group of one) exchanges nothing: no workspace.
    const detail::WorkspaceLayout layout = detail::workspace_layout(plan);
    EXPECT_EQ(plan.workspace_bytes, layout.total) << e.why;
    EXPECT_EQ(layout.slice_coefficients, 0u) << e.why;
    if (e.group > 1) {
      EXPECT_GT(layout.slice_arrivals, layout.split_partials) << e.why;
    } else {
      EXPECT_EQ(plan.workspace_bytes, 0u) << e.why;
    }
  }
  // Samples that take rounds (cl-bf16: 64 samples of 11 CTAs), whose channels take too many rows
  // for channel blocks (16384 rows of a 16-byte vector are 256 KiB), run the cluster form
  // (Planner.ChannelsLastClusters), or the three kernels short of its two rounds.
  ForwardParams bf16 = problem(DType::kBFloat16, {64, 64, 128, 128});
  bf16.layout = Layout::kChannelsLast;
  EXPECT_EQ(plan_of(bf16).exchange, Exchange::kCluster);
  bf16.batch = 27;
  EXPECT_EQ(plan_of(bf16).exchange, Exchange::kNone);
  // The seed's 64 MiB sample fits at no CTAs an SM: an error where the resident form is forced.
  ForwardParams seed = problem(DType::kFloat32, {112, 64, 512, 512});
  seed.layout = Layout::kChannelsLast;
  EXPECT_EQ(plan_of(seed).exchange, Exchange::kNone);
  Plan plan;
  PlanOptions options;
  options.force_exchange = Exchange::kGlobal;
  Status status = plan_forward(seed, hopper_h200_limits(), &plan, options);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("does not fit the resident form"), std::string::npos) << status.message();
  // Rows wider than 512 threads have no resident form of whole rows (channel blocks:
  // Planner.ChannelsLastBlocks), nor a cluster form (C up to 128: Planner.ChannelsLastClusters).
  ForwardParams wide = problem(DType::kFloat32, {2, 600, 9, 11});
  wide.layout = Layout::kChannelsLast;
  options.force_exchange = Exchange::kCluster;
  status = plan_forward(wide, hopper_h200_limits(), &plan, options);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("cluster form runs"), std::string::npos) << status.message();
  // CTAs an SM the resident form does not run, or asked of the three kernels: a clear refusal.
  ForwardParams small = problem(DType::kFloat32, {2, 64, 8, 8});
  small.layout = Layout::kChannelsLast;
  for (int ctas_per_sm : {-1, 4}) {
    options = PlanOptions{};
    options.force_ctas_per_sm = ctas_per_sm;
    status = plan_forward(small, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << ctas_per_sm;
    EXPECT_NE(status.message().find("runs 1 to 3 CTAs an SM"), std::string::npos) << status.message();
  }
  options.force_ctas_per_sm = 2;
  options.force_exchange = Exchange::kNone;
  EXPECT_EQ(plan_forward(small, hopper_h200_limits(), &plan, options).code(), StatusCode::kInvalidArgument);
}

// The forward's cluster form (plan_internal.h channels_last_clusters, config.h
// channels_last_cluster_shape): 256 threads, two CTAs an SM, each holding the rows its half of the
// SM's shared memory takes beside its 10 KiB of static cells and 8 warps' two float32 sums a
// channel (cl-bf16: 228 KiB / 2 - 1 KiB - 10 KiB - 4 KiB = 792 rows of 128 bytes), and up to 8
// 16-byte runs a thread past them in registers (256 rows of 64 bfloat16 channels); the fewest CTAs
// that hold a sample; the planner's where samples of 1 MiB or more fill two rounds of the clusters
// resident at once (the H200's limits: 14 clusters of 16, 30 of 8 at two CTAs an SM).
TEST(Planner, ChannelsLastClusters) {
  const auto cl = [](DType dtype, std::initializer_list<int64_t> shape) {
    ForwardParams p = problem(dtype, shape);
    p.layout = Layout::kChannelsLast;
    return p;
  };
  Plan plan = plan_of(cl(DType::kBFloat16, {64, 64, 128, 128}));
  ASSERT_EQ(plan.path, Path::kChannelsLast);
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  EXPECT_EQ(plan.ctas_per_slice, 16);
  EXPECT_EQ(plan.parts_per_slice, 16);
  EXPECT_EQ(plan.tile_rows, 1024);
  EXPECT_EQ(plan.register_len, 1024 - 792);  // of the 8 passes of 32 rows (256 threads) a thread may hold
  EXPECT_EQ(plan.threads, 256);
  EXPECT_EQ(plan.ctas_per_sm, 2);
  EXPECT_EQ(plan.grid, 14 * 16);
  EXPECT_EQ(plan.smem_bytes, 792 * 128 + 8 * 64 * 8);
  EXPECT_EQ(plan.workspace_bytes, 0u);  // no partials, no coefficients: the CTAs exchange on chip
  EXPECT_NE(plan.describe().find("clusters=14x16"), std::string::npos) << plan.describe();
  // 64 samples over 14 clusters: cluster k starts k x 30,000 / 14 cycles late
  // (kChannelsLastClusterStaggerSpreadCycles).
  EXPECT_EQ(plan.stagger_cycles, 2142);
  EXPECT_NE(plan.describe().find(" stagger=2142"), std::string::npos) << plan.describe();
  EXPECT_EQ(plan_of(cl(DType::kBFloat16, {128, 64, 64, 128})).stagger_cycles, 1000);  // 30 clusters of 8

  ForwardParams activated = cl(DType::kBFloat16, {64, 64, 128, 128});
  activated.activation = Activation::kRelu;
  ForwardParams group_norm = cl(DType::kBFloat16, {64, 64, 128, 128});
  group_norm.groups = 32;
  ForwardParams misaligned = cl(DType::kBFloat16, {64, 64, 128, 128});
  misaligned.y = reinterpret_cast<void*>(kAligned * 64 + 2);
  struct Expect {
    const char* why;
    ForwardParams params;
    int group;  // 0: not the cluster form
  };
  const Expect cases[] = {
      {"28 samples of 2 MiB: two rounds of 14 clusters", cl(DType::kBFloat16, {28, 64, 128, 128}), 16},
      {"27 samples: short of two rounds", cl(DType::kBFloat16, {27, 64, 128, 128}), 0},
      {"1 MiB samples in clusters of 8, 60 of them fill two rounds of 30", cl(DType::kBFloat16, {60, 64, 64, 128}), 8},
      {"59 samples of 1 MiB: short of two rounds", cl(DType::kBFloat16, {59, 64, 64, 128}), 0},
      {"a row short of 1 MiB", cl(DType::kBFloat16, {128, 64, 64, 127}), 0},
      {"float32 2 MiB: 32 channels of 128x128, 808 rows in shared memory", cl(DType::kFloat32, {64, 32, 128, 128}),
       16},
      {"float16 2 MiB of 128 channels: 16 CTAs of 380 + 128 rows hold 8128 of 8192",
       cl(DType::kFloat16, {64, 128, 64, 128}), 0},
      {"float16 1 MiB of 128 channels: 9 CTAs of 456 rows", cl(DType::kFloat16, {128, 128, 64, 64}), 9},
      {"2 MiB and a row of 128x129: 16 CTAs of 1032 rows", cl(DType::kBFloat16, {64, 64, 128, 129}), 16},
      {"16896 rows, past 16 CTAs of 792 + 256: 17 CTAs", cl(DType::kBFloat16, {64, 64, 128, 132}), 0},
      {"256 channels: past its cells", cl(DType::kBFloat16, {64, 256, 64, 64}), 0},
      {"96 channels: not a power of two", cl(DType::kBFloat16, {64, 96, 128, 96}), 0},
      {"float64", cl(DType::kFloat64, {64, 64, 64, 64}), 0},
      {"an activation", activated, 0},
      {"GroupNorm", group_norm, 0},
      {"y off 16-byte alignment", misaligned, 0},
  };
  for (const Expect& e : cases) {
    const Plan p = plan_of(e.params);
    EXPECT_EQ(detail::channels_last_clusters(p), e.group != 0) << e.why << ": " << p.describe();
    if (e.group != 0) EXPECT_EQ(p.ctas_per_slice, e.group) << e.why;
  }

  // Forced: the fewest (2000 rows of 64 float32 channels: 396 rows in shared memory and 128 in
  // registers a CTA, so four CTAs of 500, 104 in registers), or the CTAs asked for where their rows
  // fit; at two CTAs an SM only.
  PlanOptions forced;
  forced.force_exchange = Exchange::kCluster;
  plan = plan_of(cl(DType::kFloat32, {2, 64, 40, 50}), forced);
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  EXPECT_EQ(plan.ctas_per_slice, 4);
  EXPECT_EQ(plan.tile_rows, 500);
  EXPECT_EQ(plan.register_len, 104);
  EXPECT_EQ(plan.grid, 2 * 4);
  EXPECT_EQ(plan.stagger_cycles, 0);  // one round: no cluster waits for another
  Plan unused;
  forced.force_ctas_per_slice = 3;  // 667 rows a CTA: 271 past shared memory, 128 in registers at most
  EXPECT_EQ(plan_forward(cl(DType::kFloat32, {2, 64, 40, 50}), hopper_h200_limits(), &unused, forced).code(),
            StatusCode::kUnsupported);
  forced.force_ctas_per_slice = 8;  // 250 rows a CTA: no register part
  plan = plan_of(cl(DType::kFloat32, {2, 64, 40, 50}), forced);
  EXPECT_EQ(plan.tile_rows, 250);
  EXPECT_EQ(plan.register_len, 0);
  EXPECT_EQ(plan.smem_bytes, 250 * 256 + 8 * 64 * 8);
  forced.force_ctas_per_sm = 1;
  const Status one_an_sm = plan_forward(cl(DType::kFloat32, {2, 64, 40, 50}), hopper_h200_limits(), &unused, forced);
  EXPECT_EQ(one_an_sm.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(one_an_sm.message().find("(2 here)"), std::string::npos) << one_an_sm.message();
}

// channels_last's resident form over channel blocks, the planner's where whole rows' form does not
// run in one round: a CTA holds every row of a block of whole slices' channels (a multiple of
// lcm(C / groups, a 16-byte vector)), whole rows a pass of at most 256 threads, at two CTAs an SM
// where the tile and 80 bytes of coefficients a channel fit half the H200's 228 KiB (less 1 KiB
// for the driver, 32 bytes a thread and 2 KiB of static memory), else one (alone on the SM, whole
// rows a pass of up to 512 threads); the block of least cost: the busiest of the 132 SMs' items x
// a tile's bytes, plus 13 KiB a round of its CTAs (ties: more CTAs an SM). No exchange, so no
// workspace but the weight gradients' and running stats'.
// Forced (exchange global with force_channel_block), the block asked for.
TEST(Planner, ChannelsLastBlocks) {
  struct Expect {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int64_t groups;
    int force_block;  // 0: the planner's plan
    int block, threads;
    int64_t tile_rows;
    int ctas_per_sm;
    int64_t grid;
  };
  const Expect cases[] = {
      {"sd-unet-cl: 20 channels a group and 8 a vector, blocks of 40 (83 KiB at 2 an SM), 6 rows a pass, one a "
       "busy SM; 80 would be 167 KiB at one an SM (the backward's: PlanBackward.ChannelsLastBlocks)", DType::kBFloat16,
       {8, 640, 32, 32}, 32, 0, 40, 240, 1026, 2, 128},
      {"float32: blocks of 20 (82 KiB, two an SM, one round) cost as much as of 40 (one an SM): more CTAs an SM",
       DType::kFloat32, {8, 640, 32, 32}, 32, 0, 20, 240, 1032, 2, 256},
      {"IN, 140 samples of 256 rows (whole rows' groups of two CTAs take rounds): 5 blocks of 104 a sample, 6 items "
       "(52 KiB each) on the busiest SM in 3 rounds; 4 of 128 would be 5 of 64 KiB, 3 of 176 4 of 88 KiB",
       DType::kBFloat16, {140, 512, 16, 16}, 0, 0, 104, 208, 256, 2, 264},
      {"600 float32 channels of 99 rows: blocks of 12, 21 rows a pass, the narrowest that leave one item an SM",
       DType::kFloat32, {2, 600, 9, 11}, 0, 0, 12, 252, 105, 2, 100},
      {"forced blocks of 80, 167 KiB: one an SM, alone with 6 rows a pass of 480 threads", DType::kBFloat16,
       {8, 640, 32, 32}, 32, 80, 80, 480, 1026, 1, 64},
  };
  for (const Expect& e : cases) {
    PlanOptions options;
    if (e.force_block != 0) {
      options.force_exchange = Exchange::kGlobal;
      options.force_channel_block = e.force_block;
    }
    ForwardParams p = problem(e.dtype, e.shape);
    p.groups = e.groups;
    p.layout = Layout::kChannelsLast;
    const Plan plan = plan_of(p, options);
    EXPECT_EQ(plan.path, Path::kChannelsLast) << e.why;
    EXPECT_EQ(plan.exchange, Exchange::kGlobal) << e.why;
    EXPECT_FALSE(detail::channels_last_exchanges(plan)) << e.why;
    EXPECT_EQ(plan.parts_per_slice, 1) << e.why;
    EXPECT_EQ(plan.ctas_per_slice, 1) << e.why;
    EXPECT_EQ(plan.channel_block, e.block) << e.why;
    EXPECT_EQ(plan.threads, e.threads) << e.why;
    EXPECT_EQ(plan.tile_rows, e.tile_rows) << e.why;
    EXPECT_EQ(plan.ctas_per_sm, e.ctas_per_sm) << e.why;
    EXPECT_EQ(plan.grid, e.grid) << e.why;
    EXPECT_EQ(plan.smem_bytes, e.tile_rows * e.block * static_cast<int64_t>(dtype_size(e.dtype)) + e.block * 80)
        << e.why;
    EXPECT_LE(plan.smem_bytes, 233472 / e.ctas_per_sm - 1024 - (e.threads * 32 + 2048)) << e.why;
    const detail::WorkspaceLayout layout = detail::workspace_layout(plan);
    EXPECT_EQ(plan.workspace_bytes, layout.total) << e.why;
    EXPECT_EQ(plan.workspace_bytes, 0u) << e.why;  // no running stats here
  }
  // Where the stream applies (x of 32 MiB or more), blocks of less than 64 bytes of a wider row
  // (8 or 16 of 64 bfloat16 channels, 4 or 8 of 64 float32: 1.1-1.7x slower than the stream there,
  // dev/VARIANTS.md 100) are not the planner's, and wider ones do not fit: these 1 MiB samples take
  // the stream (59 of them: short of the cluster form's two rounds, Planner.ChannelsLastClusters).
  // Forced, the blocks still run.
  struct Narrow {
    DType dtype;
    int64_t batch, spatial;
  };
  for (const Narrow& n : {Narrow{DType::kBFloat16, 59, 128}, Narrow{DType::kFloat32, 59, 64}}) {
    const DType dtype = n.dtype;
    ForwardParams narrow = problem(dtype, {n.batch, 64, 64, n.spatial});
    narrow.layout = Layout::kChannelsLast;
    const Plan planned = plan_of(narrow);
    EXPECT_EQ(planned.exchange, Exchange::kNone) << planned.describe();
    EXPECT_TRUE(detail::channels_last_stream_applies(planned)) << planned.describe();
    PlanOptions forced;
    forced.force_exchange = Exchange::kGlobal;
    forced.force_channel_block = static_cast<int>(16 / dtype_size(dtype));
    const Plan blocks = plan_of(narrow, forced);
    EXPECT_EQ(blocks.channel_block, forced.force_channel_block) << blocks.describe();
    EXPECT_TRUE(detail::channels_last_resident(blocks)) << blocks.describe();
  }
  // Refused where forced: blocks that split a group (48 of 20-channel groups), that are not whole
  // vectors (20 channels of bfloat16), at three CTAs an SM (the blocks' bound is two), or whose
  // rows are not aligned (a view one element off: no 16-byte runs), or whose rows do not fit (cl-seed).
  ForwardParams unet = problem(DType::kBFloat16, {8, 640, 32, 32});
  unet.groups = 32;
  unet.layout = Layout::kChannelsLast;
  struct Refused {
    const char* why;
    int block;
    int ctas_per_sm;
    int64_t x_offset;
    StatusCode code;
  };
  const Refused refused[] = {
      {"48 channels split a group", 48, 0, 0, StatusCode::kInvalidArgument},
      {"20 channels are not whole vectors", 20, 0, 0, StatusCode::kInvalidArgument},
      {"three CTAs an SM", 40, 3, 0, StatusCode::kUnsupported},
      {"a misaligned view", 40, 0, 1, StatusCode::kUnsupported},
  };
  Plan plan;
  for (const Refused& r : refused) {
    ForwardParams p = unet;
    p.x = reinterpret_cast<void*>(kAligned + r.x_offset * 2);
    PlanOptions options;
    options.force_exchange = Exchange::kGlobal;
    options.force_channel_block = r.block;
    options.force_ctas_per_sm = r.ctas_per_sm;
    const Status status = plan_forward(p, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), r.code) << r.why << ": " << status.message();
  }
  // The planner's own plan of a misaligned view: the three kernels, element by element.
  ForwardParams misaligned = unet;
  misaligned.x = reinterpret_cast<void*>(kAligned + 2);
  EXPECT_EQ(plan_of(misaligned).exchange, Exchange::kNone);
  ForwardParams seed = problem(DType::kFloat32, {112, 64, 512, 512});
  seed.layout = Layout::kChannelsLast;
  PlanOptions blocks;
  blocks.force_exchange = Exchange::kGlobal;
  blocks.force_channel_block = 4;
  const Status status = plan_forward(seed, hopper_h200_limits(), &plan, blocks);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("nor do channel blocks of whole slices of 4 channels"), std::string::npos)
      << status.message();
}

// channels_last's channel blocks with each block's rows over a group of CTAs (PlanOptions
// force_ctas_per_slice; inorm-bench's cl-blocks40g2): tiles of whole passes, none empty, every
// group on the grid at once (a cooperative launch), an arrival counter an item and a partial a
// channel a tile in the workspace. SD UNet's 8x640x32x32 in groups of two: 1024 rows in tiles of
// 516 (86 passes of 6 rows), 128 items of two CTAs at two an SM; in groups of four, 66 groups of the
// 264 slots take the 128 items in turn; 2x640x32x32 in groups of four: 32 items, 128 CTAs.
TEST(Planner, ChannelsLastBlocksInGroups) {
  struct Expect {
    const char* why;
    std::initializer_list<int64_t> shape;
    int block, group, ctas_per_sm;  // forced (0: the planner's)
    int64_t tile_rows, grid;
    int threads;
  };
  const Expect cases[] = {
      {"groups of two", {8, 640, 32, 32}, 40, 2, 0, 516, 256, 240},
      {"groups of four, more items than groups", {8, 640, 32, 32}, 40, 4, 0, 258, 264, 240},
      {"batch 2 in groups of four, the planner's block", {2, 640, 32, 32}, 0, 4, 0, 258, 128, 240},
      {"the wide CTA alone on its SM in groups of two: 12 rows a pass", {8, 640, 32, 32}, 40, 2, 1, 516, 132, 480},
  };
  for (const Expect& e : cases) {
    ForwardParams p = problem(DType::kBFloat16, e.shape);
    p.groups = 32;
    p.layout = Layout::kChannelsLast;
    PlanOptions options;
    options.force_channel_block = e.block;
    options.force_ctas_per_slice = e.group;
    options.force_ctas_per_sm = e.ctas_per_sm;
    const Plan plan = plan_of(p, options);
    EXPECT_TRUE(detail::channels_last_resident(plan)) << e.why << ": " << plan.describe();
    EXPECT_TRUE(detail::channels_last_exchanges(plan)) << e.why;
    EXPECT_EQ(plan.channel_block, 40) << e.why;
    EXPECT_EQ(plan.parts_per_slice, e.group) << e.why;
    EXPECT_EQ(plan.ctas_per_slice, e.group) << e.why;
    EXPECT_EQ(plan.threads, e.threads) << e.why;
    EXPECT_EQ(plan.tile_rows, e.tile_rows) << e.why;
    EXPECT_EQ(plan.grid, e.grid) << e.why;
    EXPECT_EQ(plan.grid % e.group, 0) << e.why;
    EXPECT_LE(plan.grid, 132 * plan.ctas_per_sm) << e.why;
    EXPECT_LT((e.group - 1) * plan.tile_rows, 32 * 32) << e.why;
    const detail::WorkspaceLayout layout = detail::workspace_layout(plan);
    EXPECT_EQ(plan.workspace_bytes, layout.total) << e.why;
    // An arrival counter an item (samples x blocks) after a partial a channel a tile.
    EXPECT_GE(layout.slice_arrivals - layout.split_partials,
              static_cast<std::size_t>(*e.shape.begin() * 640 * e.group) * sizeof(detail::SplitPartial))
        << e.why;
    EXPECT_GE(layout.total - layout.slice_arrivals, static_cast<std::size_t>(*e.shape.begin() * 16) * sizeof(unsigned))
        << e.why;
  }
  // The planner's: the cost of a block in groups adds 20 KiB a round of the groups to the busiest
  // SM's tiles' bytes and 13 KiB a round of its CTAs (config.h kChannelsLastBlockExchangeBytes).
  // SD UNet's GroupNorm(32) + SiLU on 640 bfloat16 channels, blocks of 40 (80 bytes a row):
  struct Chosen {
    const char* why;
    std::initializer_list<int64_t> shape;
    Pass pass;
    int group;
    int64_t tile_rows, grid;
  };
  const Chosen chosen[] = {
      {"batch 1, 16 blocks of 32x32: eight CTAs each (10 KiB + 13 + 20), not four (20 + 13 + 20) nor one (80 + 13)",
       {1, 640, 32, 32}, Pass::kForward, 8, 132, 128},
      {"batch 2: 32 blocks, four CTAs each (eight would take two tiles an SM: 2 x 10 + 13 + 20, a tie kept smaller)",
       {2, 640, 32, 32}, Pass::kForward, 4, 258, 128},
      {"batch 4: 64 blocks, two CTAs each (40 + 13 + 20 against one's 93)", {4, 640, 32, 32}, Pass::kForward, 2, 516,
       128},
      {"batch 8: 128 blocks fill the SMs, a CTA each (two: 2 x 40 + 13 + 20 against 93)", {8, 640, 32, 32},
       Pass::kForward, 1, 1026, 128},
      {"16x16, batch 4: a CTA each (20 + 13 against 10 + 13 + 20)", {4, 640, 16, 16}, Pass::kForward, 1, 258, 64},
      {"64x64, where no CTA holds a block (320 KiB): four each, 128 blocks in two rounds of 66 groups",
       {8, 640, 64, 64}, Pass::kForward, 4, 1026, 264},
      {"the backward at batch 1 (x and dy: a tile of 20 KiB at eight CTAs)", {1, 640, 32, 32}, Pass::kBackward, 8, 132,
       128},
  };
  for (const Chosen& e : chosen) {
    ForwardParams p = problem(DType::kBFloat16, e.shape);
    p.groups = 32;
    p.layout = Layout::kChannelsLast;
    p.activation = Activation::kSilu;
    p.weight = reinterpret_cast<const void*>(kAligned * 2);
    p.bias = reinterpret_cast<const void*>(kAligned * 3);
    Plan plan;
    if (e.pass == Pass::kForward) {
      ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan).ok()) << e.why;
    } else {
      BackwardParams b = backward_of(p);
      b.groups = p.groups;
      b.activation = p.activation;
      b.weight = p.weight;
      b.bias = p.bias;
      b.dweight = reinterpret_cast<void*>(kAligned * 5);
      b.dbias = reinterpret_cast<void*>(kAligned * 6);
      ASSERT_TRUE(plan_backward(b, hopper_h200_limits(), &plan).ok()) << e.why;
    }
    EXPECT_TRUE(detail::channels_last_resident(plan)) << e.why << ": " << plan.describe();
    EXPECT_EQ(plan.channel_block, 40) << e.why;
    EXPECT_EQ(plan.ctas_per_slice, e.group) << e.why << ": " << plan.describe();
    EXPECT_EQ(plan.tile_rows, e.tile_rows) << e.why;
    EXPECT_EQ(plan.grid, e.grid) << e.why;
  }
  // Refused: a group with the three kernels, a group past the most, and one that would leave a CTA
  // without rows (float64's narrowest blocks of 2 channels, 128 rows a pass, over 64 rows).
  struct Refused {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int group;
    Exchange exchange;
    StatusCode code;
  };
  const Refused refused[] = {
      {"the three kernels", DType::kBFloat16, {8, 640, 32, 32}, 2, Exchange::kNone, StatusCode::kInvalidArgument},
      {"past the most", DType::kBFloat16, {8, 640, 32, 32}, detail::kChannelsLastBlockMaxGroup + 1,
       Exchange::kAuto, StatusCode::kInvalidArgument},
      {"an empty tile", DType::kFloat64, {2, 600, 8, 8}, 2, Exchange::kAuto, StatusCode::kUnsupported},
  };
  for (const Refused& r : refused) {
    ForwardParams p = problem(r.dtype, r.shape);
    p.layout = Layout::kChannelsLast;
    PlanOptions options;
    options.force_ctas_per_slice = r.group;
    options.force_exchange = r.exchange;
    options.force_channel_block = 16 / static_cast<int>(dtype_size(r.dtype));
    Plan plan;
    const Status status = plan_forward(p, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), r.code) << r.why << ": " << status.message();
  }
}

TEST(Planner, RunningStatsNeedWorkspace) {
  ForwardParams p = problem(DType::kFloat32, {4, 6, 32, 32});
  p.running_mean = reinterpret_cast<void*>(kAligned * 2);
  p.running_var = reinterpret_cast<void*>(kAligned * 3);
  const Plan plan = plan_of(p);
  EXPECT_TRUE(plan.update_running_stats);
  EXPECT_EQ(plan.workspace_bytes, 2u * 256);  // two segments of 24 floats, 256-byte aligned
}

TEST(Planner, ForcedPaths) {
  const ForwardParams p = problem(DType::kFloat32, {2, 3, 4097});
  PlanOptions options;
  options.force_path = Path::kSharedResident;
  options.force_ctas_per_slice = 3;
  Plan plan = plan_of(p, options);
  EXPECT_EQ(plan.ctas_per_slice, 3);
  EXPECT_EQ(plan.chunk_len, 1368);  // ceil(4097 / 3) rounded up to 4
  EXPECT_EQ(plan.grid, 6 * 3);      // no more groups than slices
  // split_pipelined on slices of one part: a grid of one CTA per item, every statistics item first.
  options = PlanOptions{};
  options.force_path = Path::kSplitPipelined;
  plan = plan_of(p, options);
  EXPECT_EQ(plan.path, Path::kSplitPipelined);
  EXPECT_EQ(plan.parts_per_slice, 1);
  EXPECT_EQ(plan.chunk_len, 4224);  // 16 KiB or more: rounded up to 512 bytes, past the slice's end
  EXPECT_EQ(plan.grid, 12);
  EXPECT_EQ(plan.pipeline_lead, 6);
}

TEST(Planner, ForcedPathsThatCannotWork) {
  Plan plan;
  PlanOptions options;
  options.force_path = Path::kSharedResident;
  options.force_ctas_per_slice = 2;  // a 1 MiB slice does not fit in two CTAs
  Status status = plan_forward(problem(DType::kFloat32, {2, 3, 262144}), hopper_h200_limits(), &plan, options);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no shared_resident plan holds a slice of 1048576 bytes"), std::string::npos)
      << status.message();

  options = PlanOptions{};
  options.force_path = Path::kGroupRegisters;
  status = plan_forward(problem(DType::kFloat32, {2, 3, 5000}), hopper_h200_limits(), &plan, options);
  EXPECT_NE(status.message().find("no group_registers configuration holds a slice of 5000 elements"),
            std::string::npos)
      << status.message();

  options.force_path = Path::kElementwiseEval;
  status = plan_forward(problem(DType::kFloat32, {2, 3, 50}), hopper_h200_limits(), &plan, options);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);

  // split_pipelined cannot count 2^31 items or more (2^16 slices of 2^14 parts: 64 TiB), chosen
  // or forced.
  options = PlanOptions{};
  for (const Path path : {Path::kAuto, Path::kSplitPipelined}) {
    options.force_path = path;
    ForwardParams huge = problem(DType::kFloat32, {1 << 16, 1, int64_t{1} << 28});
    huge.y = reinterpret_cast<void*>(std::uintptr_t{1} << 47);  // past x's 2^46 bytes
    status = plan_forward(huge, hopper_h200_limits(), &plan, options);
    EXPECT_EQ(status.code(), StatusCode::kUnsupported);
    EXPECT_NE(status.message().find("split_pipelined counts its items"), std::string::npos) << status.message();
  }
}

TEST(Planner, RejectsInvalidParamsAndMissingLimits) {
  Plan plan;
  ForwardParams p = problem(DType::kFloat32, {2, 3, 1});
  EXPECT_FALSE(plan_forward(p, hopper_h200_limits(), &plan).ok());
  EXPECT_FALSE(plan_forward(problem(DType::kFloat32, {2, 3, 8}), DeviceLimits{}, &plan).ok());
  EXPECT_FALSE(plan_forward(problem(DType::kFloat32, {2, 3, 8}), hopper_h200_limits(), nullptr).ok());
}

TEST(Planner, PlanMatchesOnlyCompatibleParams) {
  ForwardParams p = problem(DType::kFloat32, {256, 256, 16, 16});
  const Plan plan = plan_of(p);
  EXPECT_TRUE(detail::plan_matches(plan, detail::plan_signature(p)));
  ForwardParams other = p;
  other.x = reinterpret_cast<void*>(kAligned + 4);  // vector loads would be misaligned
  EXPECT_FALSE(detail::plan_matches(plan, detail::plan_signature(other)));
  other = p;
  other.batch = 255;
  EXPECT_FALSE(detail::plan_matches(plan, detail::plan_signature(other)));
}

TEST(Planner, Describe) {
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {112, 64, 512, 512})).describe(),
            "shared_resident ctas_per_slice=8 ctas_per_sm=2 exchange=cluster threads=256 chunk=32768 registers=8192 "
            "grid=240 in-order early stagger=250");
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {256, 256, 16, 16})).describe(),
            "group_registers group=32 items=2 vector threads=256 grid=8192");
}

}  // namespace
}  // namespace inorm
