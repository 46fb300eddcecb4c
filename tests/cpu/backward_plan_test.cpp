// The backward's validation and planning on the CPU: every invalid input gets a status naming the
// problem, and the planner counts x and dy on chip (slices that one family holds for the forward
// may need the next for the backward).
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "config.h"
#include "inorm/inorm.h"
#include "plan_internal.h"

namespace inorm {
namespace {

constexpr std::uintptr_t kAligned = 0x10000000;

// Host addresses standing in for device pointers: validation and planning only look at their values.
void* fake_pointer(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

BackwardParams problem(DType dtype, std::initializer_list<int64_t> shape) {
  BackwardParams p;
  p.dtype = dtype;
  p.x = fake_pointer(kAligned);
  p.dy = fake_pointer(kAligned * 64);
  p.dx = fake_pointer(kAligned * 128);
  p.mean = fake_pointer(kAligned * 192);
  p.rstd = fake_pointer(kAligned * 193);
  const int64_t* dims = shape.begin();
  p.batch = dims[0];
  p.channels = dims[1];
  p.spatial_rank = static_cast<int>(shape.size()) - 2;
  for (int i = 0; i < p.spatial_rank; ++i) p.spatial[i] = dims[2 + i];
  return p;
}

BackwardParams valid_params() { return problem(DType::kFloat32, {2, 3, 5, 7}); }

void expect_invalid(const BackwardParams& p, const std::string& fragment,
                    StatusCode code = StatusCode::kInvalidArgument) {
  const Status status = validate_backward(p);
  EXPECT_EQ(status.code(), code) << status.message();
  EXPECT_NE(status.message().find(fragment), std::string::npos)
      << "message '" << status.message() << "' does not mention '" << fragment << "'";
}

// GroupNorm with a weight and its gradient: the weight gradients are summed per channel inside
// each slice (plan_internal.h sums_channels_in_slices).
BackwardParams group_norm_weight_grads(DType dtype, std::initializer_list<int64_t> shape, int64_t groups) {
  BackwardParams p = problem(dtype, shape);
  p.groups = groups;
  p.weight = fake_pointer(kAligned * 200);
  p.dweight = fake_pointer(kAligned * 201);
  return p;
}

Plan plan_of(const BackwardParams& p, const PlanOptions& options = {}) {
  Plan plan;
  const Status status = plan_backward(p, hopper_h200_limits(), &plan, options);
  EXPECT_TRUE(status.ok()) << status.message();
  return plan;
}

TEST(ValidateBackward, AcceptsValidProblems) {
  EXPECT_TRUE(validate_backward(valid_params()).ok());
  BackwardParams p = valid_params();
  p.weight = fake_pointer(kAligned * 200);
  p.dweight = fake_pointer(kAligned * 201);
  p.dbias = fake_pointer(kAligned * 202);
  EXPECT_TRUE(validate_backward(p).ok());
  p.dx = nullptr;  // only the weight gradients
  EXPECT_TRUE(validate_backward(p).ok());
}

TEST(ValidateBackward, NullPointers) {
  BackwardParams p = valid_params();
  p.x = nullptr;
  expect_invalid(p, "x is null");
  p = valid_params();
  p.dy = nullptr;
  expect_invalid(p, "dy is null");
  p = valid_params();
  p.rstd = nullptr;
  expect_invalid(p, "needs the forward's mean and rstd");
}

TEST(ValidateBackward, EmptyBatchIsValidEvenWithNullPointers) {
  BackwardParams p = valid_params();
  p.batch = 0;
  p.x = p.dy = p.dx = nullptr;
  p.mean = p.rstd = nullptr;
  EXPECT_TRUE(validate_backward(p).ok());
}

TEST(ValidateBackward, StatisticsMatchTheMode) {
  BackwardParams p = valid_params();
  p.running_mean = fake_pointer(kAligned * 210);
  p.running_var = fake_pointer(kAligned * 211);
  expect_invalid(p, "running stats must be null");
  p.use_input_stats = false;
  expect_invalid(p, "mean and rstd must be null");
  p.mean = p.rstd = nullptr;
  EXPECT_TRUE(validate_backward(p).ok());
  p.running_var = nullptr;
  expect_invalid(p, "both be given or both be null");
  p.running_mean = nullptr;
  expect_invalid(p, "Expected running_mean and running_var to be defined");
}

TEST(ValidateBackward, OneSpatialElement) {
  BackwardParams p = problem(DType::kFloat32, {2, 3, 1});
  expect_invalid(p, "Expected more than 1 spatial element");
  p.use_input_stats = false;  // eval mode: elementwise, S = 1 is fine
  p.mean = p.rstd = nullptr;
  p.running_mean = fake_pointer(kAligned * 210);
  p.running_var = fake_pointer(kAligned * 211);
  EXPECT_TRUE(validate_backward(p).ok());
}

TEST(ValidateBackward, InPlaceOnlyOverDy) {
  BackwardParams p = valid_params();
  p.dx = const_cast<void*>(p.dy);  // in place over dy, as autograd may
  EXPECT_TRUE(validate_backward(p).ok());
  p.dx = const_cast<void*>(p.x);
  expect_invalid(p, "dx overlaps x or dy");
  p.dx = static_cast<char*>(const_cast<void*>(p.dy)) + 4;
  expect_invalid(p, "dx overlaps x or dy");
}

TEST(ValidateBackward, Alignment) {
  BackwardParams p = valid_params();
  p.dy = fake_pointer(kAligned * 64 + 2);
  expect_invalid(p, "x, dy and dx must be aligned to the element size of float32");
  p = valid_params();
  p.dweight = fake_pointer(kAligned * 201 + 1);
  expect_invalid(p, "weight, bias, running stats, dweight and dbias must be aligned to float32");
  p = valid_params();
  p.mean = fake_pointer(kAligned * 192 + 2);
  expect_invalid(p, "mean and rstd must be aligned to float32");
}

TEST(ValidateBackward, SharedChecks) {
  BackwardParams p = valid_params();
  p.dtype = static_cast<DType>(9);
  expect_invalid(p, "unknown dtype");
  p = valid_params();
  p.eps = -1;
  expect_invalid(p, "eps must be finite");
  p = valid_params();
  p.batch = int64_t{1} << 40;
  p.channels = int64_t{1} << 30;
  expect_invalid(p, "overflows 64-bit byte offsets");
  p = valid_params();
  p.layout = static_cast<Layout>(7);
  expect_invalid(p, "unknown layout 7");
  p = valid_params();
  p.activation = static_cast<Activation>(5);
  expect_invalid(p, "unknown activation 5");
  p = valid_params();
  p.activation = Activation::kLeakyRelu;
  p.negative_slope = std::numeric_limits<double>::infinity();
  expect_invalid(p, "negative_slope must be finite");
  p = valid_params();
  p.activation = Activation::kRelu;
  p.bias = fake_pointer(kAligned * 201 + 2);  // the forward's bias places z
  expect_invalid(p, "weight, bias, running stats, dweight and dbias must be aligned to float32");
}

// channels_last runs its own family in either mode: x and dy are both staged per tile, so a tile of
// 64 channels of float32 is 64 KiB / (64 * 4 * 2) = 128 rows in the three kernels. The resident
// form (the planner's where the batch fits at once) takes a region per input of each CTA's share of
// its SM: alone on it with 512 threads, (233472 - 1024 - 18432 - 5120) / 2 bytes, 50 passes of 8
// rows; 2 samples of 41 CTAs fit, so each takes 66 slots: 64 CTAs of 256 rows.
TEST(PlannerBackward, ChannelsLastTilesBothInputs) {
  BackwardParams p = problem(DType::kFloat32, {2, 64, 128, 128});
  p.layout = Layout::kChannelsLast;
  PlanOptions three_kernels;
  three_kernels.force_exchange = Exchange::kNone;
  Plan plan = plan_of(p, three_kernels);
  EXPECT_EQ(plan.path, Path::kChannelsLast);
  EXPECT_EQ(plan.tile_rows, 128);
  EXPECT_EQ(plan.parts_per_slice, 128);
  EXPECT_EQ(plan.smem_bytes, 2 * (32 * 1024 + 128));  // a region of 128 rows per input, 16 bytes of slack
  plan = plan_of(p);
  EXPECT_EQ(plan.exchange, Exchange::kGlobal);
  EXPECT_EQ(plan.tile_rows, 256);
  EXPECT_EQ(plan.parts_per_slice, 64);
  EXPECT_EQ(plan.grid, 128);
  EXPECT_EQ(plan.smem_bytes, 2 * (256 * 256 + 128) + 64 * 80);  // two regions, then the coefficients
  p.use_input_stats = false;  // eval: the weight gradients are still sums over each slice
  p.mean = p.rstd = nullptr;
  p.running_mean = fake_pointer(kAligned * 300);
  p.running_var = fake_pointer(kAligned * 301);
  plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kChannelsLast);
  EXPECT_EQ(plan.exchange, Exchange::kGlobal);
  // cl-bf16's 64 samples would take rounds: the three kernels (the cluster form's rule takes 2 MiB
  // samples in float32 only, PlanBackward.ChannelsLastClusters).
  BackwardParams bf16 = problem(DType::kBFloat16, {64, 64, 128, 128});
  bf16.layout = Layout::kChannelsLast;
  EXPECT_EQ(plan_of(bf16).exchange, Exchange::kNone);
}

// The cluster form (plan_internal.h channels_last_clusters): the fewest CTAs a sample whose share
// of x fits 128 KiB, one an SM, a cluster a sample; the planner's where float32 samples of 1 to 2
// MiB fill four rounds of the clusters resident at once (config.h channels_last_cluster_shape,
// kChannelsLastClusterMinSampleBytes: the H200's limits do not know the clusters at one CTA an SM,
// so 132 / 16 = 8 of 16, 16 of 8; a device that reports 7 of 16 needs 28 samples). Shared memory:
// the CTA's rows of x, then 16 warps' three float32 sums a channel.
TEST(PlanBackward, ChannelsLastClusters) {
  const auto cl = [](DType dtype, std::initializer_list<int64_t> shape) {
    BackwardParams p = problem(dtype, shape);
    p.layout = Layout::kChannelsLast;
    return p;
  };
  // 64 float32 samples of 2 MiB (32 channels of 128x128: rows of 128 bytes).
  Plan plan = plan_of(cl(DType::kFloat32, {64, 32, 128, 128}));
  ASSERT_EQ(plan.path, Path::kChannelsLast);
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  EXPECT_TRUE(detail::channels_last_clusters(plan));
  EXPECT_EQ(plan.ctas_per_slice, 16);
  EXPECT_EQ(plan.parts_per_slice, 16);
  EXPECT_EQ(plan.tile_rows, 1024);
  EXPECT_EQ(plan.threads, 512);
  EXPECT_EQ(plan.ctas_per_sm, 1);
  EXPECT_EQ(plan.grid, 8 * 16);
  EXPECT_EQ(plan.smem_bytes, 1024 * 128 + 16 * 32 * 12);
  EXPECT_EQ(plan.workspace_bytes, 0u);  // no partials, no coefficients: the CTAs exchange on chip
  EXPECT_NE(plan.describe().find("clusters=8x16"), std::string::npos) << plan.describe();
  EXPECT_EQ(plan.stagger_cycles, 30000 / 8);  // 64 samples over 8 clusters (kChannelsLastClusterStaggerSpreadCycles)
  BackwardParams weight_grads = cl(DType::kFloat32, {64, 32, 128, 128});
  weight_grads.weight = fake_pointer(kAligned * 200);
  weight_grads.dweight = fake_pointer(kAligned * 201);
  plan = plan_of(weight_grads);
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  EXPECT_GT(plan.workspace_bytes, 0u);  // the channel reduction's terms a slice

  struct Expect {
    const char* why;
    BackwardParams params;
    int group;  // 0: not the cluster form
  };
  BackwardParams eval = cl(DType::kFloat32, {64, 32, 128, 128});
  eval.use_input_stats = false;
  eval.mean = eval.rstd = nullptr;
  eval.running_mean = fake_pointer(kAligned * 300);
  eval.running_var = fake_pointer(kAligned * 301);
  BackwardParams activated = cl(DType::kFloat32, {64, 32, 128, 128});
  activated.activation = Activation::kRelu;
  BackwardParams group_norm = cl(DType::kFloat32, {64, 32, 128, 128});
  group_norm.groups = 16;  // two channels a group (32 groups of one would be InstanceNorm's plain op)
  BackwardParams misaligned = cl(DType::kFloat32, {64, 32, 128, 128});
  misaligned.dy = fake_pointer(kAligned * 64 + 4);
  const Expect cases[] = {
      {"32 samples of 2 MiB: four rounds of 8 clusters", cl(DType::kFloat32, {32, 32, 128, 128}), 16},
      {"31 samples: short of four rounds", cl(DType::kFloat32, {31, 32, 128, 128}), 0},
      {"1 MiB samples in clusters of 8, 64 samples fill four rounds of 16", cl(DType::kFloat32, {64, 32, 64, 128}),
       8},
      {"63 samples of 1 MiB: short of four rounds", cl(DType::kFloat32, {63, 32, 64, 128}), 0},
      {"a row short of 1 MiB", cl(DType::kFloat32, {128, 32, 64, 127}), 0},
      // config.h min_element_bytes: the 16-bit instances ran slower than the streamed kernel on 2 MiB
      // samples of 64 channels (dev/VARIANTS.md 117).
      {"bfloat16, 2 MiB samples", cl(DType::kBFloat16, {64, 64, 128, 128}), 0},
      {"float16, 128 channels of 64x128", cl(DType::kFloat16, {64, 128, 64, 128}), 0},
      {"float32, 128 channels (32 runs a row)", cl(DType::kFloat32, {64, 128, 32, 128}), 16},
      {"a row past 2 MiB: 17 CTAs", cl(DType::kFloat32, {64, 32, 128, 129}), 0},
      {"256 channels: past its cells", cl(DType::kFloat32, {64, 256, 64, 32}), 0},
      {"96 channels: not a power of two", cl(DType::kFloat32, {64, 96, 64, 64}), 0},
      {"float64", cl(DType::kFloat64, {64, 64, 64, 64}), 0},
      {"eval mode (the weight gradients' sums still)", eval, 16},
      {"an activation", activated, 0},
      {"GroupNorm", group_norm, 0},
      {"dy off 16-byte alignment", misaligned, 0},
  };
  for (const Expect& e : cases) {
    const Plan p = plan_of(e.params);
    EXPECT_EQ(detail::channels_last_clusters(p), e.group != 0) << e.why << ": " << p.describe();
    if (e.group != 0) EXPECT_EQ(p.ctas_per_slice, e.group) << e.why;
  }

  // Where the device reports its clusters (an H100 holds 7 of 16 at one CTA an SM), the grid and
  // the rounds count them.
  DeviceLimits h100 = hopper_h200_limits();
  h100.resident_clusters[1][16] = 7;
  Plan on_h100;
  ASSERT_TRUE(plan_backward(cl(DType::kFloat32, {28, 32, 128, 128}), h100, &on_h100).ok());
  EXPECT_EQ(on_h100.exchange, Exchange::kCluster);
  EXPECT_EQ(on_h100.grid, 7 * 16);
  ASSERT_TRUE(plan_backward(cl(DType::kFloat32, {27, 32, 128, 128}), h100, &on_h100).ok());
  EXPECT_NE(on_h100.exchange, Exchange::kCluster);

  // Forced (PlanOptions force_exchange kCluster): any sample whose CTAs' rows fit, in the CTAs asked
  // for; a grid of at most a cluster a sample; nothing else forced beside it.
  PlanOptions forced;
  forced.force_exchange = Exchange::kCluster;
  forced.force_ctas_per_slice = 3;
  plan = plan_of(cl(DType::kFloat32, {2, 64, 40, 50}), forced);
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  EXPECT_EQ(plan.tile_rows, 667);  // the last CTA 666 rows
  EXPECT_EQ(plan.grid, 2 * 3);
  const auto forced_status = [&](const BackwardParams& p, const PlanOptions& options) {
    Plan unused;
    return plan_backward(p, hopper_h200_limits(), &unused, options);
  };
  forced.force_ctas_per_slice = 1;  // 2000 rows of 256 bytes in one CTA: 512 KB
  EXPECT_EQ(forced_status(cl(DType::kFloat32, {2, 64, 40, 50}), forced).code(), StatusCode::kUnsupported);
  forced.force_ctas_per_slice = 16;  // 16 CTAs of 7 rows over 99: the last would have none
  EXPECT_EQ(forced_status(cl(DType::kFloat32, {2, 128, 9, 11}), forced).code(), StatusCode::kUnsupported);
  forced.force_ctas_per_slice = 17;  // past the largest cluster
  EXPECT_EQ(forced_status(cl(DType::kFloat32, {2, 64, 40, 50}), forced).code(), StatusCode::kInvalidArgument);
  forced.force_ctas_per_slice = 0;  // the fewest: 2 MiB in 16
  EXPECT_EQ(plan_of(cl(DType::kBFloat16, {2, 64, 128, 128}), forced).ctas_per_slice, 16);
  const Status wrong_op = forced_status(activated, forced);
  EXPECT_EQ(wrong_op.code(), StatusCode::kUnsupported);
  EXPECT_NE(wrong_op.message().find("cluster form"), std::string::npos) << wrong_op.message();
  PlanOptions with_tiles = forced;
  with_tiles.force_tile_rows = 64;
  EXPECT_EQ(forced_status(cl(DType::kBFloat16, {2, 64, 128, 128}), with_tiles).code(), StatusCode::kInvalidArgument);
  // Any other form forced keeps to it.
  PlanOptions three_kernels;
  three_kernels.force_exchange = Exchange::kNone;
  EXPECT_EQ(plan_of(cl(DType::kBFloat16, {64, 64, 128, 128}), three_kernels).exchange, Exchange::kNone);
}

// The backward keeps shared_resident's wide groups, which the forward gives up for split_pipelined
// (Planner.WideForwardGroupsSplit): 1.1 MiB bf16 slices, 36 CTAs through L2, ran 1.22x of 1.5
// copies against split_pipelined's 1.42x. Where their slices fill a round of clusters of two,
// they span those instead (PlanBackward.SlicesNoClusterHoldsSpanPairs).
TEST(PlanBackward, WideGroupsStayShared) {
  const Plan plan = plan_of(problem(DType::kBFloat16, {1, 13, 768, 768}));
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_slice, 36) << plan.describe();
  EXPECT_EQ(plan.exchange, Exchange::kGlobal);
}

// Slices that no one cluster holds span clusters of two, as in the forward
// (Planner.SlicesNoClusterHoldsSpanPairs), where they fill one round of the H200's 132 pairs
// (config.h kSharedPairSpanMinRoundsBackward).
TEST(PlanBackward, SlicesNoClusterHoldsSpanPairs) {
  struct Span {
    const char* why;
    DType dtype;
    std::initializer_list<int64_t> shape;
    int clusters;     // 0: the plan it would replace
    Path otherwise;
    int64_t grid = 264;  // every one of the 132 pairs, or as many as the slices take
  };
  const Span spans[] = {
      // 2 MiB of x and 2 MiB of dy a slice in 15 pairs: eight slices a round.
      {"eight 2 MiB fp32 slices: one round", DType::kFloat32, {1, 8, 724, 724}, 15, Path::kSplitPipelined, 240},
      {"seven of them", DType::kFloat32, {1, 7, 724, 724}, 0, Path::kSplitPipelined},
      // 36 CTAs through L2 otherwise (PlanBackward.WideGroupsStayShared); 14 slices a round.
      {"mid-1mib-bf16", DType::kBFloat16, {4, 64, 768, 768}, 9, Path::kSharedResident},
      {"2 MiB float64 slices", DType::kFloat64, {4, 32, 512, 512}, 15, Path::kSplitPipelined},
      // 4 MiB of each input: past 16 pairs, up to kSharedPairSpanMaxClustersBackward (four slices a round).
      {"mid-4mib-fp32", DType::kFloat32, {1, 32, 1024, 1024}, 30, Path::kSplitPipelined},
      {"mid-3mib-fp16", DType::kFloat16, {2, 48, 112, 112, 112}, 20, Path::kSplitPipelined},
      // 6 MiB of each input: past 32 pairs.
      {"mid-6mib-bf16", DType::kBFloat16, {2, 24, 2048, 1536}, 0, Path::kSplitPipelined},
  };
  for (const Span& s : spans) {
    const Plan plan = plan_of(problem(s.dtype, s.shape));
    SCOPED_TRACE(std::string(s.why) + ": " + plan.describe());
    if (s.clusters == 0) {
      EXPECT_EQ(plan.path, s.otherwise);
      EXPECT_EQ(plan.slice_clusters, 1);
      continue;
    }
    EXPECT_EQ(plan.path, Path::kSharedResident);
    EXPECT_EQ(plan.ctas_per_slice, 2 * s.clusters);
    EXPECT_EQ(plan.slice_clusters, s.clusters);
    EXPECT_EQ(plan.ctas_per_sm, detail::kSharedRegisterCtasPerSm);
    EXPECT_GT(plan.register_len, 0);
    EXPECT_EQ(plan.grid, s.grid);
  }
  // With an activation the backward takes no register parts: split_pipelined.
  BackwardParams relu = problem(DType::kFloat32, {1, 8, 724, 724});
  relu.activation = Activation::kRelu;
  EXPECT_EQ(plan_of(relu).path, Path::kSplitPipelined);
}

// split_pipelined's short lead, L2 hints and walk back go by the bytes of each input, as in the
// forward: 8 and 16 MiB slices of x (and as many of dy) take them, 32 MiB slices the long lead.
TEST(PlanBackward, SplitShortLeadByEachInputsBytes) {
  const Plan vol = plan_of(problem(DType::kFloat32, {2, 32, 128, 128, 128}));
  ASSERT_EQ(vol.path, Path::kSplitPipelined);
  EXPECT_EQ(vol.parts_per_slice, 256);  // 32 KiB of each input a part
  EXPECT_TRUE(vol.evict_first);
  EXPECT_TRUE(vol.walk_back);
  EXPECT_EQ(vol.pipeline_lead, 256 + vol.grid / 2);
  const Plan few = plan_of(problem(DType::kFloat32, {4, 3, 2048, 2048}));
  ASSERT_EQ(few.path, Path::kSplitPipelined);
  EXPECT_TRUE(few.evict_first);
  EXPECT_TRUE(few.walk_back);
  EXPECT_EQ(few.pipeline_lead, 512 + few.grid / 2);
  const Plan wide = plan_of(problem(DType::kFloat32, {1, 2, 4096, 2048}));
  ASSERT_EQ(wide.path, Path::kSplitPipelined);
  EXPECT_FALSE(wide.evict_first);
  EXPECT_FALSE(wide.walk_back);
  EXPECT_EQ(wide.pipeline_lead, 1024 + 2 * wide.grid);
}

// The seed holds 2 MiB a slice on chip in the backward (1 MiB of x, 1 MiB of dy): the narrowest
// cluster that holds it at two CTAs per SM with register parts, 15 CTAs, each with 52.5 KiB of x and
// of dy in shared memory and 16 KiB of each in registers (the forward's seed plan, a cluster of 8,
// holds half of it).
TEST(PlanBackward, SeedUsesTheNarrowestClusterWithRegisterParts) {
  const Plan plan = plan_of(problem(DType::kFloat32, {112, 64, 512, 512}));
  EXPECT_EQ(plan.pass, Pass::kBackward);
  EXPECT_EQ(plan.inputs, 2);
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_EQ(plan.ctas_per_slice, 15);
  EXPECT_EQ(plan.ctas_per_sm, 2);
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  EXPECT_EQ(plan.chunk_len, 17536);  // 262144 / 15, in whole 512-byte units
  EXPECT_EQ(plan.register_len, 4096);  // 16 KiB of each input's chunk
  EXPECT_EQ(plan.smem_bytes, detail::shared_buffer_bytes((17536 - 4096) * 4, 2));
  EXPECT_EQ(plan.grid, 210);  // the 14 clusters of 15 an H200's GPCs hold at two per SM
  EXPECT_TRUE(detail::shared_slices_in_order(plan));
  EXPECT_EQ(plan.describe().rfind("backward shared_resident ctas_per_slice=15", 0), 0u) << plan.describe();
  // The wide register part is the forward's alone: forced, the backward's plan is the same.
  PlanOptions wide;
  wide.force_register_vecs = detail::kSharedWideRegisterVecs;
  EXPECT_EQ(plan_of(problem(DType::kFloat32, {112, 64, 512, 512}), wide).describe(), plan.describe());
}

// GroupNorm's weight gradients sum each channel inside a chunk: register parts only in clusters of
// up to eight (config.h shared_register_part_max_group). 1 MiB fp32 slices of 16 channels, which
// one cluster would hold only in 15 CTAs, span eight clusters of two with register parts (through
// L2 in 32 CTAs at three an SM, they ran 1.29-1.31x against 1.18-1.19x: config.h
// kSharedPairSpanMinRoundsBackward), where InstanceNorm's take the seed's cluster of 15.
TEST(PlanBackward, GroupNormWeightGradientsTakeNarrowRegisterClusters) {
  BackwardParams p = group_norm_weight_grads(DType::kFloat32, {32, 256, 128, 128}, 16);
  Plan plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kSharedResident);
  EXPECT_GT(plan.register_len, 0) << plan.describe();
  EXPECT_EQ(plan.ctas_per_slice, 16);
  EXPECT_EQ(plan.slice_clusters, 8);
  EXPECT_EQ(plan.ctas_per_sm, 2);
  EXPECT_EQ(plan.exchange, Exchange::kCluster);
  // Without weight gradients nothing is summed per channel: the cluster of 15.
  p.dweight = nullptr;
  plan = plan_of(p);
  EXPECT_EQ(plan.ctas_per_slice, 15) << plan.describe();
  EXPECT_GT(plan.register_len, 0);
  // 512 KiB slices of 32 channels keep their cluster of eight with register parts (gn-only-fp32).
  plan = plan_of(group_norm_weight_grads(DType::kFloat32, {16, 256, 128, 128}, 32));
  EXPECT_EQ(plan.ctas_per_slice, 8) << plan.describe();
  EXPECT_GT(plan.register_len, 0);
}

