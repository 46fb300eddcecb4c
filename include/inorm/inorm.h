// inorm: InstanceNorm and GroupNorm, forward and backward, for NVIDIA GPUs (sm_90), torch-free.
//
// Usage: fill ForwardParams (BackwardParams), call plan_forward (plan_backward; host only, cheap),
// give the plan a workspace of plan.workspace_bytes on the device, then launch_forward
// (launch_backward) on a stream. forward() and backward() do all three. Both passes run on one
// slice engine: each slice stays on chip between its reductions and its elementwise pass, except
// slices larger than the chip and channels_last input, which are read twice.
// Every failure is a Status with a message; nothing in the library exits or aborts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace inorm {

enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2, kFloat64 = 3 };

// kContiguous is NCHW (N, C, spatial...) with unit stride in the last dimension; kChannelsLast is
// NHWC / NDHWC (N, spatial..., C), PyTorch's channels_last and channels_last_3d: a slice's elements
// are C apart. Every tensor the size of x (x, y, dy, dx) has the layout.
enum class Layout : int { kContiguous = 0, kChannelsLast = 1 };

// Bytes per element; 0 for a value outside the enum.
std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
// Type of the statistics (mean, rstd) and of all accumulation: float32, or float64 for float64 input.
DType stats_dtype(DType dtype);

// The activation fused into the elementwise pass after the affine (z = xhat * weight + bias), with
// PyTorch's formulas: relu max(z, 0); leaky_relu z > 0 ? z : z * negative_slope; silu
// z * sigmoid(z). The backward recomputes z on chip from x and the statistics, so the forward saves
// nothing more than for the norm alone.
enum class Activation : int { kNone = 0, kRelu = 1, kLeakyRelu = 2, kSilu = 3 };
const char* activation_name(Activation activation);

enum class StatusCode : int { kOk = 0, kInvalidArgument, kUnsupported, kCudaError };

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

struct ForwardParams {
  const void* x = nullptr;  // input, `dtype`
  void* y = nullptr;        // output, `dtype`; may equal x (in place), must not overlap it otherwise
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kContiguous;

  int64_t batch = 0;     // N >= 0
  int64_t channels = 0;  // C >= 0
  int spatial_rank = 0;  // 1 to 3
  int64_t spatial[3] = {0, 0, 0};

  double eps = 1e-5;  // finite, >= 0

  // Affine, shape [C], `param_dtype`; each may be null (weight 1, bias 0).
  const void* weight = nullptr;
  const void* bias = nullptr;
  DType param_dtype = DType::kFloat32;  // also the type of running_mean / running_var

  // Optional per-(n, c) outputs, stats_dtype(dtype), shape [N * C] (GroupNorm: per (n, group),
  // [N * groups]): the mean and 1/sqrt(var + eps) of the instance statistics (biased variance).
  // Only with use_input_stats.
  void* mean = nullptr;
  void* rstd = nullptr;

  // Running statistics, shape [C], `param_dtype`, both or neither.
  // use_input_stats == true:  normalize with instance statistics; when given, the running stats are
  //   updated as PyTorch does: running = (1 - momentum) * running + momentum * batch average of the
  //   per-instance mean and unbiased variance.
  // use_input_stats == false: normalize with the running stats (required), elementwise.
  void* running_mean = nullptr;
  void* running_var = nullptr;
  double momentum = 0.1;
  bool use_input_stats = true;

  // y = activation(z); negative_slope (finite) is read only by kLeakyRelu.
  Activation activation = Activation::kNone;
  double negative_slope = 0.01;

  // GroupNorm (torch.nn.functional.group_norm): `groups` slices per sample, each of C / groups
  // channels x spatial (contiguous in NCHW), normalized together; the affine stays per channel and
  // mean / rstd are [N * groups]. 0 or C: InstanceNorm, a slice per channel. groups must divide C;
  // GroupNorm takes no running statistics. Either layout.
  int64_t groups = 0;
};

// The gradients of the forward above. Train mode (use_input_stats): with xhat = (x - mean) * rstd,
// dz = dy * activation'(z) (dz = dy without an activation) and g = dz * weight,
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) over each slice; eval mode (running stats):
// dx = dz * weight * rstd, elementwise. dweight = sum over the batch and the slice of dz * xhat,
// dbias = that of dz, summed in a fixed order (the same bits every run). With an activation, z is
// recomputed from x, the statistics given, weight and bias; its derivative is PyTorch's (relu and
// leaky_relu take the zero side at z == 0).
struct BackwardParams {
  const void* x = nullptr;   // the forward's input, `dtype`
  const void* dy = nullptr;  // the gradient of the forward's output, `dtype`, x's shape
  void* dx = nullptr;        // x's gradient, `dtype`, or null (not computed); may equal dy (in place),
                             // must not overlap x, or dy otherwise
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kContiguous;

