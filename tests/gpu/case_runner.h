// Runs one InstanceNorm (or GroupNorm) problem, forward or backward, on the GPU and checks it completely against
// the float64 oracle: fresh random inputs, outputs poisoned before the launch and checked for full
// coverage, every output (y, mean, rstd, running stats; dx, dweight, dbias) compared with stated
// tolerances.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inorm/inorm.h"
#include "testing/device_data.h"
#include "testing/params_shape.h"

// First line of every GPU test: skips it, with the reason, where no CUDA device is usable.
#define INORM_REQUIRE_GPU()                                              \
  do {                                                                   \
    std::string why_;                                                    \
    if (!::inorm::testing::cuda_device_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

namespace inorm::testing {

enum class Running { kNone, kUpdate, kEval };

struct Case {
  Pass pass = Pass::kForward;
  std::vector<int64_t> shape;  // N, C, then 1 to 3 spatial extents
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kContiguous;  // of x, y, dy and dx alike
  DataSpec data;               // x: U[0,1) unless set
  bool affine = false;
  bool weight_only = false;    // weight without bias
  Activation activation = Activation::kNone;  // fused after the affine, in both passes
  int64_t groups = 0;          // GroupNorm's groups (0: InstanceNorm)
  double negative_slope = 0.01;
  DType param_dtype = DType::kFloat32;
  Running running = Running::kNone;
  int updates = 1;             // forward calls on the same input (running stats updated each time)
  bool stats_outputs = true;   // ask for mean and rstd
  int64_t x_offset = 0;        // elements: a view that does not start on 16 bytes
  int64_t y_offset = 0;        // y; backward: dy, and dx unless dx_offset is set
  int64_t dx_offset = -1;
  bool in_place = false;       // y is x; backward: dx is dy
  int64_t nan_slice = -1;      // this slice gets one NaN
  // Forward: this slice (of a channel) starts with a 0. On data far from zero the forward's sums
  // are then taken around a shift far from the mean (the slice's first element; GroupNorm's, its
  // group's first channel's), and its chunks take the second pass (forward_op.cuh reduce).
  int64_t zero_start_slice = -1;
  int bitwise_repeats = 1;     // > 1: launch again and require identical bits
  // Backward: dy's data, and the gradients wanted: dx, and with affine dweight (and dbias unless
  // weight_only). Running::kEval is eval mode (the running stats normalized x); otherwise the
  // statistics are the oracle's mean and rstd of x, rounded to the stats type as the forward
  // returns them.
  DataSpec dy_data{Distribution::kNormal, 0.0, 1.0};
  bool want_dx = true;
  bool want_weight_grads = true;
  // Without affine: dweight and dbias asked for all the same (those of a weight of 1 and a bias of
  // 0), as PyTorch's backward op may be called.
  bool weight_grads_without_affine = false;
  PlanOptions options;
  int64_t max_groups = 0;      // > 0: the plan's grid cut to this many groups (more rounds of slices;
                               // kChannelsLast: CTAs, each taking more tiles, or parts of its stream
                               // where it does not apply: that kernel's CTAs take one part each)
  Path expect_path = Path::kAuto;  // when set, the plan must have chosen this path
  int expect_ctas_per_slice = 0;   // when set, the plan must share a slice among this many CTAs
  int expect_ctas_per_sm = 0;      // when set, the plan must put this many CTAs on each SM
  int expect_slice_clusters = 0;   // when set, the plan must spread a slice over this many clusters
  Exchange expect_exchange = Exchange::kAuto;  // when set, the plan must exchange this way
  std::optional<int64_t> expect_stream_parts;  // when set, the channels_last plan's Plan::stream_parts
  std::optional<bool> expect_stream_applies;   // when set, the channels_last plan's Plan::stream_applies
  std::optional<bool> set_evict_first;         // when set, the plan's Plan::evict_first (L2 hints) edited to it
  std::optional<bool> expect_in_order;  // when set, whether shared_resident takes its slices from the counter
  std::optional<bool> expect_registers;  // when set, whether shared_resident holds part of each chunk in registers
  std::optional<bool> expect_wide_registers;  // when set, whether that part is the wide one (config.h kSharedWide*)
  std::optional<bool> expect_early;      // when set, whether shared_resident takes each next slice early
  std::optional<bool> expect_general_op;  // when set, whether the plan runs the op's general form
  // when set, whether the op takes GroupNorm's affine a chunk's channel at a time
  // (plan_internal.h takes_chunk_channel_affine)
  std::optional<bool> expect_chunk_channel_affine;
};

struct Outcome {
  std::vector<std::string> failures;  // empty when everything matched
  std::string plan;                   // plan.describe()
  uint64_t seed = 0;
};

// The case's dtype and shape (N, C, then 1 to 3 spatial extents) in either pass's params.
template <typename Params>
void set_shape(const Case& c, Params* p) {
  set_params_shape(c.shape, c.dtype, c.layout, p);
}

// Forces c's plan (0 and Exchange::kAuto leave that choice to the planner) and requires the path and
// exchange forced.
inline void force_plan(Case* c, Path path, int ctas_per_slice, int ctas_per_sm, Exchange exchange) {
  c->options.force_path = path;
  c->options.force_ctas_per_slice = ctas_per_slice;
  c->options.force_ctas_per_sm = ctas_per_sm;
  c->options.force_exchange = exchange;
  c->expect_path = path;
  c->expect_exchange = exchange;
}

// Runs c.pass.
Outcome run_case(const Case& c);

// Printable "N x C x ... dtype" for test names and messages.
std::string describe(const Case& c);

}  // namespace inorm::testing