// GroupNorm's weight gradients where the grid takes every slice in two rounds at most: chunks of
// whole channels in a cluster, of one channel where they fit, however narrow, then in fewer rounds,
// then at the most CTAs an SM (planner.cpp plan_shared, dev/VARIANTS.md 108).
TEST(PlanBackward, GroupNormInTwoRoundsTakesChunksOfWholeChannels) {
  struct Case {
    std::initializer_list<int64_t> shape;
    int ctas_per_slice;
    const char* why;
  };
  const Case cases[] = {
      // SD UNet's 320 channels: ten CTAs of one channel, the chunk form (busy slots alone picked
      // seven CTAs at four an SM, chunks across channels; the 256-thread rule five of two at three).
      {{2, 320, 64, 64}, 10, "one channel of 4096"},
      // 640 channels: one channel a chunk would take twenty CTAs, past a cluster; ten of two.
      {{2, 640, 32, 32}, 10, "two channels of 1024"},
      // 1280 channels of 256: ten CTAs of four, 2 KiB of x and dy.
      {{2, 1280, 16, 16}, 10, "four channels of 256"},
      // 256 slices: two CTAs of five channels in one round, not five of two in two rounds of 792.
      {{8, 320, 32, 32}, 2, "five channels of 1024"},
      // 256 slices of four channels: one channel a chunk in two rounds, not two in one round.
      {{8, 128, 64, 64}, 4, "one channel of 4096"},
  };
  for (const Case& c : cases) {
    BackwardParams p = group_norm_weight_grads(DType::kFloat16, c.shape, 32);
    p.activation = Activation::kSilu;
    const Plan plan = plan_of(p);
    ASSERT_EQ(plan.path, Path::kSharedResident) << c.why;
    EXPECT_EQ(plan.ctas_per_slice, c.ctas_per_slice) << c.why << ": " << plan.describe();
    EXPECT_EQ(plan.ctas_per_sm, detail::kSharedMaxCtasPerSm) << c.why << ": " << plan.describe();
    EXPECT_EQ(plan.exchange, Exchange::kCluster) << c.why << ": " << plan.describe();
    const int64_t channel_len = plan.slice_len / plan.slice_channels;
    EXPECT_EQ(plan.chunk_len % channel_len, 0) << c.why << ": " << plan.describe();
    EXPECT_EQ(detail::takes_chunk_channel_affine(plan), plan.chunk_len == channel_len) << c.why;
  }
  // 512 slices of ten channels: no cluster of whole channels holds them at six an SM in one round;
  // one CTA a slice at five in one round, not two of five channels at six in two (on 16x320x32x32
  // without an activation the H200 ran 26.0 us, the 256-thread rule's one at four 29.8; the H100
  // ran two rounds at six 33.3, against 30.5).
  {
    const Plan plan = plan_of(group_norm_weight_grads(DType::kFloat16, {16, 320, 32, 32}, 32));
    EXPECT_EQ(plan.ctas_per_slice, 1) << plan.describe();
    EXPECT_EQ(plan.ctas_per_sm, 5) << plan.describe();
    EXPECT_EQ(plan.threads, detail::shared_threads_for(5)) << plan.describe();
  }
  // Slices shorter than kSharedTwoRoundsMinSliceLen take one round: 4x320x16x16 float32 + SiLU
  // (128 slices of ten channels of 256) in five CTAs of two channels at six an SM, not ten of one in
  // two rounds (an H100 ran 14.5 us against 18.6; the H200 ran two rounds 18.5 against 16.5 for
  // the one-round plan before them).
  {
    BackwardParams one_round = group_norm_weight_grads(DType::kFloat32, {4, 320, 16, 16}, 32);
    one_round.activation = Activation::kSilu;
    const Plan plan = plan_of(one_round);
    ASSERT_LT(plan.slice_len, detail::kSharedTwoRoundsMinSliceLen);
    EXPECT_EQ(plan.ctas_per_slice, 5) << plan.describe();
    EXPECT_EQ(plan.ctas_per_sm, 6) << plan.describe();
  }
  // Without weight gradients nothing is summed per channel: the busiest slots, across channels.
  BackwardParams p = problem(DType::kFloat16, {2, 320, 64, 64});
  p.groups = 32;
  p.activation = Activation::kSilu;
  Plan plan = plan_of(p);
  EXPECT_NE(plan.chunk_len % 4096, 0) << plan.describe();
  // Many rounds keep the busiest slots too (16x640x32x32 float32: three CTAs at three an SM).
  plan = plan_of(group_norm_weight_grads(DType::kFloat32, {16, 640, 32, 32}, 32));
  EXPECT_EQ(plan.ctas_per_slice, 3) << plan.describe();
  EXPECT_EQ(plan.ctas_per_sm, 3) << plan.describe();
}