  int64_t batch = 0;     // N >= 0
  int64_t channels = 0;  // C >= 0
  int spatial_rank = 0;  // 1 to 3
  int64_t spatial[3] = {0, 0, 0};

  double eps = 1e-5;  // finite, >= 0; eval mode: rstd = 1 / sqrt(running_var + eps)

  const void* weight = nullptr;  // shape [C], `param_dtype`; null: weight 1
  DType param_dtype = DType::kFloat32;  // also the type of running_mean / running_var / dweight / dbias

  // use_input_stats == true: the per-(n, c) mean and rstd the forward returned, stats_dtype(dtype),
  // shape [N * C] (GroupNorm: [N * groups]). use_input_stats == false: the running statistics that
  // normalized x, [C].
  const void* mean = nullptr;
  const void* rstd = nullptr;
  const void* running_mean = nullptr;
  const void* running_var = nullptr;
  bool use_input_stats = true;

  // GroupNorm's backward, as ForwardParams.groups: mean and rstd are [N * groups]; train mode
  // (use_input_stats) only. dx's means run over each group's slice, dweight and dbias stay per
  // channel.
  int64_t groups = 0;

  // Gradients of weight and bias, shape [C], `param_dtype`, each null when not wanted.
  void* dweight = nullptr;
  void* dbias = nullptr;

  // The forward's activation, and with one its bias ([C], `param_dtype`; null: bias 0), which
  // places z; without one bias is not read.
  Activation activation = Activation::kNone;
  double negative_slope = 0.01;
  const void* bias = nullptr;
};

// The facts of a device the planner needs; query_device_limits fills them from the CUDA runtime.
struct DeviceLimits {
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int smem_per_sm = 0;                // bytes
  int max_smem_per_block_optin = 0;   // bytes a block may use after opting in
  int reserved_smem_per_block = 0;    // bytes the driver keeps per resident block
  // Clusters of the shared_resident kernel resident on the device at once, by CTAs per SM and CTAs
  // per cluster: resident_clusters[c][k], 1 <= c <= 6, 2 <= k <= 16. A cluster must fit in one GPC,
  // so this can be less than the SM slots hold (an H200 fits 21 clusters of 16 at three CTAs per
  // SM, not 24). 0 where unknown: the planner then counts SM slots alone. plan_forward for the
  // current device fills it (cudaOccupancyMaxActiveClusters); query_device_limits does not.
  int resident_clusters[7][17] = {};
};
Status query_device_limits(int device, DeviceLimits* limits);
// The limits of an H200 / H100 SXM (sm_90, 132 SMs), with the resident clusters one H200 reported:
// for CPU-side planning and tests.
DeviceLimits hopper_h200_limits();

// What a plan computes.
enum class Pass : int { kForward = 0, kBackward = 1 };
const char* pass_name(Pass pass);

enum class Path : int {
  kAuto = 0,          // planner's choice (only in PlanOptions)
  kEmpty,             // nothing to compute (an extent is 0)
  kElementwiseEval,   // forward with running statistics: y = (x - rm) * rsqrt(rv + eps) * w + b
  kGroupRegisters,    // a group of 4 to 32 lanes holds a slice in registers
  kSharedResident,    // one or more CTAs of a persistent grid hold a slice in shared memory
  kSplitPipelined,    // slices too large for the chip: one persistent grid runs the parts' statistics a
                      // fixed lead ahead of their normalization, which reads x again
  kChannelsLast,      // channels_last: tiles of [spatial rows x channels], each tile's statistics per
                      // channel, combined per slice (a group's channels together), then the
                      // elementwise pass: where a sample fits the chip, or a CTA every row of a
                      // block of whole slices, from the tiles a group of CTAs (or that CTA) holds
                      // (exchange global); the backward's plain op on samples of 1-2 MiB, from x
                      // a cluster holds (exchange cluster); else in kernels of their own, reading
                      // x again
};
const char* path_name(Path path);

// How the CTAs of a kSharedResident group share their chunk statistics.
enum class Exchange : int {
  kAuto = 0,  // planner's choice (only in PlanOptions)
  kNone,      // one CTA per slice: nothing to share
  kCluster,   // the group is a thread-block cluster: st.async into the peers' shared memory (a slice
              // over several clusters, Plan::slice_clusters: their combined partials through L2 too)
  kGlobal,    // through L2: a release counter per slice, a cooperative launch, workspace
};
const char* exchange_name(Exchange exchange);

