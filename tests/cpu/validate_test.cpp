// Every invalid input gets a status that names the problem; validation never touches the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "inorm/inorm.h"
#include "plan_internal.h"

namespace inorm {
namespace {

// Host addresses standing in for device pointers: validation only looks at their values.
void* fake_pointer(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

ForwardParams valid_params() {
  ForwardParams p;
  p.x = fake_pointer(0x100000);
  p.y = fake_pointer(0x40000000);
  p.dtype = DType::kFloat32;
  p.batch = 2;
  p.channels = 3;
  p.spatial_rank = 2;
  p.spatial[0] = 5;
  p.spatial[1] = 7;
  return p;
}

void expect_invalid(const ForwardParams& p, const std::string& fragment,
                    StatusCode code = StatusCode::kInvalidArgument) {
  const Status status = validate_forward(p);
  EXPECT_EQ(status.code(), code) << status.message();
  EXPECT_NE(status.message().find(fragment), std::string::npos)
      << "message '" << status.message() << "' does not mention '" << fragment << "'";
}

TEST(Validate, AcceptsAValidProblem) { EXPECT_TRUE(validate_forward(valid_params()).ok()); }

TEST(Validate, NullPointers) {
  ForwardParams p = valid_params();
  p.x = nullptr;
  expect_invalid(p, "x is null");
  p = valid_params();
  p.y = nullptr;
  expect_invalid(p, "y is null");
}

TEST(Validate, EmptyBatchIsValidEvenWithNullPointers) {
  ForwardParams p = valid_params();
  p.batch = 0;
  p.x = nullptr;
  p.y = nullptr;
  EXPECT_TRUE(validate_forward(p).ok());
}

TEST(Validate, NegativeSizes) {
  ForwardParams p = valid_params();
  p.batch = -1;
  expect_invalid(p, "must be >= 0");
  p = valid_params();
  p.channels = -3;
  expect_invalid(p, "must be >= 0");
  p = valid_params();
  p.spatial[1] = -7;
  expect_invalid(p, "spatial extent 1 is negative");
}

TEST(Validate, SpatialRank) {
  ForwardParams p = valid_params();
  p.spatial_rank = 0;
  expect_invalid(p, "spatial_rank must be 1, 2 or 3");
  p.spatial_rank = 4;
  expect_invalid(p, "spatial_rank must be 1, 2 or 3");
}

TEST(Validate, OneSpatialElementWithInputStats) {
  ForwardParams p = valid_params();
  p.spatial[0] = 1;
  p.spatial[1] = 1;
  expect_invalid(p, "Expected more than 1 spatial element");
  // PyTorch raises this for an empty batch too: the check is on the spatial size alone.
  p.batch = 0;
  expect_invalid(p, "Expected more than 1 spatial element");
}

TEST(Validate, OneSpatialElementInEvalWithRunningStatsIsValid) {
  ForwardParams p = valid_params();
  p.spatial[0] = 1;
  p.spatial[1] = 1;
  p.use_input_stats = false;
  p.running_mean = fake_pointer(0x2000);
  p.running_var = fake_pointer(0x3000);
  EXPECT_TRUE(validate_forward(p).ok());
}

TEST(Validate, UnknownDtypes) {
  ForwardParams p = valid_params();
  p.dtype = static_cast<DType>(7);
  expect_invalid(p, "unknown dtype 7");
  p = valid_params();
  p.weight = fake_pointer(0x2000);
  p.param_dtype = static_cast<DType>(-1);
  expect_invalid(p, "unknown param_dtype");
}

TEST(Validate, RunningStatsRequiredWithoutInputStats) {
  ForwardParams p = valid_params();
  p.use_input_stats = false;
  expect_invalid(p, "Expected running_mean and running_var to be defined when use_input_stats is false");
}

TEST(Validate, RunningStatsComeInPairs) {
  ForwardParams p = valid_params();
  p.running_mean = fake_pointer(0x2000);
  expect_invalid(p, "running_mean and running_var must both be given");
  p = valid_params();
  p.running_var = fake_pointer(0x2000);
  expect_invalid(p, "running_mean and running_var must both be given");
}

TEST(Validate, WeightWithoutBiasAndTheReverseAreSupported) {
  ForwardParams p = valid_params();
  p.weight = fake_pointer(0x2000);
  EXPECT_TRUE(validate_forward(p).ok());
  p = valid_params();
  p.bias = fake_pointer(0x2000);
  EXPECT_TRUE(validate_forward(p).ok());
}

TEST(Validate, StatsOutputsNeedInputStats) {
  ForwardParams p = valid_params();
  p.use_input_stats = false;
  p.running_mean = fake_pointer(0x2000);
  p.running_var = fake_pointer(0x3000);
  p.mean = fake_pointer(0x4000);
  expect_invalid(p, "mean/rstd outputs are produced only with use_input_stats");
}

TEST(Validate, Eps) {
  ForwardParams p = valid_params();
  p.eps = -1e-5;
  expect_invalid(p, "eps must be finite and >= 0");
  p.eps = NAN;
  expect_invalid(p, "eps must be finite and >= 0");
}

TEST(Validate, Momentum) {
  ForwardParams p = valid_params();
  p.running_mean = fake_pointer(0x2000);
  p.running_var = fake_pointer(0x3000);
  p.momentum = INFINITY;
  expect_invalid(p, "momentum must be finite");
}

TEST(Validate, Alignment) {
  ForwardParams p = valid_params();
  p.x = fake_pointer(0x100002);  // float32 needs 4-byte alignment
  expect_invalid(p, "aligned to the element size of float32");
  p = valid_params();
  p.weight = fake_pointer(0x2001);
  expect_invalid(p, "aligned to float32");
  p = valid_params();
  p.mean = fake_pointer(0x2002);
  expect_invalid(p, "mean and rstd outputs must be aligned");
}

TEST(Validate, MisalignedByOneElementIsValid) {
  ForwardParams p = valid_params();
  p.x = fake_pointer(0x100004);  // a view offset by one element
  EXPECT_TRUE(validate_forward(p).ok());
}

TEST(Validate, PartialOverlap) {
  ForwardParams p = valid_params();
  p.y = fake_pointer(0x100004);
  expect_invalid(p, "overlap");
  p.y = const_cast<void*>(p.x);  // exact in-place is allowed
  EXPECT_TRUE(validate_forward(p).ok());
}

TEST(Validate, SizeOverflow) {
  ForwardParams p = valid_params();
  p.batch = int64_t{1} << 40;
  p.channels = int64_t{1} << 30;
  expect_invalid(p, "overflows");
}

TEST(Validate, LayoutIsOneOfTheTwo) {
  ForwardParams p = valid_params();
  p.layout = Layout::kChannelsLast;
  EXPECT_TRUE(validate_forward(p).ok());
  p.layout = static_cast<Layout>(9);
  expect_invalid(p, "unknown layout 9");
}

// Every activation is valid; leaky_relu needs a finite slope (the others never read it). The plan
// is made for its activation: it names it, and a plan of another does not match.
TEST(Validate, Activations) {
  ForwardParams p = valid_params();
  for (Activation activation : {Activation::kRelu, Activation::kLeakyRelu, Activation::kSilu}) {
    p.activation = activation;
    EXPECT_TRUE(validate_forward(p).ok()) << activation_name(activation);
  }
  p.activation = static_cast<Activation>(7);
  expect_invalid(p, "unknown activation 7");
  p.activation = Activation::kLeakyRelu;
  p.negative_slope = NAN;
  expect_invalid(p, "negative_slope must be finite");
  p.activation = Activation::kSilu;
  EXPECT_TRUE(validate_forward(p).ok());
  p.negative_slope = 0.01;
  Plan plan;
  ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan).ok());
  EXPECT_NE(plan.describe().find("+silu"), std::string::npos) << plan.describe();
  ForwardParams relu = p;
  relu.activation = Activation::kRelu;
  EXPECT_FALSE(detail::plan_matches(plan, detail::plan_signature(relu)));
  EXPECT_TRUE(detail::plan_matches(plan, detail::plan_signature(p)));
}

// GroupNorm: groups divides C; no running statistics; either layout. Its slices may hold one
// element (torch's group_norm computes them: y = bias), and groups == C is GroupNorm too, so S = 1
// is valid there, where InstanceNorm (groups 0) refuses it.
TEST(Validate, GroupNorm) {
  ForwardParams p = valid_params();
  p.channels = 6;
  for (int64_t groups : {1, 2, 3, 6}) {
    p.groups = groups;
    EXPECT_TRUE(validate_forward(p).ok()) << groups;
  }
  p.groups = 4;
  expect_invalid(p, "groups must be 0 (InstanceNorm) or a positive divisor of the channels, got groups=4 for C=6");
  p.groups = -2;
  expect_invalid(p, "got groups=-2");
  p.groups = 3;
  p.running_mean = p.running_var = fake_pointer(0x2000);
  expect_invalid(p, "no running_mean / running_var");
  p.use_input_stats = false;
  expect_invalid(p, "GroupNorm (groups given) normalizes with the statistics of its input");
  p.running_mean = p.running_var = nullptr;
  expect_invalid(p, "GroupNorm (groups given) normalizes with the statistics of its input");
  p.use_input_stats = true;
  p.layout = Layout::kChannelsLast;  // a group's channels are columns of the tiles
  EXPECT_TRUE(validate_forward(p).ok());
  p.layout = Layout::kContiguous;
  p.spatial_rank = 1;
  p.spatial[0] = 1;
  for (int64_t groups : {3, 6}) {
    p.groups = groups;
    EXPECT_TRUE(validate_forward(p).ok()) << groups;
  }
  p.groups = 0;
  expect_invalid(p, "Expected more than 1 spatial element");
}

// launch_forward refuses a shared_resident plan edited into a shape the kernel cannot run (more
// chunk statistics than its inbox holds, or a group with nothing exchanged) before it touches the
// device; the pointers here are host addresses.
TEST(Validate, LaunchRefusesHandEditedSharedPlans) {
  ForwardParams p = valid_params();
  p.spatial[0] = 128;  // 64 KiB slices: two chunks of 32 KiB
  p.spatial[1] = 128;
  PlanOptions options;
  options.force_path = Path::kSharedResident;
  options.force_ctas_per_slice = 2;
  Plan plan;
  ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan, options).ok());
  ASSERT_EQ(plan.workspace_bytes, 0u);
  Plan too_large = plan;
  too_large.ctas_per_slice = 17;
  Plan none_shared = plan;
  none_shared.exchange = Exchange::kNone;
  for (const Plan& edited : {too_large, none_shared}) {
    const Status status = launch_forward(edited, p, nullptr, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
    EXPECT_NE(status.message().find("is not one the planner makes"), std::string::npos) << status.message();
  }
  // Chunks that leave the slice's end unwritten, or overrun their buffer.
  Plan uncovered = plan;
  uncovered.chunk_len -= 128;
  Plan small_buffer = plan;
  small_buffer.smem_bytes = static_cast<int>(detail::shared_buffer_bytes(plan.chunk_len * 4, 1)) - 128;
  for (const Plan& edited : {uncovered, small_buffer}) {
    const Status status = launch_forward(edited, p, nullptr, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
    EXPECT_NE(status.message().find("are not ones the planner makes"), std::string::npos) << status.message();
  }
}

// launch_forward refuses a stagger edited past what the planner makes (each group waits 0 to
// kChannelsLastClusterStaggerSpreadCycles cycles more than the one before it): a negative one, and
// one a cycle too long, before it touches the device.
TEST(Validate, LaunchRefusesHandEditedStagger) {
  ForwardParams p = valid_params();
  Plan plan;
  ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan).ok());
  for (const int cycles : {-1, static_cast<int>(detail::kChannelsLastClusterStaggerSpreadCycles) + 1}) {
    Plan edited = plan;
    edited.stagger_cycles = cycles;
    const Status status = launch_forward(edited, p, nullptr, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << cycles;
    EXPECT_NE(status.message().find("stagger_cycles (" + std::to_string(cycles) + ")"), std::string::npos)
        << status.message();
  }
}