// Where no cluster holds a slice's chunks of whole channels, in one round: chunks of whole channels
// through L2 in 256-thread CTAs, of kSharedMinChannelChunkBytes at least (dev/VARIANTS.md 70:
// 512-thread CTAs ran 30-75% slower). 1x320x128x128 in eight groups: slices of forty channels of
// 16384, forty CTAs of one channel at three an SM (the busy share alone: 33 at two, across channels).
TEST(PlanBackward, GroupNormPastAClusterTakesChunksOfWholeChannels) {
  BackwardParams p = group_norm_weight_grads(DType::kFloat16, {1, 320, 128, 128}, 8);
  p.activation = Activation::kSilu;
  const Plan plan = plan_of(p);
  ASSERT_EQ(plan.path, Path::kSharedResident) << plan.describe();
  EXPECT_EQ(plan.exchange, Exchange::kGlobal) << plan.describe();
  EXPECT_EQ(plan.threads, detail::kSharedChannelChunkThreads) << plan.describe();
  EXPECT_EQ(plan.ctas_per_slice, 40) << plan.describe();
  EXPECT_EQ(plan.chunk_len, 128 * 128) << plan.describe();
  EXPECT_GE(plan.chunk_len * 2 * 2, detail::kSharedMinChannelChunkBytes);
}