// Overrides for benchmarks and tests; the default lets the planner choose.
struct PlanOptions {
  Path force_path = Path::kAuto;
  // kSharedResident: CTAs sharing a slice; kChannelsLast's resident channel blocks: CTAs sharing a
  // block's rows (a tile each, their partials exchanged through L2); its cluster form: CTAs a
  // sample (0: the fewest whose rows fit)
  int force_ctas_per_slice = 0;
  // kSharedResident with the cluster exchange: clusters sharing a slice, force_ctas_per_slice /
  // this many CTAs each (0: the planner's, one)
  int force_slice_clusters = 0;
  int force_ctas_per_sm = 0;      // kSharedResident, kChannelsLast's resident form: exactly this many CTAs per SM
                                  // (its cluster form: its pass's own, one backward, two forward)
  int max_ctas_per_sm = 0;        // kSharedResident: cap on resident CTAs per SM (0: no cap)
  // kSharedResident; kChannelsLast: kGlobal its resident form, kNone its three kernels, kCluster
  // its cluster form (a cluster of CTAs a sample; the plain ops, InstanceNorm)
  Exchange force_exchange = Exchange::kAuto;
  int force_resident_parts = -1;  // kSplitPipelined: resident parts per slice (-1: the planner's)
  // kSplitPipelined: bytes of a part's stage (every input's part together), a multiple of 4 KiB up
  // to the stage's 64 KiB (0: the planner's)
  int force_part_bytes = 0;
  int force_walk_back = -1;       // kSplitPipelined: Plan::walk_back, 0 or 1 (-1: the planner's)
  // kSharedResident: 16-byte vectors a thread of the register part, where the plan holds one: 8 (the
  // narrow part only) or 12 (the wide one, wherever a part is held; the forward without activation
  // or channel affine only, the other ops hold 8); 0: the planner's (the narrow part, the wide one
  // where the narrow one's buffer does not fit)
  int force_register_vecs = 0;
  int force_group_lanes = 0;      // kGroupRegisters: lanes a slice, 4 to 64 (0: the planner's)
  // kGroupRegisters: threads a CTA, whole warps and whole slices' lanes, up to 256 (0: the planner's)
  int force_group_cta_threads = 0;
  // kChannelsLast's three kernels: channels a tile (a multiple of a 16-byte vector where the plan
  // moves vectors, at most 256) and spatial positions a tile (rounded up to whole passes of the
  // CTA's threads); 0: the planner's. With force_exchange kGlobal, the channels of the resident
  // form's blocks (whole slices, every row in one CTA; C: whole rows); its rows are its own.
  int force_channel_block = 0;
  int64_t force_tile_rows = 0;
  // kChannelsLast's three kernels: the reduction streamed through a ring of bulk copies in this many
  // parts of each sample's rows (Plan::stream_parts); 0 by tiles; -1 the planner's. Only where the
  // stream runs: either pass without an activation or channel affine, float32 and the 16-bit
  // types, C = 4, 8, ... 128 channels, rows aligned to 16 bytes.
  int force_stream_parts = -1;
  // Where the reduction streams: 1 runs the elementwise pass in the same kernel (Plan::stream_applies:
  // every part a CTA at once, each part at least kChannelsLastStreamStages stages), 0 in its own
  // kernel, -1 the planner's.
  int force_stream_applies = -1;
};

struct Plan {
  Pass pass = Pass::kForward;
  Path path = Path::kEmpty;
  // What the plan was made for; launch_forward / launch_backward check the params against it.
  DType dtype = DType::kFloat32;
  DType param_dtype = DType::kFloat32;
  Layout layout = Layout::kContiguous;
  int64_t num_slices = 0;  // N * C (GroupNorm: N * groups)
  int64_t channels = 0;
  int64_t slice_len = 0;   // S, product of the spatial extents (GroupNorm: C / groups * S)
  int64_t slice_channels = 1;   // channels a slice spans: 1, or C / groups (GroupNorm)
  bool channel_affine = false;  // GroupNorm with weight or bias (backward: or weight gradients, which
                                // are summed per channel): each element's channel matters in a slice
  bool use_input_stats = true;
  Activation activation = Activation::kNone;
  bool update_running_stats = false;  // forward: running stats given with use_input_stats
  bool weight_grads = false;   // backward: dweight or dbias wanted
  bool writes_output = true;   // y (forward, always) or dx (backward, when wanted)
  bool vector_io = false;      // every tensor read or written per element starts 16-byte aligned, and so
                               // does every slice: 16-byte global accesses throughout
  bool coaligned = false;      // those tensors are all aligned like x modulo 16: vector accesses line up