// The same for plans with register parts (1 MiB fp32 slices): a register part without 16-byte
// access, a shared part off 16 bytes, or a register part of another size than the kernel's.
TEST(Validate, LaunchRefusesHandEditedRegisterParts) {
  ForwardParams p = valid_params();
  p.channels = 32;  // 64 slices: two rounds of 30 clusters, the steady plan
  p.spatial[0] = 512;
  p.spatial[1] = 512;
  Plan plan;
  ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan).ok());
  ASSERT_GT(plan.register_len, 0) << plan.describe();
  std::vector<unsigned char> workspace(plan.workspace_bytes + 1);  // never reached: a host address
  Plan scalar = plan;
  scalar.vector_io = false;
  Plan off_16 = plan;
  off_16.register_len -= 1;
  Plan other_size = plan;  // with the buffer for its larger shared part
  other_size.register_len /= 2;
  other_size.smem_bytes = static_cast<int>(detail::shared_buffer_bytes((plan.chunk_len - other_size.register_len) * 4, 1));
  const std::pair<Plan, const char*> edits[] = {
      {scalar, "are not ones the planner makes"},
      {off_16, "are not ones the planner makes"},
      {other_size, "elements of each chunk in registers; the kernel holds"},
  };
  for (const auto& [edited, why] : edits) {
    const Status status = launch_forward(edited, p, workspace.data(), nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
    EXPECT_NE(status.message().find(why), std::string::npos) << status.message();
  }
}