// No op with an activation takes register parts (config.h shared_register_part_max_group): its
// register parts would take the activation's branch per element. Without them the steady plan.
TEST(PlanBackward, ActivationTakesNoRegisterParts) {
  struct Expected {
    BackwardParams params;
    Activation activation;
    int ctas_per_slice;
    Exchange exchange;
    int ctas_per_slice_without;  // with register parts, at two CTAs an SM, without the activation
  };
  const Expected cases[] = {
      {problem(DType::kFloat16, {4, 64, 512, 1024}), Activation::kLeakyRelu, 32, Exchange::kGlobal, 15},  // 1 MiB
      {problem(DType::kBFloat16, {8, 64, 512, 512}), Activation::kSilu, 16, Exchange::kCluster, 8},       // 512 KiB
      {problem(DType::kFloat32, {8, 64, 512, 512}), Activation::kRelu, 32, Exchange::kGlobal, 15},        // 1 MiB
  };
  for (const Expected& e : cases) {
    BackwardParams p = e.params;
    p.weight = fake_pointer(kAligned * 200);
    p.bias = fake_pointer(kAligned * 202);
    p.activation = e.activation;
    Plan plan = plan_of(p);
    EXPECT_EQ(plan.path, Path::kSharedResident) << plan.describe();
    EXPECT_EQ(plan.register_len, 0) << plan.describe();
    EXPECT_EQ(plan.ctas_per_slice, e.ctas_per_slice) << plan.describe();
    EXPECT_EQ(plan.ctas_per_sm, 3) << plan.describe();
    EXPECT_EQ(plan.exchange, e.exchange) << plan.describe();
    // The register plan, forced, is refused.
    PlanOptions registers;
    registers.force_path = Path::kSharedResident;
    registers.force_ctas_per_slice = e.ctas_per_slice_without;
    registers.force_ctas_per_sm = detail::kSharedRegisterCtasPerSm;
    Plan refused;
    EXPECT_EQ(plan_backward(p, hopper_h200_limits(), &refused, registers).code(), StatusCode::kInvalidArgument)
        << refused.describe();
    p.activation = Activation::kNone;
    plan = plan_of(p);
    EXPECT_EQ(plan.ctas_per_slice, e.ctas_per_slice_without) << plan.describe();
    EXPECT_GT(plan.register_len, 0) << plan.describe();
  }
}