  // Launch shape of the main kernel.
  int64_t grid = 0;
  int threads = 0;
  int group_size = 0;        // kGroupRegisters: lanes per slice
  int items_per_lane = 0;    // kGroupRegisters: loads per lane (16-byte vectors or scalars)
  int inputs = 1;            // tensors held on chip per element: x (forward), x and dy (backward)
  int ctas_per_slice = 0;    // kSharedResident: CTAs sharing a slice (a group); kChannelsLast resident: an item
                             // (a sample in tiles of whole rows; a channel block of whole slices: one);
                             // kChannelsLast's cluster form: a sample's cluster
  int slice_clusters = 1;    // kSharedResident, Exchange::kCluster: clusters a slice's group spans, each of
                             // ctas_per_slice / slice_clusters CTAs (a cluster's partial through L2 beyond one)
  int ctas_per_sm = 0;       // kSharedResident, kChannelsLast resident: resident CTAs per SM the grid is sized for
  // kSharedResident; kChannelsLast: kGlobal in its resident form, kCluster in its cluster form
  Exchange exchange = Exchange::kNone;
  int64_t chunk_len = 0;     // kSharedResident: elements per CTA; kSplitPipelined: elements per part
                             // (of each input)
  int64_t register_len = 0;  // kSharedResident: of each chunk, the elements held in registers (its end)
  int parts_per_slice = 0;   // kSplitPipelined; kChannelsLast: tiles per channel
  int channel_block = 0;     // kChannelsLast: channels of a tile (threads = rows a pass x channel_block)
  int64_t tile_rows = 0;     // kChannelsLast: spatial positions of a tile
  // kChannelsLast's three kernels: where > 0, the reduction streams each sample's rows in this many
  // parts, a CTA a part at a time (stream_grid CTAs), through a ring of bulk copies into registers
  // (kernels/channels_last.cuh channels_last_stream_kernel); 0: it reduces the tiles
  int64_t stream_parts = 0;
  int64_t stream_grid = 0;
  // With stream_parts: the same kernel then runs the elementwise pass, its CTAs one a part all at
  // once, each sample's partials exchanged through L2, each part written from the last stages of its
  // ring first, then from its last rows back (x, and the backward's dy, read once where they are
  // still on chip); no finish or elementwise kernel.
  bool stream_applies = false;
  int64_t pipeline_lead = 0;  // kSplitPipelined: statistics items handed out before the first normalize item
  int resident_parts = 0;     // kSplitPipelined: of each slice's parts, the last this many stay in the shared
                              // memory of the CTA that reduced them, which then writes their output: read once
  bool evict_first = false;   // kSplitPipelined: what is read or written once (a resident part's load, the second
                              // read, the output) is marked evict-first in L2, so the parts read again stay there;
                              // kChannelsLast's three kernels (the backward on up to 64 MiB of x and dy): the
                              // elementwise pass's loads and stores, so that the tiles it has yet to reach stay
                              // there; where the streamed kernel applies (not the planner's; a caller may set it):
                              // each part's first rows, beyond what its ring and a share of L2 keep for the second
                              // read, that second read and the output
  bool walk_back = false;     // kSplitPipelined: each slice's elementwise items take its streamed parts from the
                              // last back, those its reductions read last (the likeliest still in L2) first
  // kSharedResident and kChannelsLast's cluster form: SM cycles between the starts of the groups (or
  // clusters) of the first round, group k waiting k times this long (0: all at once)
  int stagger_cycles = 0;
  int smem_bytes = 0;        // dynamic shared memory per CTA (a region per input)

  std::size_t workspace_bytes = 0;

  std::string describe() const;  // one line, e.g. "shared_resident ctas_per_slice=11 ..."
};

// Checks the params alone (no device access).
Status validate_forward(const ForwardParams& params);

// Pure host planning against given limits (unit-tested on the CPU).
Status plan_forward(const ForwardParams& params, const DeviceLimits& limits, Plan* plan,
                    const PlanOptions& options = {});
// Plans for the current device, with the occupancy the compiled kernels really reach there.
Status plan_forward(const ForwardParams& params, Plan* plan, const PlanOptions& options = {});

// Launches the plan on `stream`. `workspace` must hold plan.workspace_bytes (may be null when 0) and
// must not be used by other work until the launch completes on the stream.
Status launch_forward(const Plan& plan, const ForwardParams& params, void* workspace,
                      cudaStream_t stream);

// plan_forward + a stream-ordered workspace (cudaMallocAsync) + launch_forward.
Status forward(const ForwardParams& params, cudaStream_t stream);

// The same four for the backward. Its plans hold x and dy on chip per element, so a slice that one
// family holds for the forward may need the next for the backward.
Status validate_backward(const BackwardParams& params);
Status plan_backward(const BackwardParams& params, const DeviceLimits& limits, Plan* plan,
                     const PlanOptions& options = {});
Status plan_backward(const BackwardParams& params, Plan* plan, const PlanOptions& options = {});
Status launch_backward(const Plan& plan, const BackwardParams& params, void* workspace,
                       cudaStream_t stream);
Status backward(const BackwardParams& params, cudaStream_t stream);

}  // namespace inorm