// launch_forward refuses a plan edited so that it needs more workspace than it says: a shared plan
// whose grid now runs enough rounds to take its slices from the counter.
TEST(Validate, LaunchRefusesPlansShortOfWorkspace) {
  ForwardParams p = valid_params();
  p.spatial[0] = 128;  // 64 KiB slices
  p.spatial[1] = 128;
  Plan plan;
  ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan).ok());
  ASSERT_EQ(plan.path, Path::kSharedResident);
  ASSERT_FALSE(detail::shared_slices_in_order(plan)) << plan.describe();
  Plan one_group = plan;
  one_group.grid = plan.ctas_per_slice;  // every slice through one group
  ASSERT_TRUE(detail::shared_slices_in_order(one_group)) << one_group.describe();
  std::vector<unsigned char> workspace(256);  // never reached: a host address
  const Status status = launch_forward(one_group, p, workspace.data(), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find("workspace_bytes (0) is less than the 256 bytes it needs"), std::string::npos)
      << status.message();
}

// launch_forward refuses a split_pipelined plan edited so that a normalize item could come before a
// statistics item it waits for, or so many parts are resident that every CTA could wait for one
// not yet handed out (the grid would wait forever), or a part would overrun its buffer or its
// stage, before it touches the device.
TEST(Validate, LaunchRefusesHandEditedPipelinedPlans) {
  ForwardParams p = valid_params();
  p.spatial[0] = 1024;  // 4 MiB slices: 64 parts of 64 KiB
  p.spatial[1] = 1024;
  PlanOptions options;
  options.force_path = Path::kSplitPipelined;
  Plan plan;
  ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan, options).ok());
  ASSERT_EQ(plan.parts_per_slice, 64);
  Plan short_lead = plan;
  short_lead.pipeline_lead = plan.parts_per_slice - 1;
  Plan small_buffer = plan;
  small_buffer.smem_bytes -= 16;
  Plan two_stages = plan;  // as many parts, each of two stages: the buffer holds one
  two_stages.chunk_len *= 2;
  two_stages.parts_per_slice /= 2;
  two_stages.smem_bytes = static_cast<int>(two_stages.chunk_len * 4 + 16);
  two_stages.pipeline_lead = plan.num_slices * two_stages.parts_per_slice;
  Plan uncovered = plan;  // one part short of the slice
  uncovered.parts_per_slice -= 1;
  uncovered.pipeline_lead = plan.num_slices * uncovered.parts_per_slice;
  Plan every_cta_resident = plan;  // 64 resident parts a slice on a grid of 64 CTAs
  every_cta_resident.resident_parts = 64;
  every_cta_resident.grid = 64;
  Plan more_resident_than_parts = plan;
  more_resident_than_parts.resident_parts = plan.parts_per_slice + 1;
  Plan negative_resident = plan;
  negative_resident.resident_parts = -1;
  std::vector<unsigned char> workspace(plan.workspace_bytes);  // never reached: a host address
  for (const Plan& edited : {short_lead, small_buffer, two_stages, uncovered, every_cta_resident,
                             more_resident_than_parts, negative_resident}) {
    const Status status = launch_forward(edited, p, workspace.data(), nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
    EXPECT_NE(status.message().find("are not ones the planner makes"), std::string::npos) << status.message();
  }
  // Parts of one value each: 2 x 6144 slices x 2^20 parts would wrap the 32-bit item counter.
  p.batch = 2048;
  p.y = fake_pointer(std::uintptr_t{1} << 40);  // past x's 24 GiB
  const Status planned = plan_forward(p, hopper_h200_limits(), &plan, options);
  ASSERT_TRUE(planned.ok()) << planned.message();
  Plan tiny_parts = plan;
  tiny_parts.chunk_len = 1;
  tiny_parts.parts_per_slice = 1 << 20;
  tiny_parts.pipeline_lead = tiny_parts.parts_per_slice;
  tiny_parts.workspace_bytes = detail::workspace_layout(tiny_parts).total;  // past the workspace check
  const Status status = launch_forward(tiny_parts, p, workspace.data(), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find("are not ones the planner makes"), std::string::npos) << status.message();
}

// launch_forward refuses a channels_last plan whose grid is edited past what a launch's x dimension
// takes (2^31 - 1 CTAs): the seed's, whose elementwise kernel takes a CTA a tile, one CTA over.
TEST(Validate, LaunchRefusesChannelsLastGridsPastALaunch) {
  ForwardParams p = valid_params();
  p.batch = 112;
  p.channels = 64;
  p.spatial[0] = 512;
  p.spatial[1] = 512;
  p.layout = Layout::kChannelsLast;
  p.y = fake_pointer(std::uintptr_t{1} << 40);  // past x's 7 GiB
  Plan plan;
  ASSERT_TRUE(plan_forward(p, hopper_h200_limits(), &plan).ok());
  ASSERT_EQ(plan.grid, detail::channels_last_tile_items(plan)) << plan.describe();
  std::vector<unsigned char> workspace(plan.workspace_bytes);  // never reached: a host address
  Plan past = plan;
  past.grid = int64_t{std::numeric_limits<int32_t>::max()} + 1;
  const Status status = launch_forward(past, p, workspace.data(), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find("are not ones the planner makes"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace inorm