// The half seeds (512 KiB a slice of each): the same register plan as the forward's fp32 seed.
TEST(PlanBackward, HalfSeedsUseClustersOfEightWithRegisterParts) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const Plan plan = plan_of(problem(dtype, {112, 64, 512, 512}));
    EXPECT_EQ(plan.path, Path::kSharedResident);
    EXPECT_EQ(plan.ctas_per_slice, 8);
    EXPECT_EQ(plan.ctas_per_sm, 2);
    EXPECT_EQ(plan.register_len, detail::shared_register_len(dtype, 2));
  }
}

// Group registers: the backward holds x and dy in a lane's registers, so a lane holds half the
// forward's items where the forward's fill kGroupMaxLaneBytes.
TEST(PlanBackward, GroupRegistersHoldHalfTheForwardsItems) {
  // float16, aligned: 8 vectors of x and 8 of dy a lane, as the forward's 8 of x; 4096 values in two
  // warps.
  BackwardParams p = problem(DType::kFloat16, {4, 4, 4096});
  Plan plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.group_size, 64);
  EXPECT_EQ(plan.items_per_lane, 8);
  p.spatial[0] = 4104;
  EXPECT_EQ(plan_of(p).path, Path::kSharedResident);
  // float32: the forward holds 2048 values in a warp (16 vectors a lane), the backward 1024 there
  // and 2048 in two warps.
  p = problem(DType::kFloat32, {4, 4, 1024});
  plan = plan_of(p);
  EXPECT_EQ(plan.group_size, 32);
  EXPECT_EQ(plan.items_per_lane, 8);
  p.spatial[0] = 2048;
  plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.group_size, 64);
  EXPECT_EQ(plan.items_per_lane, 8);
  p.spatial[0] = 2052;
  EXPECT_EQ(plan_of(p).path, Path::kSharedResident);
  // float64 scalars (a misaligned view): 16 items a lane (512 values), not 32.
  p = problem(DType::kFloat64, {4, 4, 512});
  p.x = fake_pointer(kAligned + 8);
  plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_EQ(plan.items_per_lane, 16);
  p.spatial[0] = 513;
  EXPECT_EQ(plan_of(p).path, Path::kSharedResident);
}

// The general backward (an activation, whose branch it takes per element here, or GroupNorm's
// channel affine) keeps to a warp, its values counted in float32 within 256 bytes a lane of both
// inputs: 4 vectors of half, 1024 values; two warps refused where forced. (The general forward
// takes the plain op's lanes up to 8 vectors: Planner.GroupBoundaries.)
TEST(PlanBackward, GeneralGroupRegistersKeepToAWarp) {
  BackwardParams p = problem(DType::kFloat16, {4, 4, 1024});
  p.activation = Activation::kRelu;
  Plan plan = plan_of(p);
  EXPECT_EQ(plan.path, Path::kGroupRegisters);
  EXPECT_TRUE(detail::runs_general_op(plan));
  EXPECT_EQ(plan.group_size, 32);
  EXPECT_EQ(plan.items_per_lane, 4);
  p.spatial[0] = 1032;
  EXPECT_EQ(plan_of(p).path, Path::kSharedResident);
  PlanOptions two_warps;
  two_warps.force_path = Path::kGroupRegisters;
  two_warps.force_group_lanes = 64;
  p.spatial[0] = 2048;
  Plan refused;
  const Status status = plan_backward(p, hopper_h200_limits(), &refused, two_warps);
  EXPECT_NE(status.message().find("no group_registers configuration holds a slice of 2048 elements with 64 lanes"),
            std::string::npos)
      << status.message();
}

// The largest slice on chip halves: one element more goes to split_pipelined, whose parts hold
// 32 KiB of each input.
TEST(PlanBackward, SharedBoundaryAndSplitParts) {
  const DeviceLimits limits = hopper_h200_limits();
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    const int64_t largest = detail::largest_resident_slice(dtype, 2, limits);
    EXPECT_LE(largest, detail::largest_resident_slice(dtype, 1, limits) / 2) << dtype_name(dtype);
    BackwardParams p = problem(dtype, {1, 2, largest});
    EXPECT_EQ(plan_of(p).path, Path::kSharedResident) << dtype_name(dtype);
    p.spatial[0] = largest + 1;
    const Plan split = plan_of(p);
    EXPECT_EQ(split.path, Path::kSplitPipelined) << dtype_name(dtype);
    EXPECT_EQ(split.chunk_len, static_cast<int64_t>(detail::split_stage_len(dtype_size(dtype), 2)));
    EXPECT_EQ(split.smem_bytes, detail::shared_buffer_bytes(split.chunk_len * dtype_size(dtype), 2));
  }
}

// Slices past the chip: with dx, half of a slice's parts are resident (read once, one per SM at
// most); with only the weight gradients, none (a part is read twice only for dx).
TEST(PlanBackward, ResidentPartsOnlyWhereDxIsWritten) {
  BackwardParams p = problem(DType::kFloat32, {4, 3, 2048, 2048});  // 512 parts of 8192 a slice
  p.weight = fake_pointer(kAligned * 200);
  p.dweight = fake_pointer(kAligned * 201);
  const Plan with_dx = plan_of(p);
  EXPECT_EQ(with_dx.path, Path::kSplitPipelined);
  EXPECT_EQ(with_dx.parts_per_slice, 512);
  EXPECT_EQ(with_dx.resident_parts, 132);
  p.dx = nullptr;
  const Plan grads_only = plan_of(p);
  EXPECT_EQ(grads_only.path, Path::kSplitPipelined);
  EXPECT_EQ(grads_only.resident_parts, 0);
}

TEST(PlanBackward, WorkspaceHoldsThePerSliceTermsOnlyForWeightGradients) {
  BackwardParams p = problem(DType::kFloat32, {256, 256, 16, 16});
  const Plan plain = plan_of(p);
  EXPECT_FALSE(plain.weight_grads);
  EXPECT_EQ(plain.workspace_bytes, 0u);
  p.dbias = fake_pointer(kAligned * 202);
  const Plan grads = plan_of(p);
  EXPECT_TRUE(grads.weight_grads);
  EXPECT_EQ(grads.workspace_bytes, 2u * 256 * 256 * 4);  // two float terms per slice, 256-aligned
}

// GroupNorm's backward: the forward's conditions (groups divides C, train mode) hold for it.
TEST(ValidateBackward, GroupNorm) {
  BackwardParams p = problem(DType::kFloat32, {2, 6, 5, 7});
  for (int64_t groups : {1, 2, 3, 6}) {
    p.groups = groups;
    EXPECT_TRUE(validate_backward(p).ok()) << groups;
  }
  p.groups = 4;
  expect_invalid(p, "groups must be 0 (InstanceNorm) or a positive divisor of the channels, got groups=4 for C=6");
  p.groups = 3;
  p.use_input_stats = false;
  p.mean = p.rstd = nullptr;
  p.running_mean = fake_pointer(kAligned * 210);
  p.running_var = fake_pointer(kAligned * 211);
  expect_invalid(p, "GroupNorm (groups given) normalizes with the statistics of its input");
  p = problem(DType::kFloat32, {2, 6, 5, 7});
  p.groups = 3;
  p.layout = Layout::kChannelsLast;
  EXPECT_TRUE(validate_backward(p).ok());
  p.layout = Layout::kContiguous;
  p.spatial_rank = 1;
  p.spatial[0] = 1;  // slices of two one-element channels: GroupNorm computes them
  EXPECT_TRUE(validate_backward(p).ok());
}

// split_pipelined's parts lie in channels on the SD VAE's shapes (channels of 65536 and 1M
// elements, parts of 16384 of x and dy): the backward takes each part's channel's weight and bias
// (plan_internal.h takes_chunk_channel_affine), with SiLU as InstanceNorm's general op does,
// without an activation as its plain op (forced: the planner's spans clusters of two there); a
// part across channels takes GroupNorm's element form.
TEST(PlanBackward, GroupNormBackwardByChunkOnSplit) {
  BackwardParams p = group_norm_weight_grads(DType::kBFloat16, {1, 512, 256, 256}, 32);
  p.activation = Activation::kSilu;
  Plan plan = plan_of(p);
  ASSERT_EQ(plan.path, Path::kSplitPipelined) << plan.describe();
  EXPECT_EQ(plan.chunk_len, 16384);
  EXPECT_TRUE(detail::takes_chunk_channel_affine(plan));
  EXPECT_TRUE(detail::runs_general_op(plan));
  EXPECT_NE(plan.describe().find("groups=32 chunk-channel-affine +silu"), std::string::npos) << plan.describe();
  p.activation = Activation::kNone;
  PlanOptions split;
  split.force_path = Path::kSplitPipelined;
  plan = plan_of(p, split);
  EXPECT_EQ(plan.chunk_len, 16384);
  EXPECT_TRUE(detail::takes_chunk_channel_affine(plan));
  EXPECT_FALSE(detail::runs_general_op(plan));
  EXPECT_FALSE(detail::takes_chunk_channel_affine(plan_of(p))) << plan_of(p).describe();
  // Channels of 49,152 elements hold three parts of 16384 each; of 40,960, parts cross them.
  for (const int64_t width : {192, 160}) {
    const Plan forced = plan_of(group_norm_weight_grads(DType::kBFloat16, {1, 512, 256, width}, 32), split);
    EXPECT_EQ(detail::takes_chunk_channel_affine(forced), width == 192) << forced.describe();
    EXPECT_EQ(detail::runs_general_op(forced), width != 192) << forced.describe();
  }
}

// GroupNorm's weight gradients are summed per channel inside each slice: GroupNorm's own op
// follows each element's channel where a chunk is not inside one, and every chunk leaves a pair of
// sums per channel it overlaps (c + k for channel c and chunk k: channels + chunks - 1 a slice).
TEST(PlanBackward, GroupNormSumsChannelsInsideSlices) {
  BackwardParams p = problem(DType::kFloat32, {2, 320, 64, 64});
  p.groups = 32;
  const Plan plain = plan_of(p);
  EXPECT_EQ(plain.num_slices, 64);
  EXPECT_EQ(plain.slice_len, 10 * 64 * 64);
  EXPECT_FALSE(plain.channel_affine);  // no weight, no weight gradients: dx alone, the plain op
  EXPECT_FALSE(detail::sums_channels_in_slices(plain));
  p.dbias = fake_pointer(kAligned * 202);
  const Plan grads = plan_of(p);
  EXPECT_TRUE(grads.channel_affine);
  EXPECT_TRUE(detail::sums_channels_in_slices(grads));
  ASSERT_EQ(grads.path, Path::kSharedResident);
  // Ten CTAs, a chunk a channel: the chunk form (PlanBackward.GroupNormBackwardByChunkOnSplit).
  PlanOptions ten;
  ten.force_path = Path::kSharedResident;
  ten.force_ctas_per_slice = 10;
  const Plan channel_chunks = plan_of(p, ten);
  EXPECT_EQ(channel_chunks.chunk_len, 64 * 64);
  EXPECT_TRUE(detail::takes_chunk_channel_affine(channel_chunks));
  EXPECT_FALSE(detail::runs_general_op(channel_chunks));
  EXPECT_NE(channel_chunks.describe().find("groups=32 chunk-channel-affine"), std::string::npos)
      << channel_chunks.describe();
  // The planner's chunks of one channel take the chunk form too; five CTAs of two channels,
  // GroupNorm's element form.
  EXPECT_EQ(grads.chunk_len, 64 * 64);
  EXPECT_TRUE(detail::takes_chunk_channel_affine(grads));
  PlanOptions five = ten;
  five.force_ctas_per_slice = 5;
  EXPECT_FALSE(detail::takes_chunk_channel_affine(plan_of(p, five)));
  const int64_t chunks = (grads.slice_len + grads.chunk_len - 1) / grads.chunk_len;
  EXPECT_EQ(detail::channel_partials_per_slice(grads), 10 + chunks - 1);
  const detail::WorkspaceLayout layout = detail::workspace_layout(grads);
  EXPECT_GE(layout.total - layout.channel_partials, 64u * (10 + chunks - 1) * 2 * 4);
  EXPECT_FALSE(detail::plan_matches(plain, detail::plan_signature(p)));
  // Small slices: one chunk, a pair per channel.
  BackwardParams small = problem(DType::kFloat32, {4, 8, 4, 4});
  small.groups = 2;
  small.dweight = fake_pointer(kAligned * 201);
  const Plan group = plan_of(small);
  EXPECT_EQ(group.path, Path::kGroupRegisters);
  EXPECT_EQ(detail::channel_partials_per_slice(group), 4);
  // Parts of the split path: as many chunks as parts.
  BackwardParams big = problem(DType::kFloat32, {1, 4, 2048, 2048});
  big.groups = 1;
  big.dweight = fake_pointer(kAligned * 201);
  const Plan split = plan_of(big);
  ASSERT_EQ(split.path, Path::kSplitPipelined);
  EXPECT_EQ(detail::channel_partials_per_slice(split), 4 + split.parts_per_slice - 1);
}

// channels_last GroupNorm's three kernels: the tiles are planned per channel (S rows), a partial and
// a set of coefficients per channel of each sample, and the per-channel sums of the weight
// gradients a pair per tile of each channel (its tiles the chunks that overlap it).
TEST(PlanBackward, ChannelsLastGroupNormTilesEachChannel) {
  BackwardParams p = problem(DType::kFloat32, {2, 320, 64, 64});
  p.layout = Layout::kChannelsLast;
  p.groups = 32;
  p.dweight = fake_pointer(kAligned * 201);
  PlanOptions three_kernels;  // the planner's own is the resident form: the batch fits at once
  three_kernels.force_exchange = Exchange::kNone;
  EXPECT_EQ(plan_of(p).exchange, Exchange::kGlobal);
  const Plan plan = plan_of(p, three_kernels);
  ASSERT_EQ(plan.path, Path::kChannelsLast);
  EXPECT_EQ(plan.num_slices, 64);
  EXPECT_EQ(plan.slice_len, 10 * 64 * 64);
  EXPECT_EQ(plan.channel_block, 160);  // two blocks of 160 of the 320 channels
  EXPECT_EQ(plan.tile_rows, 51);  // rows of 160 float32 channels of x and dy in 64 KiB
  EXPECT_EQ(plan.parts_per_slice, 81);  // tiles of a channel's 4096 positions
  EXPECT_EQ(detail::channel_partial_chunk_len(plan), 51);
  EXPECT_EQ(detail::channel_partial_channel_len(plan), 51 * 81);
  EXPECT_EQ(detail::channel_partials_per_slice(plan), 10 + 10 * plan.parts_per_slice - 1);
  const detail::WorkspaceLayout layout = detail::workspace_layout(plan);
  const std::size_t tiles = 2u * 320 * plan.parts_per_slice;
  EXPECT_GE(layout.slice_coefficients - layout.split_partials, tiles * sizeof(detail::SplitPartial));
  EXPECT_GE(layout.total - layout.slice_coefficients, 2u * 320 * detail::kSliceCoefficientBytes);
}

// SD UNet's channels_last GroupNorm(32) of 640 channels (past whole rows' 512): the resident form
// over channel blocks (Planner.ChannelsLastBlocks), x and dy of 40 channels (two groups of 20, in
// whole 8-channel vectors) x 1032 rows at one CTA an SM (86 passes of 12 rows: 480 threads), 128
// blocks; a CTA alone exchanges nothing, so the workspace holds only the weight gradients': two
// float32 terms a slice (256 slices, a 1 KiB segment each) and a pair of sums per channel of each
// slice (20 channels, one chunk: 20 + 20 - 1 = 39 pairs).
TEST(PlanBackward, ChannelsLastBlocks) {
  BackwardParams p = problem(DType::kBFloat16, {8, 640, 32, 32});
  p.layout = Layout::kChannelsLast;
  p.groups = 32;
  p.weight = fake_pointer(kAligned * 200);
  p.dweight = fake_pointer(kAligned * 201);
  const Plan plan = plan_of(p);
  ASSERT_EQ(plan.path, Path::kChannelsLast);
  EXPECT_EQ(plan.exchange, Exchange::kGlobal);
  EXPECT_EQ(plan.channel_block, 40);
  EXPECT_EQ(plan.threads, 480);
  EXPECT_EQ(plan.tile_rows, 1032);
  EXPECT_EQ(plan.parts_per_slice, 1);
  EXPECT_EQ(plan.ctas_per_sm, 1);
  EXPECT_EQ(plan.grid, 128);
  EXPECT_EQ(plan.smem_bytes, 2 * 1032 * 40 * 2 + 40 * 80);
  EXPECT_EQ(detail::channel_partials_per_slice(plan), 39);
  EXPECT_EQ(plan.workspace_bytes, 2u * 1024 + 256u * 39 * 2 * 4);
}

// The backward's channel blocks of narrow runs: 16x256x32x32 float32 in blocks of 8 channels (32
// bytes of 1 KiB rows, which do not stream: 1.5x faster than the three kernels), but not
// 32x32x64x64 float32 in blocks of 4 (16 bytes of 128), where the stream applies (x and dy of 32
// MiB) and ran 1.6x faster (dev/VARIANTS.md 100).
TEST(PlanBackward, ChannelsLastBlocksOfNarrowRuns) {
  BackwardParams wide = problem(DType::kFloat32, {16, 256, 32, 32});
  wide.layout = Layout::kChannelsLast;
  const Plan blocks = plan_of(wide);
  EXPECT_TRUE(detail::channels_last_resident(blocks)) << blocks.describe();
  EXPECT_EQ(blocks.channel_block, 8) << blocks.describe();
  BackwardParams narrow = problem(DType::kFloat32, {32, 32, 64, 64});
  narrow.layout = Layout::kChannelsLast;
  const Plan stream = plan_of(narrow);
  EXPECT_EQ(stream.exchange, Exchange::kNone) << stream.describe();
  EXPECT_TRUE(detail::channels_last_stream_applies(stream)) << stream.describe();
}

TEST(PlanBackward, NothingToComputeIsEmpty) {
  BackwardParams p = valid_params();
  p.dx = nullptr;  // no gradient wanted at all
  EXPECT_EQ(plan_of(p).path, Path::kEmpty);
  p = valid_params();
  p.batch = 0;
  EXPECT_EQ(plan_of(p).path, Path::kEmpty);
  PlanOptions forced;
  forced.force_path = Path::kSharedResident;
  Plan plan;
  EXPECT_FALSE(plan_backward(p, hopper_h200_limits(), &plan, forced).ok());
}

// Eval mode runs on the slice engine too (its weight gradients are reductions); the forward's
// elementwise path cannot be forced.
TEST(PlanBackward, EvalModeRunsOnTheEngine) {
  BackwardParams p = problem(DType::kFloat32, {3000, 700, 1});
  p.use_input_stats = false;
  p.mean = p.rstd = nullptr;
  p.running_mean = fake_pointer(kAligned * 210);
  p.running_var = fake_pointer(kAligned * 211);
  EXPECT_EQ(plan_of(p).path, Path::kGroupRegisters);
  PlanOptions forced;
  forced.force_path = Path::kElementwiseEval;
  Plan plan;
  EXPECT_FALSE(plan_backward(p, hopper_h200_limits(), &plan, forced).ok());
}

TEST(PlanBackward, AlignmentFactsCoverEveryTensor) {
  BackwardParams p = problem(DType::kFloat32, {8, 8, 4096});
  EXPECT_TRUE(plan_of(p).coaligned);
  EXPECT_TRUE(plan_of(p).vector_io);
  p.dy = fake_pointer(kAligned * 64 + 4);  // dy one element off: no vector access lines up
  const Plan plan = plan_of(p);
  EXPECT_FALSE(plan.coaligned);
  EXPECT_FALSE(plan.vector_io);
  EXPECT_NE(plan.describe().find("scalar-stores"), std::string::npos) << plan.describe();
  p.dy = fake_pointer(kAligned * 64);
  p.dx = nullptr;  // an absent dx does not count
  EXPECT_TRUE(plan_of(p).coaligned);
}

TEST(PlanBackward, PlansMatchOnlyTheirOwnPass) {
  const BackwardParams p = problem(DType::kFloat32, {16, 16, 64, 64});
  const Plan plan = plan_of(p);
  EXPECT_TRUE(detail::plan_matches(plan, detail::plan_signature(p)));
  ForwardParams forward;
  forward.x = p.x;
  forward.y = p.dx;
  forward.batch = 16;
  forward.channels = 16;
  forward.spatial_rank = 2;
  forward.spatial[0] = forward.spatial[1] = 64;
  EXPECT_FALSE(detail::plan_matches(plan, detail::plan_signature(forward)));
  BackwardParams other = p;
  other.dweight = fake_pointer(kAligned * 201);  // needs the per-slice terms in the workspace
  EXPECT_FALSE(detail::plan_matches(plan, detail::plan_signature(other)));
  other = p;
  other.dx = nullptr;
  EXPECT_FALSE(detail::plan_matches(plan, detail::plan_signature(other)));
}

}  // namespace
}  // namespace inorm
