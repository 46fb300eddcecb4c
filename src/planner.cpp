// Validation and planning: plain host C++, no device access.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "config.h"
#include "inorm/inorm.h"
#include "plan_internal.h"

namespace inorm {

using detail::kGroupConfigs;

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kFloat64: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
  }
  return "unknown";
}

DType stats_dtype(DType dtype) {
  return dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
}

const char* pass_name(Pass pass) {
  switch (pass) {
    case Pass::kForward: return "forward";
    case Pass::kBackward: return "backward";
  }
  return "unknown";
}

const char* path_name(Path path) {
  switch (path) {
    case Path::kAuto: return "auto";
    case Path::kEmpty: return "empty";
    case Path::kElementwiseEval: return "elementwise_eval";
    case Path::kGroupRegisters: return "group_registers";
    case Path::kSharedResident: return "shared_resident";
    case Path::kSplitPipelined: return "split_pipelined";
    case Path::kChannelsLast: return "channels_last";
  }
  return "unknown";
}

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kLeakyRelu: return "leaky_relu";
    case Activation::kSilu: return "silu";
  }
  return "unknown";
}

const char* exchange_name(Exchange exchange) {
  switch (exchange) {
    case Exchange::kAuto: return "auto";
    case Exchange::kNone: return "none";
    case Exchange::kCluster: return "cluster";
    case Exchange::kGlobal: return "global";
  }
  return "unknown";
}

DeviceLimits hopper_h200_limits() {
  DeviceLimits limits;
  limits.sm_count = 132;
  limits.max_threads_per_sm = 2048;
  limits.smem_per_sm = 233472;
  limits.max_smem_per_block_optin = 232448;
  limits.reserved_smem_per_block = 1024;
  // Clusters of 2..16 CTAs at 2..6 per SM, as cudaOccupancyMaxActiveClusters gave them on an H200
  // (2026-11-30, bench/results/2026-11-30-h200-6e7bc72/); 132 SMs in GPCs of different sizes.
  const int clusters[5][15] = {
      {132, 79, 62, 47, 39, 32, 30, 23, 21, 16, 16, 14, 14, 14, 14},
      {198, 124, 92, 69, 62, 47, 45, 37, 30, 28, 28, 23, 21, 21, 21},
      {264, 163, 124, 94, 79, 69, 62, 51, 44, 37, 37, 30, 30, 28, 28},
      {330, 203, 154, 124, 101, 84, 77, 60, 58, 51, 44, 42, 37, 37, 35},
      {396, 248, 186, 146, 124, 101, 92, 74, 65, 58, 58, 51, 44, 44, 42},
  };
  for (int c = 2; c <= 6; ++c) {
    for (int k = 2; k <= 16; ++k) limits.resident_clusters[c][k] = clusters[c - 2][k - 2];
  }
  return limits;
}

namespace {

// describe()'s line, built without iostreams: the PyTorch extension (setup.py) compiles this file too,
// and there an ostringstream's insertion of a number died of a segmentation fault inside the
// extension's own copy of ostream's insert (session 92, a channels_last GroupNorm plan's describe()).
struct Line {
  std::string text;
  Line& operator<<(const char* part) {
    text += part;
    return *this;
  }
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int>>>
  Line& operator<<(Int value) {
    text += std::to_string(value);
    return *this;
  }
};

}  // namespace

std::string Plan::describe() const {
  Line out;
  if (pass == Pass::kBackward) out << "backward ";
  out << path_name(path);
  switch (path) {
    case Path::kGroupRegisters:
      out << " group=" << group_size << " items=" << items_per_lane
          << (vector_io ? " vector" : " scalar") << " threads=" << threads << " grid=" << grid;
      break;
    case Path::kSharedResident:
      out << " ctas_per_slice=" << ctas_per_slice << " ctas_per_sm=" << ctas_per_sm
          << " exchange=" << exchange_name(exchange);
      if (slice_clusters > 1) out << " clusters=" << slice_clusters << "x" << detail::shared_cluster_ctas(*this);
      out << " threads=" << threads << " chunk=" << chunk_len;
      if (register_len > 0) out << " registers=" << register_len;
      out << " grid=" << grid
          << (detail::shared_slices_in_order(*this) ? " in-order" : "")
          << (detail::shared_takes_slices_early(*this) ? " early" : "");
      if (stagger_cycles > 0) out << " stagger=" << stagger_cycles;
      out << (coaligned ? "" : " scalar-stores");
      break;
    case Path::kSplitPipelined:
      out << " parts=" << parts_per_slice << " part_len=" << chunk_len << " grid=" << grid << " lead=" << pipeline_lead;
      if (resident_parts > 0) out << " resident=" << resident_parts;
      if (evict_first) out << " evict-first";
      if (walk_back) out << " walk-back";
      out << (coaligned ? "" : " scalar-stores");
      break;
    case Path::kChannelsLast:
      out << " channels=" << channel_block << " threads=" << threads << " tile_rows=" << tile_rows
          << " tiles=" << parts_per_slice << " grid=" << grid
          << (channel_block == channels ? " bulk" : vector_io ? " vector" : " scalar");
      if (stream_parts > 0) out << " stream_parts=" << stream_parts << " stream_grid=" << stream_grid;
      if (stream_applies) out << " stream-applies";
      if (evict_first) out << " evict-first";
      if (exchange == Exchange::kGlobal) {
        out << " resident ctas_per_item=" << ctas_per_slice << " ctas_per_sm=" << ctas_per_sm;
      }
      if (exchange == Exchange::kCluster) {
        out << " clusters=" << grid / std::max(ctas_per_slice, 1) << "x" << ctas_per_slice;
        if (stagger_cycles > 0) out << " stagger=" << stagger_cycles;
      }
      break;
    default:
      break;
  }
  if (slice_channels > 1) {
    out << " groups=" << channels / slice_channels;
    // chunk-channel-affine: a chunk's channel's affine (plan_internal.h takes_chunk_channel_affine).
    if (channel_affine) out << (detail::takes_chunk_channel_affine(*this) ? " chunk-channel-affine" : " channel-affine");
  }
  if (activation != Activation::kNone) out << " +" << activation_name(activation);
  if (update_running_stats) out << " +running_stats";
  if (weight_grads) out << " +weight_grads";
  if (!writes_output) out << " no-dx";
  return out.text;
}

namespace detail {

namespace {

std::size_t align_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Elements of each of `pieces` equal chunks of a slice of `elem`-byte values, rounded up to whole
// multiples of kChunkAlignBytes where that long, else of 16 bytes (the last chunk may be shorter).
int64_t chunk_len_for(int64_t slice_len, int64_t pieces, int64_t elem) {
  const int64_t even = ceil_div(slice_len, pieces);
  const int64_t unit = (even * elem >= kChunkAlignMinBytes ? kChunkAlignBytes : 16) / elem;
  return ceil_div(even, unit) * unit;
}

int64_t next_pow2(int64_t value) {
  int64_t result = 1;
  while (result < value) result *= 2;
  return result;
}

}  // namespace

static_assert(std::extent_v<decltype(DeviceLimits::resident_clusters), 0> == kSharedMaxCtasPerSm + 1 &&
                  std::extent_v<decltype(DeviceLimits::resident_clusters), 1> == kSharedMaxClusterCtas + 1,
              "DeviceLimits::resident_clusters has a row for every CTAs per SM and a column for every cluster size");

int64_t ctas_fitting_on_sm(const DeviceLimits& limits, int64_t smem_bytes) {
  return limits.smem_per_sm / (smem_bytes + kSharedStaticReserve + limits.reserved_smem_per_block);
}

int64_t shared_sm_share(const DeviceLimits& limits, int ctas_per_sm) {
  const int64_t share = limits.smem_per_sm / ctas_per_sm - limits.reserved_smem_per_block - kSharedStaticReserve;
  return share / 128 * 128;
}

bool shared_slices_in_order(const Plan& plan) {
  if (plan.path != Path::kSharedResident || plan.exchange == Exchange::kGlobal || plan.ctas_per_slice < 1) return false;
  if (plan.slice_clusters > 1) return true;
  const int64_t groups = plan.grid / plan.ctas_per_slice;
  const int64_t slice_bytes = plan.slice_len * static_cast<int64_t>(dtype_size(plan.dtype));
  return plan.num_slices >= kSharedInOrderMinRounds * groups &&
         slice_bytes >= plan.ctas_per_slice * kSharedInOrderMinChunkBytes;
}

bool shared_takes_slices_early(const Plan& plan) {
  return shared_slices_in_order(plan) && plan.register_len > 0 && plan.slice_clusters == 1 &&
         plan.num_slices >= kSharedEarlyDispatchMinRounds * (plan.grid / plan.ctas_per_slice);
}

int stagger_cycles_of(const Plan& plan) {
  if (channels_last_clusters(plan)) {
    const int64_t clusters = std::max<int64_t>(plan.grid / std::max(plan.parts_per_slice, 1), 1);
    return batch_of(plan) > clusters ? static_cast<int>(kChannelsLastClusterStaggerSpreadCycles / clusters) : 0;
  }
  if (plan.path != Path::kSharedResident || plan.ctas_per_slice < 2) return 0;
  const int64_t groups = plan.grid / shared_cluster_ctas(plan);
  if (groups < 1 || plan.num_slices * plan.slice_clusters <= groups) return 0;
  const int64_t spread = plan.slice_clusters > 1 ? kSharedSpanStaggerMaxSpreadCycles : kSharedStaggerMaxSpreadCycles;
  return static_cast<int>(std::min<int64_t>(kSharedStaggerCycles, spread / groups));
}

WorkspaceLayout workspace_layout(const Plan& plan) {
  WorkspaceLayout layout;
  std::size_t offset = 0;
  const auto reserve = [&offset](std::size_t bytes) {  // a segment's start; the next one is aligned
    const std::size_t start = offset;
    offset = align_up(offset + bytes, kWorkspaceAlign);
    return start;
  };
  const auto slices = static_cast<std::size_t>(plan.num_slices);
  if (shared_exchanges_through_l2(plan)) {
    const int partials = plan.slice_clusters > 1 ? plan.slice_clusters : plan.ctas_per_slice;
    layout.chunk_partials = reserve(slices * partials * chunk_stats_bytes(plan.dtype));
    layout.slice_arrivals = reserve(slices * sizeof(unsigned));
  }
  // Right after the arrivals: the launch zeroes both with one memset (kernels/shared_resident.cu).
  if (shared_slices_in_order(plan)) layout.slice_counter = reserve(sizeof(unsigned long long));
  // kChannelsLast works by channel (a slice's channels are its columns): a partial per tile of each
  // (the resident form's CTAs alone keep theirs on chip).
  const std::size_t channels = plan.path == Path::kChannelsLast ? slices * plan.slice_channels : slices;
  // (The cluster form's CTAs exchange in distributed shared memory: no partials, no coefficients.)
  const bool channels_last_tiles = plan.path == Path::kChannelsLast && !channels_last_clusters(plan);
  if (plan.path == Path::kSplitPipelined ||
      (channels_last_tiles && (!channels_last_resident(plan) || channels_last_exchanges(plan)))) {
    const auto parts = static_cast<std::size_t>(plan.path == Path::kChannelsLast ? channels_last_reduce_parts(plan)
                                                                                  : plan.parts_per_slice);
    layout.split_partials = reserve(channels * parts * sizeof(SplitPartial));
  }
  if (channels_last_exchanges(plan)) {
    layout.slice_arrivals = reserve(static_cast<std::size_t>(channels_last_resident_items(plan)) * sizeof(unsigned));
  } else if (channels_last_stream_applies(plan)) {
    layout.slice_arrivals = reserve(static_cast<std::size_t>(batch_of(plan)) * sizeof(unsigned));
  } else if (channels_last_tiles && !channels_last_resident(plan)) {
    layout.slice_coefficients = reserve(channels * kSliceCoefficientBytes);
  }
  if (plan.path == Path::kSplitPipelined) {
    layout.split_slice_stats = reserve(slices * sizeof(SplitPartial));
    layout.split_counters = reserve((slices + 1) * sizeof(unsigned));
  }
  if (reduces_channels(plan)) {
    const std::size_t stats_bytes = slices * dtype_size(stats_dtype(plan.dtype));
    layout.slice_term0 = reserve(stats_bytes);
    layout.slice_term1 = reserve(stats_bytes);
  }
  if (sums_channels_in_slices(plan)) {
    layout.channel_partials =
        reserve(slices * channel_partials_per_slice(plan) * 2 * dtype_size(stats_dtype(plan.dtype)));
  }
  layout.total = offset;
  return layout;
}

int64_t largest_resident_slice(DType dtype, int inputs, const DeviceLimits& limits) {
  // The largest cluster, each CTA alone on its SM. Wider groups could hold more, but only at one
  // CTA per SM, where the exchange through L2 among many CTAs loses to the split path (every SM
  // on one slice: 3.3x copy on vol3d against 1.7x).
  const int64_t ctas = std::min<int64_t>(limits.sm_count, kSharedMaxClusterCtas);
  const int64_t buffer = (limits.max_smem_per_block_optin - kSharedStaticReserve) / 128 * 128;
  const int64_t region = buffer / inputs / 128 * 128;
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  return ctas * ((region - 16) / kChunkAlignBytes * kChunkAlignBytes / elem);  // chunks that long are aligned
}

namespace {

// The shape, dtypes and alignment facts of tensors x and `others` (each may be null), for a plan of
// `pass` holding `inputs` tensors on chip per element.
template <typename Params>
Plan signature_of(const Params& params, Pass pass, int inputs, std::initializer_list<const void*> others) {
  Plan plan;
  plan.pass = pass;
  plan.inputs = inputs;
  plan.dtype = params.dtype;
  plan.param_dtype = params.param_dtype;
  plan.layout = params.layout;
  plan.slice_channels = slice_channels_of(params);
  plan.num_slices = params.batch * (params.channels / plan.slice_channels);
  plan.channels = params.channels;
  plan.slice_len = slice_len_of(params) * plan.slice_channels;
  plan.channel_affine = plan.slice_channels > 1 && (params.weight != nullptr || params.bias != nullptr);
  plan.use_input_stats = params.use_input_stats;
  plan.activation = params.activation;
  const std::size_t elem = dtype_size(params.dtype);
  const auto x_addr = reinterpret_cast<std::uintptr_t>(params.x);
  // Every slice starts 16-byte aligned in every tensor, or at least in the same place modulo 16.
  // (channels_last: every row of C channels).
  const int64_t run = params.layout == Layout::kChannelsLast ? plan.channels : plan.slice_len;
  plan.vector_io = x_addr % 16 == 0 && (run * static_cast<int64_t>(elem)) % 16 == 0;
  plan.coaligned = true;
  for (const void* other : others) {
    if (other == nullptr) continue;
    const auto addr = reinterpret_cast<std::uintptr_t>(other);
    plan.vector_io = plan.vector_io && addr % 16 == 0;
    plan.coaligned = plan.coaligned && (x_addr - addr) % 16 == 0;
  }
  return plan;
}

}  // namespace

Plan plan_signature(const ForwardParams& params) {
  Plan plan = signature_of(params, Pass::kForward, 1, {params.y});
  plan.update_running_stats = params.use_input_stats && params.running_mean != nullptr;
  return plan;
}

Plan plan_signature(const BackwardParams& params) {
  Plan plan = signature_of(params, Pass::kBackward, 2, {params.dy, params.dx});
  plan.weight_grads = params.dweight != nullptr || params.dbias != nullptr;
  plan.writes_output = params.dx != nullptr;
  // The backward follows each element's channel also to sum dweight and dbias per channel.
  plan.channel_affine = plan.channel_affine || (plan.slice_channels > 1 && plan.weight_grads);
  return plan;
}

bool same_problem(const Plan& a, const Plan& b) {
  return a.pass == b.pass && a.inputs == b.inputs && a.dtype == b.dtype && a.param_dtype == b.param_dtype &&
         a.layout == b.layout &&
         a.num_slices == b.num_slices && a.channels == b.channels && a.slice_len == b.slice_len &&
         a.slice_channels == b.slice_channels && a.channel_affine == b.channel_affine &&
         a.use_input_stats == b.use_input_stats && a.activation == b.activation &&
         a.update_running_stats == b.update_running_stats &&
         a.weight_grads == b.weight_grads && a.writes_output == b.writes_output;
}

bool plan_matches(const Plan& plan, const Plan& now) {
  return same_problem(plan, now) && (!plan.vector_io || now.vector_io) && (!plan.coaligned || now.coaligned);
}

}  // namespace detail

namespace {

Status invalid(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, "inorm: " + message);
}
Status unsupported(const std::string& message) {
  return Status(StatusCode::kUnsupported, "inorm: " + message);
}

bool aligned_to(const void* ptr, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(ptr) % alignment == 0;
}

using detail::ceil_div;
using detail::chunk_len_for;
using detail::next_pow2;

bool known_dtype(DType dtype) { return dtype_size(dtype) != 0; }
bool known_activation(Activation activation) {
  return activation == Activation::kNone || activation == Activation::kRelu ||
         activation == Activation::kLeakyRelu || activation == Activation::kSilu;
}

}  // namespace

namespace {

// The checks both passes share: dtype, layout, rank, extents, their product in 64-bit byte offsets,
// S > 1 for instance statistics, eps, and the parameter dtype where parameters are given. Sets
// *numel.
template <typename Params>
Status validate_shape(const Params& p, bool has_params, int64_t* numel) {
  if (!known_dtype(p.dtype)) {
    return invalid("unknown dtype " + std::to_string(static_cast<int>(p.dtype)) +
                   " (expected float32, float16, bfloat16 or float64)");
  }
  if (p.layout != Layout::kContiguous && p.layout != Layout::kChannelsLast) {
    return invalid("unknown layout " + std::to_string(static_cast<int>(p.layout)));
  }
  if (p.spatial_rank < 1 || p.spatial_rank > 3) {
    return invalid("spatial_rank must be 1, 2 or 3, got " + std::to_string(p.spatial_rank));
  }
  if (p.batch < 0 || p.channels < 0) {
    return invalid("batch and channels must be >= 0, got N=" + std::to_string(p.batch) +
                   " C=" + std::to_string(p.channels));
  }
  for (int i = 0; i < p.spatial_rank; ++i) {
    if (p.spatial[i] < 0) {
      return invalid("spatial extent " + std::to_string(i) + " is negative (" +
                     std::to_string(p.spatial[i]) + ")");
    }
  }
  // numel * 8 bytes must fit in int64.
  *numel = 1;
  const int64_t extents[] = {p.batch, p.channels, p.spatial[0], p.spatial[1], p.spatial[2]};
  for (int i = 0; i < 2 + p.spatial_rank; ++i) {
    if (__builtin_mul_overflow(*numel, extents[i], numel) ||
        *numel > std::numeric_limits<int64_t>::max() / 8) {
      return invalid("tensor size overflows 64-bit byte offsets");
    }
  }
  if (p.use_input_stats && detail::slice_len_of(p) == 1 && !detail::is_group_norm(p)) {
    return invalid(
        "Expected more than 1 spatial element when training (use_input_stats), got S == 1");
  }
  if (!std::isfinite(p.eps) || p.eps < 0) {
    return invalid("eps must be finite and >= 0, got " + std::to_string(p.eps));
  }
  if ((p.running_mean == nullptr) != (p.running_var == nullptr)) {
    return invalid("running_mean and running_var must both be given or both be null");
  }
  if (!p.use_input_stats && p.running_mean == nullptr) {
    return invalid("Expected running_mean and running_var to be defined when use_input_stats is false");
  }
  if (has_params && !known_dtype(p.param_dtype)) {
    return invalid("unknown param_dtype " + std::to_string(static_cast<int>(p.param_dtype)));
  }
  if (!known_activation(p.activation)) {
    return invalid("unknown activation " + std::to_string(static_cast<int>(p.activation)));
  }
  if (p.activation == Activation::kLeakyRelu && !std::isfinite(p.negative_slope)) {
    return invalid("negative_slope must be finite, got " + std::to_string(p.negative_slope));
  }
  return Status::Ok();
}

// Whether [a, a + bytes) and [b, b + bytes) overlap without being the same range.
bool overlap_partly(const void* a, const void* b, std::size_t bytes) {
  const auto a_begin = reinterpret_cast<std::uintptr_t>(a);
  const auto b_begin = reinterpret_cast<std::uintptr_t>(b);
  return a_begin != b_begin && a_begin < b_begin + bytes && b_begin < a_begin + bytes;
}

// Each non-null pointer of `ptrs` is aligned to `dtype`'s size; otherwise the error `message`.
Status check_aligned(std::initializer_list<const void*> ptrs, DType dtype, const std::string& message) {
  for (const void* ptr : ptrs) {
    if (ptr != nullptr && !aligned_to(ptr, dtype_size(dtype))) return invalid(message);
  }
  return Status::Ok();
}

// GroupNorm's own conditions, either pass: groups divides C; instance statistics only.
template <typename Params>
Status validate_groups(const Params& p) {
  if (!detail::is_group_norm(p)) return Status::Ok();
  if (p.groups < 0 || (p.channels > 0 && p.channels % p.groups != 0)) {
    return invalid("groups must be 0 (InstanceNorm) or a positive divisor of the channels, got groups=" +
                   std::to_string(p.groups) + " for C=" + std::to_string(p.channels));
  }
  if (!p.use_input_stats || p.running_mean != nullptr || p.running_var != nullptr) {
    return invalid("GroupNorm (groups given) normalizes with the statistics of its input: use_input_stats, and "
                   "no running_mean / running_var");
  }
  return Status::Ok();
}

}  // namespace

Status validate_forward(const ForwardParams& p) {
  Status status = validate_groups(p);
  if (!status.ok()) return status;
  int64_t numel = 0;
  status = validate_shape(p, p.weight || p.bias || p.running_mean || p.running_var, &numel);
  if (!status.ok()) return status;
  if (!p.use_input_stats && (p.mean != nullptr || p.rstd != nullptr)) {
    return invalid("mean/rstd outputs are produced only with use_input_stats (instance statistics)");
  }
  if (p.running_mean != nullptr && p.use_input_stats && !std::isfinite(p.momentum)) {
    return invalid("momentum must be finite, got " + std::to_string(p.momentum));
  }
  if (numel == 0) return Status::Ok();

  if (p.x == nullptr) return invalid("x is null");
  if (p.y == nullptr) return invalid("y is null");
  status = check_aligned({p.x, p.y}, p.dtype,
                         std::string("x and y must be aligned to the element size of ") + dtype_name(p.dtype));
  if (!status.ok()) return status;
  if (overlap_partly(p.x, p.y, static_cast<std::size_t>(numel) * dtype_size(p.dtype))) {
    return invalid("x and y overlap without being the same tensor (only exact in-place is allowed)");
  }
  status = check_aligned({p.weight, p.bias, p.running_mean, p.running_var}, p.param_dtype,
                         std::string("weight, bias and running stats must be aligned to ") + dtype_name(p.param_dtype));
  if (!status.ok()) return status;
  return check_aligned({p.mean, p.rstd}, stats_dtype(p.dtype),
                       std::string("mean and rstd outputs must be aligned to ") + dtype_name(stats_dtype(p.dtype)));
}

Status validate_backward(const BackwardParams& p) {
  Status status = validate_groups(p);
  if (!status.ok()) return status;
  int64_t numel = 0;
  status =
      validate_shape(p, p.weight || p.bias || p.running_mean || p.running_var || p.dweight || p.dbias, &numel);
  if (!status.ok()) return status;
  if (p.use_input_stats && (p.running_mean != nullptr)) {
    return invalid("with use_input_stats the backward uses the forward's mean and rstd; running stats must be null");
  }
  if (!p.use_input_stats && (p.mean != nullptr || p.rstd != nullptr)) {
    return invalid("without use_input_stats the backward uses the running stats; mean and rstd must be null");
  }
  if (numel == 0) return Status::Ok();

  if (p.x == nullptr) return invalid("x is null");
  if (p.dy == nullptr) return invalid("dy is null");
  if (p.use_input_stats && (p.mean == nullptr || p.rstd == nullptr)) {
    return invalid("with use_input_stats the backward needs the forward's mean and rstd");
  }
  status = check_aligned({p.x, p.dy, p.dx}, p.dtype,
                         std::string("x, dy and dx must be aligned to the element size of ") + dtype_name(p.dtype));
  if (!status.ok()) return status;
  const std::size_t bytes = static_cast<std::size_t>(numel) * dtype_size(p.dtype);
  if (p.dx != nullptr && (p.dx == p.x || overlap_partly(p.dx, p.x, bytes) || overlap_partly(p.dx, p.dy, bytes))) {
    return invalid("dx overlaps x or dy (only dx == dy, in place, is allowed)");
  }
  status = check_aligned({p.weight, p.bias, p.running_mean, p.running_var, p.dweight, p.dbias}, p.param_dtype,
                         std::string("weight, bias, running stats, dweight and dbias must be aligned to ") +
                             dtype_name(p.param_dtype));
  if (!status.ok()) return status;
  return check_aligned({p.mean, p.rstd}, stats_dtype(p.dtype),
                       std::string("mean and rstd must be aligned to ") + dtype_name(stats_dtype(p.dtype)));
}

namespace {

// The smallest instantiated group configuration that holds a slice of `slice_len` of `base`'s
// dtype and inputs within a lane's bounds (config.h group_config_fits), with `lanes` lanes a slice
// (0: the planner's: 32, for vectors 64 where 32 do not hold the slice, for slices under 32 scalars
// the fewest that cover them), or -1.
int choose_group_config(const Plan& base, int lanes) {
  const int64_t slice_len = base.slice_len;
  const int64_t vec = 16 / static_cast<int64_t>(dtype_size(base.dtype));
  const bool general = detail::runs_general_op(base);
  auto find = [&](int64_t group, int64_t items, bool vector) {
    for (int i = 0; i < detail::kNumGroupConfigs; ++i) {
      const detail::GroupConfig& config = kGroupConfigs[i];
      if (config.vector == vector && config.group == group && config.items == items &&
          detail::group_config_fits(config, static_cast<int>(dtype_size(base.dtype)),
                                    static_cast<int>(dtype_size(stats_dtype(base.dtype))), base.inputs, general)) {
        return i;
      }
    }
    return -1;
  };
  if (base.vector_io) {
    const int64_t first = lanes > 0 ? lanes : 32;
    const int64_t last = lanes > 0 ? lanes : 64;
    for (int64_t group = first; group <= last && slice_len >= group * vec; group *= 2) {
      const int config = find(group, next_pow2(ceil_div(slice_len, group * vec)), true);
      if (config >= 0) return config;
    }
  }
  if (lanes > 32) return -1;  // scalars: at most a warp
  const int64_t group = lanes > 0 ? lanes : slice_len <= 32 ? std::max<int64_t>(4, next_pow2(slice_len)) : 32;
  return find(group, next_pow2(ceil_div(slice_len, group)), false);
}

// GroupNorm's affine forward (a slice of several channels, each with its weight and bias) moves
// group_registers' channel window at nearly every item of a lane, each move a division and a
// weight and bias load in turn. With more than kGroupSeekingMaxItems items a lane, on fewer lanes
// than kGroupSeekingMinLanesPerSm an SM, that chain is the kernel's time and shared_resident (a
// CTA a slice, a channel at a time) ran ahead or level. Measured on the H200 at edbb41a
// (dev/VARIANTS.md 71; us, best of three rounds, shared_resident against group_registers):
// 2x512x16x16 float16 with SiLU 8.5 against 11.4, 8x512x16x16 9.6 against 11.3, 2x256x16x16
// float32 7.4 against 9.2, 8x640x8x8 float32 8.5 against 8.7; with more lanes group_registers led
// (32x512x16x16 13.0 against 17.4 at 3b0a636), and with at most four items a lane at every count
// measured (4096 slices of 1024 bfloat16 12.4 against 23.7).
constexpr int kGroupSeekingMaxItems = 4;
constexpr int64_t kGroupSeekingMinLanesPerSm = 256;
bool group_seeks_too_long(const Plan& base, int config, const DeviceLimits& limits) {
  const detail::GroupConfig& group = kGroupConfigs[config];
  return base.pass == Pass::kForward && base.channel_affine && base.slice_channels > 1 &&
         group.items > kGroupSeekingMaxItems &&
         base.num_slices * group.group < kGroupSeekingMinLanesPerSm * limits.sm_count;
}

Status plan_group(const Plan& base, int config, int forced_cta_threads, Plan* plan) {
  const int group = kGroupConfigs[config].group;
  if (forced_cta_threads != 0 && !detail::group_cta_fits(forced_cta_threads, group)) {
    return invalid("forced group_registers CTA threads must be a multiple of 32 and of the " + std::to_string(group) +
                   " lanes a slice, up to " + std::to_string(detail::kGroupCtaThreads) + ", got " +
                   std::to_string(forced_cta_threads));
  }
  *plan = base;
  plan->path = Path::kGroupRegisters;
  plan->group_size = group;
  plan->items_per_lane = kGroupConfigs[config].items;
  plan->vector_io = kGroupConfigs[config].vector;
  plan->threads = forced_cta_threads != 0 ? forced_cta_threads : detail::kGroupCtaThreads;
  plan->grid = ceil_div(plan->num_slices, plan->threads / plan->group_size);
  return Status::Ok();
}

// A group of one shares nothing. Otherwise the cluster exchange where two or more CTAs share an
// SM and the group fits a cluster, the L2 exchange at one CTA per SM and for wider groups.
// Measured on the H200 (bench/results/2026-11-30-h200-3810bf1/README.md): at 2-3 CTAs per SM
// clusters won (seed fp32 1.12x copy against 1.16x, 16x32x256x256 bf16 1.03-1.10x against
// 1.19-1.27x, 8x32x768x512 fp32 1.14-1.15x against 1.25-1.28x) even where their placement within
// GPCs leaves 15% of the slots idle; at one CTA per SM that placement idled up to half the SMs
// (8x16x1024x512 fp32: 70 CTAs, 1.91-1.96x against 1.50-1.56x). A one-CTA cluster ran 0.04-0.1x
// slower than a plain launch. A forced exchange is taken as it is.
Exchange exchange_for(Exchange forced, int64_t ctas_per_slice, int ctas_per_sm) {
  if (forced != Exchange::kAuto) return forced;
  if (ctas_per_slice == 1) return Exchange::kNone;
  return ctas_per_sm >= 2 && ctas_per_slice <= detail::kSharedMaxClusterCtas ? Exchange::kCluster
                                                                             : Exchange::kGlobal;
}

Status choose_exchange(Exchange forced, Plan* plan) {
  if (forced == Exchange::kNone && plan->ctas_per_slice > 1) {
    return invalid("exchange none needs one CTA per slice, the plan has " + std::to_string(plan->ctas_per_slice));
  }
  plan->exchange = exchange_for(forced, detail::shared_cluster_ctas(*plan), plan->ctas_per_sm);
  return Status::Ok();
}

// The clusters of kSharedPairClusterCtas at kSharedRegisterCtasPerSm CTAs an SM resident at once:
// the device's count where the limits know it, else the SM slots'.
int64_t resident_pairs(const DeviceLimits& limits) {
  constexpr int kPerSm = detail::kSharedRegisterCtasPerSm;
  constexpr int kPair = detail::kSharedPairClusterCtas;
  const int clusters = limits.resident_clusters[kPerSm][kPair];
  return clusters > 0 ? clusters : int64_t{limits.sm_count} * kPerSm / kPair;
}

// Searches (CTAs per SM, CTAs per slice) for the plan that has at least two CTAs per SM, then
// fits a cluster, then is the steady plan, then keeps the most CTA slots busy, then shares a slice
// among the fewest CTAs (a shorter exchange), then has more CTAs per SM. The steady plan, for grids
// that run at least kSharedSteadyMinRounds rounds of slices: the fewest CTAs per slice whose chunks
// hold at most kSharedSteadyChunkBytes, as many of them per SM as kSharedSteadyBytesPerSm allows;
// where that is more than kSharedRegisterMaxGroup CTAs, the narrowest group that holds the slice at
// two per SM with register parts (config.h kSharedRegister*; seed fp32 1.09x → 1.04x copy), except
// for the backward with an activation, and for the forward's general op (an activation, a channel
// affine across chunks) unless `in_place_of_split` (plan_slices: its plan without them would give
// way to split_pipelined) or a shape option is forced (config.h shared_register_part_max_group).
// Where steady chunks lie in channels that op is plain again (GroupNorm's affine, a chunk's
// channel's; 1 MiB slices of 64 KiB channels: float32 1.28x -> 1.16x, float16 2.6x -> 1.24x against
// a register group of eight whose chunks cross channels), and split_pipelined does not take them
// (1.28-1.33x).
// Measured on the H200 (bench/results/2026-11-30-h200-f6cbc97/planner.md): one CTA per SM ran
// 1.21-2.2x copy and never beat the best plan with two or more; the steady plan took the seed
// fp32 from 1.21x to 1.15x, seed bf16 from 1.29x to 1.18x, 8x64x384x384 fp32 from 2.2x to 1.15x
// and 32 KiB fp16 slices from 1.38x to 1.07x. An idle slot in the last round costs less than the
// busy-slot measure says: 1024 slices of 64 KiB ran 0.96-1.02x at three per SM, 1.05-1.14x at two.
// Groups wider than a cluster only where a cluster would leave one CTA per SM
// (bench/results/2026-11-30-h200-wide-groups/README.md): 8x16x1024x512 fp32 ran 1.28-1.31x with 32
// CTAs per slice at three per SM, 1.52-1.54x with 10 at one; but 8x32x768x512 fp32, which clusters
// of 16 hold at two per SM (1.13x), ran 1.39-1.41x with 32 at three.
// Rounds of clusters count the clusters the GPCs hold where the limits know them, as the launch
// will have them: 1x64x256x256 fp32 took two rounds with 62 clusters of 4 at two per SM, where the
// SM slots alone promised one round of 66.
// Whether any of shared_resident's shape options is forced (its group, CTAs an SM or their cap, the
// clusters a slice, the exchange): the planner's own rules on top of its search then stand aside.
bool shared_shape_forced(const PlanOptions& options) {
  return options.force_ctas_per_slice != 0 || options.force_slice_clusters != 0 || options.force_ctas_per_sm != 0 ||
         options.max_ctas_per_sm != 0 || options.force_exchange != Exchange::kAuto;
}

Status plan_shared(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan,
                   bool in_place_of_split = false) {
  // A slice over several clusters (forced only): each cluster's combined partial goes through L2,
  // into the spanning kernel's inbox (base has no chunks yet: GroupNorm's affine counts as the
  // general op's).
  const int slice_clusters = std::max(1, options.force_slice_clusters);
  const int max_slice_clusters = detail::shared_max_slice_clusters(detail::runs_runtime_epilogue(base));
  if (options.force_slice_clusters < 0 || options.force_slice_clusters > max_slice_clusters ||
      (slice_clusters > 1 && options.force_exchange != Exchange::kAuto &&
       options.force_exchange != Exchange::kCluster) ||
      options.force_ctas_per_slice % slice_clusters != 0) {
    return invalid("forced clusters a slice must be in 1.." + std::to_string(max_slice_clusters) +
                   ", with the cluster exchange and a whole number of CTAs each; got " +
                   std::to_string(options.force_slice_clusters) + " clusters, " +
                   std::to_string(options.force_ctas_per_slice) + " CTAs a slice, exchange " +
                   exchange_name(options.force_exchange));
  }
  // The kernel's inbox holds kSharedMaxCtasPerSlice chunk statistics, a cluster's
  // kSharedMaxClusterCtas.
  const bool clusters_only = options.force_exchange == Exchange::kCluster || slice_clusters > 1;
  const int max_group = detail::shared_max_group(clusters_only) * slice_clusters;
  if (options.force_ctas_per_slice < 0 || options.force_ctas_per_slice > max_group) {
    return invalid("forced CTAs per slice must be in 1.." + std::to_string(max_group) +
                   (clusters_only ? " for the cluster exchange" : "") + ", got " +
                   std::to_string(options.force_ctas_per_slice));
  }
  if (options.force_ctas_per_sm < 0 || options.force_ctas_per_sm > detail::kSharedMaxCtasPerSm) {
    return invalid("forced CTAs per SM must be in 1.." + std::to_string(detail::kSharedMaxCtasPerSm) +
                   ", got " + std::to_string(options.force_ctas_per_sm));
  }
  const int64_t elem = static_cast<int64_t>(dtype_size(base.dtype));
  // Bytes a slice holds on chip: of x, and for the backward of dy too.
  const int64_t slice_bytes = base.slice_len * elem * base.inputs;
  // Whether `ctas` CTAs with `smem` bytes of buffer each fit on an SM, beside their static shared
  // memory and the per-CTA reservation.
  auto fit_on_sm = [&](int64_t smem, int64_t ctas) { return ctas <= detail::ctas_fitting_on_sm(limits, smem); };
  // A group's chunks: the elements each CTA holds of each input, how many of them in registers,
  // and the buffer for the rest. A register part only where the buffer alone would not fit, at
  // kSharedRegisterCtasPerSm CTAs per SM, for clusters of at most shared_register_part_max_group, and
  // with 16-byte access (the part is loaded and stored in whole vectors): the narrow part, or the
  // wide one (the forward's plain op only) where the narrow one's buffer would not fit either.
  struct Chunks {
    int64_t len = 0;
    int64_t register_len = 0;
    int64_t smem = 0;
  };
  // (base has no chunks yet: GroupNorm's affine counts as the general op's, whatever chunks follow.)
  const bool general_op = detail::runs_general_op(base);
  const int register_max_group = detail::shared_register_part_max_group(
      base.inputs, static_cast<int>(elem), general_op, base.activation != Activation::kNone,
      detail::sums_channels_in_slices(base), in_place_of_split || shared_shape_forced(options));
  // (The general op's kernel holds the narrow part alone: kernels/shared_resident.cuh.)
  const bool takes_wide_registers = base.inputs == 1 && register_max_group > 0 && !general_op;
  std::vector<int64_t> register_lens;
  if (options.force_register_vecs != detail::kSharedWideRegisterVecs || !takes_wide_registers) {
    register_lens.push_back(detail::shared_register_len(base.dtype, base.inputs));
  }
  auto fits = [&](int64_t smem, int ctas_per_sm) {
    return smem + detail::kSharedStaticReserve <= limits.max_smem_per_block_optin && fit_on_sm(smem, ctas_per_sm);
  };
  // (`group` CTAs a slice in clusters of `cluster`.)
  auto chunks_for = [&](int64_t group, int ctas_per_sm, int64_t cluster) {
    Chunks chunks;
    chunks.len = chunk_len_for(base.slice_len, group, elem);
    chunks.smem = detail::shared_buffer_bytes(chunks.len * elem, base.inputs);
    if (fit_on_sm(chunks.smem, ctas_per_sm) || !base.vector_io || ctas_per_sm != detail::kSharedRegisterCtasPerSm ||
        cluster > register_max_group ||
        exchange_for(options.force_exchange, cluster, ctas_per_sm) != Exchange::kCluster) {
      return chunks;
    }
    for (const int64_t register_len : register_lens) {
      if (chunks.len <= register_len) break;  // the part would hold it all: the buffer alone does not fit
      chunks.register_len = register_len;
      chunks.smem = detail::shared_buffer_bytes((chunks.len - register_len) * elem, base.inputs);
      if (fits(chunks.smem, ctas_per_sm)) break;
    }
    return chunks;
  };
  // The wide part (unless forced either way) only for slices that no group of narrow parts holds,
  // so that every plan the narrow parts make stays as it was measured.
  if (takes_wide_registers &&
      (options.force_register_vecs == detail::kSharedWideRegisterVecs ||
       (options.force_register_vecs == 0 &&
        !fits(chunks_for(register_max_group * slice_clusters, detail::kSharedRegisterCtasPerSm, register_max_group).smem,
              detail::kSharedRegisterCtasPerSm)))) {
    register_lens.push_back(detail::shared_wide_register_len(base.dtype));
  }
  int64_t steady_group = ceil_div(slice_bytes, detail::kSharedSteadyChunkBytes);
  const int64_t steady_chunk_bytes = chunk_len_for(base.slice_len, steady_group, elem) * elem * base.inputs;
  int64_t steady_ctas_per_sm =
      std::clamp<int64_t>(detail::kSharedSteadyBytesPerSm / steady_chunk_bytes, 1, detail::kSharedMaxCtasPerSm);
  // An op without register parts (the backward with an activation, the forward's general op outside
  // `in_place_of_split`: config.h shared_register_part_max_group) keeps the steady plan; so do steady
  // chunks inside channels, which run GroupNorm's affine in the forward's plain op (plan_internal.h
  // takes_chunk_channel_affine).
  const bool steady_stays = register_max_group == 0;
  // Where that group is wider than kSharedRegisterMaxGroup: the narrowest group (up to
  // shared_register_max_group, or wider with register parts up to shared_register_part_max_group)
  // that holds the slice at kSharedRegisterCtasPerSm CTAs per SM, with register parts where it
  // needs them, if one does. Narrowest, not busiest: the backward's fp32 seed ran 5.204 ms with 15
  // CTAs a slice (210 busy) against 5.297 ms with 16 (224 busy) (dev/VARIANTS.md 36).
  if (steady_group > detail::kSharedRegisterMaxGroup && !steady_stays && slice_clusters == 1) {
    const int widest = std::max(register_max_group, detail::shared_register_max_group(base.inputs));
    for (int64_t group = 2; group <= widest; ++group) {
      const Chunks chunks = chunks_for(group, detail::kSharedRegisterCtasPerSm, group);
      const bool narrow = group <= detail::shared_register_max_group(base.inputs);
      if ((narrow || chunks.register_len > 0) && fits(chunks.smem, detail::kSharedRegisterCtasPerSm)) {
        steady_group = group;
        steady_ctas_per_sm = detail::kSharedRegisterCtasPerSm;
        break;
      }
    }
  }
  // GroupNorm's backward with per-channel sums, where the grid takes every slice at once (bound by
  // latency): chunks of whole channels (one block sum per channel of a chunk, none shared by two
  // CTAs) in CTAs of 256 threads. On 27 shapes of 0.5-8 MB the busy share of the slots had picked
  // chunks across channels or 512-thread CTAs, up to 1.6x as slow (dev/VARIANTS.md 70).
  const bool prefers_channel_chunks = detail::sums_channels_in_slices(base);
  const int64_t channel_len = detail::channel_len_of(base);
  // Above those, where the grid takes every slice in two rounds at most (one for slices shorter than
  // kSharedTwoRoundsMinSliceLen): chunks of whole channels in a cluster, of one channel where they
  // fit (the backward's chunk form, backward_op.cuh AffineBy::kChunk), even under
  // kSharedMinChannelChunkBytes, then in fewer rounds, then at the most CTAs an SM. On SD UNet-like
  // shapes the H100 ran 2x320x64x64 15.6 us in ten CTAs of one channel at six an SM against 21.5 in
  // five of two at three, 1x1280x16x16 16.3 in ten of four at six against 21.6, 8x128x64x64 19.6 in
  // two rounds of one channel against 22.6 in one of two; 8x320x32x32 23.5 in one round of five
  // channels against 33.6 in two of two (dev/VARIANTS.md 108).
  const int64_t max_busy_rounds = base.slice_len >= detail::kSharedTwoRoundsMinSliceLen ? 2 : 1;
  struct Score {
    int ctas_per_sm = 0;
    bool busy_channels = false;
    bool one_channel = false;
    int64_t rounds = 0;
    bool fits_cluster = false;
    bool channel_chunks = false;
    bool steady = false;
    int64_t util_percent = -1;
    int64_t ctas_per_slice = 0;
    bool better_than(const Score& o) const {
      if (std::min(ctas_per_sm, 2) != std::min(o.ctas_per_sm, 2)) return ctas_per_sm > o.ctas_per_sm;
      if (busy_channels != o.busy_channels) return busy_channels;
      if (busy_channels && one_channel != o.one_channel) return one_channel;
      if (busy_channels && rounds != o.rounds) return rounds < o.rounds;
      if (busy_channels && ctas_per_sm != o.ctas_per_sm) return ctas_per_sm > o.ctas_per_sm;
      if (fits_cluster != o.fits_cluster) return fits_cluster;
      if (channel_chunks != o.channel_chunks) return channel_chunks;
      if (steady != o.steady) return steady;
      if (util_percent != o.util_percent) return util_percent > o.util_percent;
      if (ctas_per_slice != o.ctas_per_slice) return ctas_per_slice < o.ctas_per_slice;
      return ctas_per_sm > o.ctas_per_sm;
    }
  };
  Score best;
  for (int ctas_per_sm = 1; ctas_per_sm <= detail::kSharedMaxCtasPerSm; ++ctas_per_sm) {
    if (options.max_ctas_per_sm != 0 && ctas_per_sm > options.max_ctas_per_sm) continue;
    if (options.force_ctas_per_sm != 0 && ctas_per_sm != options.force_ctas_per_sm) continue;
    const int64_t total = static_cast<int64_t>(limits.sm_count) * ctas_per_sm;
    int64_t lo = 1;
    // The widest group of chunks of about kSharedMinChunkBytes; chunks of whole channels (above)
    // may be narrower, of kSharedMinChannelChunkBytes at least.
    const int64_t widest = std::min<int64_t>({total, static_cast<int64_t>(max_group),
                                              std::max<int64_t>(1, ceil_div(slice_bytes, detail::kSharedMinChunkBytes))});
    const int64_t channel_hi = prefers_channel_chunks
                                   ? std::max(widest, std::min<int64_t>({total, static_cast<int64_t>(max_group),
                                                                         slice_bytes / detail::kSharedMinChannelChunkBytes}))
                                   : widest;
    // (Chunks of whole channels in two rounds may be narrower still.)
    int64_t hi = prefers_channel_chunks
                     ? std::max(channel_hi, std::min<int64_t>({total, static_cast<int64_t>(max_group), base.slice_channels}))
                     : widest;
    if (options.force_ctas_per_slice != 0) lo = hi = options.force_ctas_per_slice;
    for (int64_t group = lo; group <= hi; ++group) {
      // (A slice spanning clusters runs at two CTAs an SM only: shared_resident.cuh compiles no other.)
      if (group % slice_clusters != 0 ||
          (slice_clusters > 1 && ctas_per_sm != detail::kSharedRegisterCtasPerSm)) {
        continue;
      }
      // A group that is a cluster counts the clusters the GPCs hold, where the limits know them;
      // where a slice spans clusters, each takes a part of a slice (`units`) at a time.
      const int64_t cluster = group / slice_clusters;
      const Chunks chunks = chunks_for(group, ctas_per_sm, cluster);
      const Exchange exchange = exchange_for(options.force_exchange, cluster, ctas_per_sm);
      if (slice_clusters > 1 && exchange != Exchange::kCluster) continue;
      const int clusters =
          exchange == Exchange::kCluster ? limits.resident_clusters[ctas_per_sm][cluster] : 0;
      const int64_t units = base.num_slices * slice_clusters;
      const int64_t groups = std::min(clusters > 0 ? clusters : total / cluster, units);
      // Every cluster of a slice must be resident at once: each waits for the others' partials.
      if (!fits(chunks.smem, ctas_per_sm) || groups == 0 || groups < slice_clusters) continue;
      // Busy share of the CTA-rounds, the last, partial round of the persistent loop included.
      const int64_t rounds = ceil_div(units, groups);
      Score score;
      score.util_percent = base.num_slices * group * 100 / (rounds * total);
      score.steady = group == steady_group && ctas_per_sm == steady_ctas_per_sm &&
                     rounds >= detail::kSharedSteadyMinRounds;
      score.ctas_per_sm = ctas_per_sm;
      score.fits_cluster = cluster <= detail::kSharedMaxClusterCtas;
      const bool whole_channels = prefers_channel_chunks && chunks.len % channel_len == 0 && chunks.register_len == 0;
      score.channel_chunks = whole_channels && rounds == 1 &&
                             detail::shared_threads_for(ctas_per_sm) == detail::kSharedChannelChunkThreads;
      score.busy_channels = whole_channels && rounds <= max_busy_rounds && score.fits_cluster;
      score.one_channel = chunks.len == channel_len;
      score.rounds = rounds;
      score.ctas_per_slice = group;
      if (options.force_ctas_per_slice == 0 && !score.busy_channels &&
          (group > channel_hi || (group > widest && !score.channel_chunks))) {
        continue;
      }
      if (!score.better_than(best)) continue;
      best = score;
      *plan = base;
      plan->path = Path::kSharedResident;
      plan->ctas_per_slice = static_cast<int>(group);
      plan->slice_clusters = slice_clusters;
      plan->ctas_per_sm = ctas_per_sm;
      plan->chunk_len = chunks.len;
      plan->register_len = chunks.register_len;
      plan->threads = chunks.register_len > 0 ? detail::kSharedRegisterThreads : detail::shared_threads_for(ctas_per_sm);
      plan->smem_bytes = static_cast<int>(chunks.smem);
      plan->grid = groups * cluster;
    }
  }
  if (best.util_percent < 0) {
    return invalid("no shared_resident plan holds a slice of " + std::to_string(slice_bytes) +
                   " bytes with these options on this device");
  }
  // The plain float32 forward's register clusters wider than kSharedRegisterMaxGroup: the group,
  // rounded up to whole pairs, in clusters of kSharedPairClusterCtas (config.h), unless the plan's
  // shape is forced.
  if (!shared_shape_forced(options) && base.pass == Pass::kForward && base.dtype == DType::kFloat32 && plan->register_len > 0 &&
      plan->ctas_per_slice > detail::kSharedRegisterMaxGroup) {
    constexpr int kPair = detail::kSharedPairClusterCtas;
    const int64_t group = ceil_div(plan->ctas_per_slice, kPair) * kPair;
    const Chunks chunks = chunks_for(group, detail::kSharedRegisterCtasPerSm, kPair);
    const int64_t pairs = std::min<int64_t>(resident_pairs(limits), base.num_slices * (group / kPair));
    if (chunks.register_len > 0 && fits(chunks.smem, detail::kSharedRegisterCtasPerSm) && pairs >= group / kPair) {
      plan->ctas_per_slice = static_cast<int>(group);
      plan->slice_clusters = static_cast<int>(group / kPair);
      plan->chunk_len = chunks.len;
      plan->register_len = chunks.register_len;
      plan->smem_bytes = static_cast<int>(chunks.smem);
      plan->grid = pairs * kPair;
    }
  }
  // Where the buffers leave room for one more CTA on an SM, the buffer grows to the SM's share of
  // shared memory, so that no more CTAs fit than the plan has: the cluster launch packed some SMs
  // fuller than others (64x64x200x200 fp32, three 52 KiB chunks per SM: 1.20-1.21x with clusters,
  // 1.14x through L2).
  if (fit_on_sm(plan->smem_bytes, plan->ctas_per_sm + 1)) {
    plan->smem_bytes = static_cast<int>(detail::shared_sm_share(limits, plan->ctas_per_sm));
  }
  return choose_exchange(options.force_exchange, plan);
}

// One stage a part (of every input); a persistent grid of every CTA that fits (more would only wait
// for a slot).
Status plan_split_pipelined(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  *plan = base;
  const int64_t elem_size = static_cast<int64_t>(dtype_size(base.dtype));
  constexpr int kPartBytesStep = 4 * 1024;
  if (options.force_part_bytes != 0 && (options.force_part_bytes < kPartBytesStep ||
                                        options.force_part_bytes > detail::kSplitStageBytes ||
                                        options.force_part_bytes % kPartBytesStep != 0)) {
    return invalid("forced part bytes must be 0 (the planner's) or a multiple of " + std::to_string(kPartBytesStep) +
                   " up to " + std::to_string(detail::kSplitStageBytes) + ", got " +
                   std::to_string(options.force_part_bytes));
  }
  const int64_t stage_len =
      options.force_part_bytes != 0
          ? options.force_part_bytes / (elem_size * base.inputs)
          : static_cast<int64_t>(detail::split_stage_len(static_cast<std::size_t>(elem_size), base.inputs));
  plan->path = Path::kSplitPipelined;
  plan->chunk_len = chunk_len_for(base.slice_len, ceil_div(base.slice_len, stage_len), elem_size);
  const int64_t parts = ceil_div(base.slice_len, plan->chunk_len);
  // Items (two per part) are counted in 32 bits.
  if (!detail::pipelined_items_fit(base.num_slices, parts)) {
    return unsupported("split_pipelined counts its items (two a part) in 32 bits; this tensor has " +
                       std::to_string(base.num_slices) + " slices of " + std::to_string(parts) + " parts");
  }
  plan->parts_per_slice = static_cast<int>(parts);
  plan->threads = detail::kSplitThreads;
  plan->smem_bytes = static_cast<int>(detail::shared_buffer_bytes(plan->chunk_len * elem_size, base.inputs));
  const int64_t ctas_per_sm =
      std::clamp<int64_t>(detail::ctas_fitting_on_sm(limits, plan->smem_bytes), 1, detail::kSplitCtasPerSm);
  plan->grid = std::min(2 * base.num_slices * parts, ctas_per_sm * limits.sm_count);
  // Short slices: a short lead, whose parts read again L2 keeps between their reads, each slice's
  // second reads walking back (config.h).
  if (options.force_walk_back < -1 || options.force_walk_back > 1) {
    return invalid("forced walk back must be -1 (the planner's), 0 or 1, got " +
                   std::to_string(options.force_walk_back));
  }
  const int64_t input_bytes = base.slice_len * elem_size;
  plan->evict_first = input_bytes <= detail::kSplitShortLeadMaxInputBytes;
  plan->walk_back = options.force_walk_back >= 0 ? options.force_walk_back == 1 : plan->evict_first;
  const auto slack = static_cast<int64_t>(plan->grid * (plan->evict_first ? detail::kSplitShortLeadSlackPerCta
                                                                           : detail::kSplitPipelinedSlackPerCta));
  plan->pipeline_lead = std::min(base.num_slices * parts, parts + slack);
  // Resident parts wait for the rest of their slice; fewer of them than the grid's CTAs (and, with
  // nothing to write, none: a part is read twice only for its output).
  const int64_t most_resident = std::min(parts, plan->grid - 1);
  if (options.force_resident_parts < -1 || options.force_resident_parts > most_resident) {
    return invalid("forced resident parts must be -1 (the planner's) or 0 to the parts of a slice (" +
                   std::to_string(parts) +
                   ") and fewer than the grid's CTAs (" + std::to_string(plan->grid) + "), got " +
                   std::to_string(options.force_resident_parts));
  }
  const int64_t sms_per_resident_part =
      detail::runs_general_op(*plan) ? detail::kSplitSmsPerResidentPartGeneral : detail::kSplitSmsPerResidentPart;
  plan->resident_parts = static_cast<int>(
      options.force_resident_parts >= 0 ? options.force_resident_parts
      : base.writes_output ? std::min({parts / detail::kSplitResidentShareDivisor,
                                       limits.sm_count / sms_per_resident_part, most_resident})
                           : 0);
  return Status::Ok();
}

// Tiles of [tile_rows spatial positions x channel_block channels]: the channels split into equal
// blocks of at most kChannelsLastThreads (whole 16-byte vectors where the rows are aligned), as many
// rows a pass as the threads hold, and as many whole passes as kChannelsLastTileBytes of shared
// memory holds of every input (the kernels stage a tile there: both passes where a tile holds every
// channel, the reduction alone on channel blocks). The tiles of a channel (parts_per_slice of them)
// cover its S spatial positions; a GroupNorm slice is its channels' tiles together.
Status plan_channels_last(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  *plan = base;
  plan->path = Path::kChannelsLast;
  const auto elem = static_cast<int64_t>(dtype_size(base.dtype));
  // 16-byte accesses of whole runs of channels where every row of every tensor starts aligned
  // (signature_of: C * elem is a multiple of 16), so every block must be a multiple of a vector.
  const int64_t vector = detail::channels_last_unit_elems(base);
  const int64_t blocks = ceil_div(base.channels, detail::kChannelsLastThreads);
  int64_t channel_block = ceil_div(ceil_div(base.channels, blocks), vector) * vector;
  if (options.force_channel_block != 0) {
    if (options.force_channel_block < 1 || options.force_channel_block > detail::kChannelsLastThreads ||
        options.force_channel_block > base.channels || options.force_channel_block % vector != 0) {
      return invalid("forced channels_last channel block must be 1 to min(C, " +
                     std::to_string(detail::kChannelsLastThreads) + ") channels in whole " + std::to_string(vector) +
                     "-channel vectors, got " + std::to_string(options.force_channel_block));
    }
    channel_block = options.force_channel_block;
  }
  const int64_t rows_a_pass = detail::kChannelsLastThreads / channel_block;
  const int64_t row_bytes = channel_block * elem * base.inputs;
  const int64_t spatial = detail::channel_len_of(base);
  if (options.force_tile_rows < 0) {
    return invalid("forced channels_last tile rows must be 0 (the planner's) or more, got " +
                   std::to_string(options.force_tile_rows));
  }
  // The most whole passes whose inputs fit the tile's shared memory, at least one, and no more
  // than the slice needs; or the forced rows in whole passes.
  const int64_t fitting_passes = std::max<int64_t>(detail::kChannelsLastTileBytes / row_bytes / rows_a_pass, 1);
  int64_t tile_rows = options.force_tile_rows > 0 ? ceil_div(options.force_tile_rows, rows_a_pass) * rows_a_pass
                                                  : fitting_passes * rows_a_pass;
  tile_rows = std::min(tile_rows, ceil_div(spatial, rows_a_pass) * rows_a_pass);
  const int64_t tiles = ceil_div(spatial, tile_rows);
  const int64_t batch = detail::batch_of(base);
  // The finish kernel combines a slice's channels' tiles, counted in int.
  if (tiles * base.slice_channels > std::numeric_limits<int32_t>::max() ||
      batch * base.channels > std::numeric_limits<int64_t>::max() / tiles) {
    return unsupported("channels_last: " + std::to_string(tiles) + " tiles a channel, " +
                       std::to_string(base.slice_channels) + " channels a slice, are more than the plan counts");
  }
  plan->channel_block = static_cast<int>(channel_block);
  plan->threads = static_cast<int>(rows_a_pass * channel_block);
  plan->tile_rows = tile_rows;
  plan->parts_per_slice = static_cast<int>(tiles);
  if (detail::channels_last_smem_bytes(*plan) >
      limits.max_smem_per_block_optin - detail::channels_last_static_reserve(detail::kChannelsLastThreads)) {
    return invalid("forced channels_last tiles of " + std::to_string(tile_rows) + " rows of " +
                   std::to_string(channel_block) + " channels do not fit a CTA's shared memory");
  }
  plan->smem_bytes = static_cast<int>(detail::channels_last_smem_bytes(*plan));
  // The kernels stride over the (sample, channel block, tile) items: a grid of what fits at once,
  // a few times over, caps the launch for any tensor size.
  const int64_t items = detail::channels_last_tile_items(*plan);
  const int64_t ctas_per_sm = std::max<int64_t>(
      std::min<int64_t>(limits.max_threads_per_sm / plan->threads, detail::ctas_fitting_on_sm(limits, plan->smem_bytes)),
      1);
  plan->grid = std::min(items, 8 * static_cast<int64_t>(limits.sm_count) * ctas_per_sm);
  return Status::Ok();
}

// channels_last's resident form, both its tiles of whole rows and its channel blocks: rows of
// `width` channels a pass of kChannelsLastThreads a CTA, or of kChannelsLastResidentWideThreads
// where the CTA is alone on its SM (more rows a pass); and the dynamic shared memory of each of
// `ctas_per_sm` CTAs of `threads` threads, an equal share of the SM beside the driver's reservation
// and their static memory.
int64_t resident_rows_a_pass(int ctas_per_sm, int64_t width) {
  return (ctas_per_sm == 1 ? detail::kChannelsLastResidentWideThreads : detail::kChannelsLastThreads) / width;
}
int64_t resident_cta_share(const DeviceLimits& limits, int ctas_per_sm, int64_t threads) {
  return std::min<int64_t>(limits.smem_per_sm / ctas_per_sm - limits.reserved_smem_per_block,
                           limits.max_smem_per_block_optin) -
         detail::channels_last_static_reserve(static_cast<int>(threads));
}

// The resident form of a kChannelsLast plan (`tiles`), at `ctas_per_sm` CTAs an SM, where a
// sample's tiles of whole rows fit the chip at once, a tile a CTA: kChannelsLastThreads a CTA, or
// kChannelsLastResidentWideThreads where it is alone on its SM, whole rows a pass (C at most the
// threads: wider rows, one a pass with the channels in rounds of the threads, ran 1.3-1.8x slower
// than the three kernels, dev/VARIANTS.md 65); each CTA's buffer an equal share of its SM less the
// channels' coefficient cells, a region per input of whole passes of the threads. Where the whole
// batch fits at once (*one_round), each sample takes an equal part of the grid's slots (every SM
// works); else the fewest CTAs that hold it, as many groups as fit, one sample each at a time. The
// rows spread evenly over a sample's CTAs. False where a sample does not fit.
bool plan_channels_last_resident(const Plan& tiles, const DeviceLimits& limits, int ctas_per_sm, Plan* plan,
                                 bool* one_round) {
  const int64_t rows_a_pass = resident_rows_a_pass(ctas_per_sm, tiles.channels);
  const int64_t threads = rows_a_pass * tiles.channels;
  if (rows_a_pass < 1 || ctas_per_sm < 1 || ctas_per_sm > detail::kChannelsLastResidentCtasPerSm ||
      ctas_per_sm * threads > limits.max_threads_per_sm) {
    return false;
  }
  const auto row_bytes = tiles.channels * static_cast<int64_t>(dtype_size(tiles.dtype));
  const int64_t share = resident_cta_share(limits, ctas_per_sm, threads);
  const int64_t region = (share - tiles.channels * static_cast<int64_t>(detail::kSliceCoefficientBytes)) /
                         tiles.inputs / 128 * 128;
  const int64_t passes = (region - 16) / row_bytes / rows_a_pass;  // shared_region_bytes: 16 bytes of slack
  if (passes < 1) return false;
  const int64_t spatial = detail::channel_len_of(tiles);
  const int64_t most = static_cast<int64_t>(limits.sm_count) * ctas_per_sm;
  const int64_t fewest = ceil_div(spatial, passes * rows_a_pass);
  if (fewest > most) return false;
  const int64_t samples = detail::batch_of(tiles);
  *one_round = samples * fewest <= most;
  const int64_t spread = *one_round ? std::min(most / samples, ceil_div(spatial, rows_a_pass)) : fewest;
  const int64_t tile_rows = ceil_div(ceil_div(spatial, spread), rows_a_pass) * rows_a_pass;
  const int64_t group = ceil_div(spatial, tile_rows);
  *plan = tiles;
  plan->exchange = Exchange::kGlobal;
  plan->channel_block = static_cast<int>(tiles.channels);  // whole rows
  plan->threads = static_cast<int>(threads);
  plan->tile_rows = tile_rows;
  plan->parts_per_slice = static_cast<int>(group);
  plan->ctas_per_slice = static_cast<int>(group);
  plan->ctas_per_sm = ctas_per_sm;
  plan->grid = std::min(samples, most / group) * group;
  plan->smem_bytes = static_cast<int>(detail::channels_last_smem_bytes(*plan));
  return true;
}

// The resident form over channel blocks (`tiles`): a CTA holds every spatial row of a block of
// whole slices' channels (a multiple of C / groups and of a 16-byte vector: the rows move in
// 16-byte runs, so only where they are aligned), or a group of CTAs holds them, a tile of rows
// each, exchanging their partials through L2 as whole rows' groups do (every CTA of the grid
// resident at once); whole rows a pass of up to kChannelsLastThreads, or alone on its SM of up to
// kChannelsLastResidentWideThreads (the backward of 8x640x32x32 bfloat16 0.046 -> 0.036 ms,
// dev/VARIANTS.md 67), and up to kChannelsLastBlockCtasPerSm CTAs an SM (or exactly
// `forced_ctas_per_sm`), each an equal share of its SM less its channels' coefficient cells. The
// block and group: `forced_block` and `forced_group`, else the cheapest: the busiest SM's tiles
// (ceil(tiles / SMs)) x a tile's bytes, plus kChannelsLastBlockRoundBytes a round of its CTAs (wide
// blocks take fewer rounds; narrow ones spread over every SM and leave fewer items to a last round)
// and, for groups, kChannelsLastBlockExchangeBytes a round of the groups (the groups that fit the
// grid taking the items in turn); of equal costs the one with more CTAs an SM, then the narrower
// block, then the smaller group (dev/VARIANTS.md 67, 109). Groups of more than one CTA only up to
// kChannelsLastBlockMostGroup and where `row_groups` (else forced). Of a wider row, no block of less
// than `min_run_bytes` a row. False where no such block fits a CTA.
bool plan_channels_last_blocks(const Plan& tiles, const DeviceLimits& limits, int forced_block, int forced_ctas_per_sm,
                               Plan* plan, int64_t min_run_bytes = 0, int forced_group = 0, bool row_groups = false) {
  if (!tiles.vector_io) return false;
  const auto elem = static_cast<int64_t>(dtype_size(tiles.dtype));
  const int64_t unit = std::lcm(tiles.slice_channels, 16 / elem);
  const int64_t widest = std::min<int64_t>(tiles.channels, detail::kChannelsLastThreads);
  const int64_t spatial = detail::channel_len_of(tiles);
  const int64_t samples = detail::batch_of(tiles);
  const int64_t sms = limits.sm_count;
  const int most = forced_ctas_per_sm != 0 ? forced_ctas_per_sm : detail::kChannelsLastBlockCtasPerSm;
  const int fewest = forced_ctas_per_sm != 0 ? forced_ctas_per_sm : 1;
  const int smallest_group = forced_group != 0 ? forced_group : 1;
  const int largest_group = forced_group != 0 ? forced_group : row_groups ? detail::kChannelsLastBlockMostGroup : 1;
  bool found = false;
  int64_t best_cost = 0;
  for (int64_t block = unit; block <= widest; block += unit) {
    if (forced_block != 0 && block != forced_block) continue;
    if (block < tiles.channels && block * elem < min_run_bytes) continue;
    const int64_t items = samples * ceil_div(tiles.channels, block);
    for (int group = smallest_group; group <= largest_group; ++group) {
      const int64_t group_rows = ceil_div(spatial, static_cast<int64_t>(group));  // a CTA's share of the rows
      Plan candidate = tiles;
      candidate.exchange = Exchange::kGlobal;
      candidate.channel_block = static_cast<int>(block);
      candidate.parts_per_slice = group;
      candidate.ctas_per_slice = group;
      int ctas_per_sm = 0;
      int64_t smem = 0;
      for (int k = std::min(most, detail::kChannelsLastBlockCtasPerSm); k >= fewest && ctas_per_sm == 0; --k) {
        const int64_t rows_a_pass = resident_rows_a_pass(k, block);
        candidate.threads = static_cast<int>(rows_a_pass * block);
        candidate.tile_rows = ceil_div(group_rows, rows_a_pass) * rows_a_pass;
        smem = detail::channels_last_smem_bytes(candidate);
        // Every CTA of a group holds a tile (none empty), and a group fits the grid at once.
        if (smem <= resident_cta_share(limits, k, candidate.threads) &&
            k * candidate.threads <= limits.max_threads_per_sm && (group - 1) * candidate.tile_rows < spatial &&
            group <= sms * k) {
          ctas_per_sm = k;
        }
      }
      if (ctas_per_sm == 0) continue;
      const int64_t groups_at_once = sms * ctas_per_sm / group;
      const int64_t sm_tiles = ceil_div(items * group, sms);
      const int64_t tile_bytes = group_rows * block * elem * tiles.inputs;
      const int64_t cost = sm_tiles * tile_bytes +
                           ceil_div(sm_tiles, static_cast<int64_t>(ctas_per_sm)) * detail::kChannelsLastBlockRoundBytes +
                           (group > 1 ? ceil_div(items, groups_at_once) * detail::kChannelsLastBlockExchangeBytes : 0);
      candidate.ctas_per_sm = ctas_per_sm;
      candidate.grid = std::min(items, groups_at_once) * group;
      candidate.smem_bytes = static_cast<int>(smem);
      if (!found || cost < best_cost || (cost == best_cost && ctas_per_sm > plan->ctas_per_sm)) {
        *plan = candidate;
        best_cost = cost;
      }
      found = true;
    }
  }
  return found;
}

Status plan_channels_last_stream(const DeviceLimits& limits, const PlanOptions& options, Plan* plan);

// A kChannelsLast plan: the resident form of whole rows at one CTA an SM where the whole batch fits
// the chip at once, InstanceNorm or GroupNorm (a group's channels combined in the CTA before the
// group's exchange: 12-15% faster than the three kernels on 8x256x32x32 and 2x320x64x64,
// dev/VARIANTS.md 65), or where a CTA holds a whole sample (no exchange, whatever the rounds: the
// forward 13-17% faster than channel blocks on 140x512x4x4 and 256x512x8x8, 67); else its channel
// blocks where a CTA (or, where the stream does not apply, a group of CTAs: 109) holds every row of
// whole slices; else the three kernels over tiles (55: where
// samples of several CTAs took rounds the resident form of whole rows ran no faster than the three
// kernels, or slower); and not blocks of less than kChannelsLastBlockMinRunBesideStreamBytes of a
// wider row where the three kernels' streamed kernel applies (100). options.force_exchange kGlobal
// asks for the resident form (whole rows at the most CTAs an SM that hold a sample, or
// force_ctas_per_sm, else channel blocks; force_channel_block: blocks of that many channels), kNone
// for the three kernels; forced tiles without kGlobal are the three kernels'.
Status plan_channels_last_form(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  if (options.force_exchange != Exchange::kAuto && options.force_exchange != Exchange::kNone &&
      options.force_exchange != Exchange::kGlobal) {
    return invalid(std::string("channels_last runs exchange global (resident), none (three kernels) or cluster "
                               "(its cluster form), not ") +
                   exchange_name(options.force_exchange));
  }
  if (options.force_ctas_per_sm != 0 &&
      (options.force_ctas_per_sm < 1 || options.force_ctas_per_sm > detail::kChannelsLastResidentCtasPerSm ||
       options.force_exchange == Exchange::kNone)) {
    return invalid("channels_last's resident form runs 1 to " +
                   std::to_string(detail::kChannelsLastResidentCtasPerSm) + " CTAs an SM (its three kernels take no " +
                   "CTAs an SM); forced " + std::to_string(options.force_ctas_per_sm));
  }
  // A group of CTAs an item (force_ctas_per_slice) is channel blocks' (whole rows choose their own).
  if (options.force_ctas_per_slice < 0 || options.force_ctas_per_slice > detail::kChannelsLastBlockMaxGroup ||
      (options.force_ctas_per_slice != 0 && options.force_exchange == Exchange::kNone)) {
    return invalid("forced channels_last CTAs a channel block must be 1 to " +
                   std::to_string(detail::kChannelsLastBlockMaxGroup) + ", in its resident form; got " +
                   std::to_string(options.force_ctas_per_slice));
  }
  const bool forced_resident = options.force_exchange == Exchange::kGlobal || options.force_ctas_per_sm != 0 ||
                               options.force_ctas_per_slice != 0;
  if (forced_resident && options.force_tile_rows != 0) {
    return invalid("forced channels_last tile rows are the three kernels'; the resident form sizes its own");
  }
  const bool forced_block = options.force_channel_block != 0 && options.force_channel_block != base.channels;
  if (forced_resident && forced_block && options.force_channel_block % base.slice_channels != 0) {
    return invalid("forced channels_last resident channel blocks hold whole slices: a multiple of " +
                   std::to_string(base.slice_channels) + " channels, got " +
                   std::to_string(options.force_channel_block));
  }
  Plan tiles;
  const Status status = plan_channels_last(base, limits, options, &tiles);
  if (!status.ok()) return status;
  *plan = tiles;
  const bool forced_tiles = options.force_channel_block != 0 || options.force_tile_rows != 0;
  if (options.force_exchange == Exchange::kNone || (forced_tiles && !forced_resident)) return Status::Ok();
  bool one_round = false;
  if (!forced_resident) {
    Plan resident;
    Plan streamed = tiles;
    const bool stream_applies =
        plan_channels_last_stream(limits, options, &streamed).ok() && detail::channels_last_stream_applies(streamed);
    const bool whole_rows = plan_channels_last_resident(tiles, limits, 1, &resident, &one_round);
    if ((whole_rows && (one_round || !detail::channels_last_exchanges(resident))) ||
        plan_channels_last_blocks(tiles, limits, 0, 0, &resident,
                                  stream_applies ? detail::kChannelsLastBlockMinRunBesideStreamBytes : 0, 0,
                                  /*row_groups=*/!stream_applies)) {
      *plan = resident;
    }
    return Status::Ok();
  }
  if (!forced_block && options.force_ctas_per_slice == 0) {
    const int most =
        options.force_ctas_per_sm != 0 ? options.force_ctas_per_sm : detail::kChannelsLastResidentCtasPerSm;
    const int fewest = options.force_ctas_per_sm != 0 ? options.force_ctas_per_sm : 1;
    for (int ctas_per_sm = most; ctas_per_sm >= fewest; --ctas_per_sm) {
      if (plan_channels_last_resident(tiles, limits, ctas_per_sm, plan, &one_round)) return Status::Ok();
    }
  }
  if (plan_channels_last_blocks(tiles, limits, options.force_channel_block, options.force_ctas_per_sm, plan, 0,
                                options.force_ctas_per_slice)) {
    return Status::Ok();
  }
  return unsupported("channels_last: a sample of " + std::to_string(detail::channel_len_of(base)) + " rows of " +
                     std::to_string(base.channels) + " channels does not fit the resident form" +
                     (options.force_ctas_per_sm != 0 ? " at " + std::to_string(options.force_ctas_per_sm) + " CTAs an SM"
                                                     : std::string()) +
                     " (nor do channel blocks of whole slices" +
                     (forced_block ? " of " + std::to_string(options.force_channel_block) + " channels" : std::string()) +
                     (options.force_ctas_per_slice != 0
                          ? " over " + std::to_string(options.force_ctas_per_slice) + " CTAs each"
                          : std::string()) +
                     ", whose rows move in 16-byte runs)");
}

// The three kernels' reduction streamed (Plan::stream_parts) wherever it can stream
// (plan_internal.h channels_last_can_stream) and x holds kChannelsLastStreamMinBytes or more, in the
// parts a sample that cost the least: each round of the grid (CTAs of its ring that fit an SM, on
// every SM) costs a part's bytes and kChannelsLastStreamPartCostBytes, the fewest parts among
// equals. options.force_stream_parts: 0 the tiles' reduction, > 0 that many parts, whatever x's size.
// The kernel also applies (Plan::stream_applies) where every part fits one round of CTAs each holding
// a ring's stages of it (plan_internal.h channels_last_stream_apply_min_rows), in the most parts
// that do whose CTAs each combine at most kChannelsLastStreamApplyMaxPartials (or, where those
// leave half the SMs idle, a CTA an SM), where the inputs hold kChannelsLastStreamApplyMinBytes to
// kChannelsLastStreamApplyMaxBytes (the backward's x and dy: kChannelsLastStreamApplyMaxBackwardBytes)
// and the parts take kChannelsLastStreamApplyMinCtas or more; options.force_stream_applies: 1
// wherever it can (an error where not), 0 never.
Status plan_channels_last_stream(const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  const int64_t forced = options.force_stream_parts;
  const int forced_applies = options.force_stream_applies;
  if (forced < -1) {
    return invalid("forced channels_last stream parts must be -1 (the planner's), 0 (tiles) or more, got " +
                   std::to_string(forced));
  }
  if (forced_applies < -1 || forced_applies > 1 || (forced_applies == 1 && forced == 0)) {
    return invalid("forced channels_last stream applies must be -1 (the planner's), 0 or 1 (with a streamed "
                   "reduction), got " + std::to_string(forced_applies) + " with stream parts " +
                   std::to_string(forced));
  }
  plan->stream_parts = 0;
  plan->stream_grid = 0;
  plan->stream_applies = false;
  if (forced == 0) return Status::Ok();
  const auto capacity_of = [&](bool applies) {  // CTAs of the kernel resident at once
    const int64_t smem = detail::channels_last_stream_smem_bytes(*plan, applies);
    return std::min<int64_t>({detail::ctas_fitting_on_sm(limits, smem),
                              limits.max_threads_per_sm / detail::kChannelsLastStreamThreads,
                              detail::kChannelsLastStreamCtasPerSm}) *
           limits.sm_count;
  };
  const int64_t capacity = capacity_of(false);
  if (!detail::channels_last_can_stream(*plan) || capacity < 1) {
    if (forced < 0 && forced_applies < 1) return Status::Ok();
    return invalid("forced channels_last stream parts need the three kernels without an activation or channel "
                   "affine, float32, float16 or bfloat16, and C = 4, 8, ... 128 channels whose rows are aligned to "
                   "16 bytes: " + plan->describe());
  }
  const int64_t batch = detail::batch_of(*plan);
  const int64_t rows = detail::channel_len_of(*plan);
  const int64_t x_bytes = detail::input_bytes_of(*plan);
  const int64_t sample_bytes = x_bytes / batch;
  if (forced > 0 && (forced > rows || forced * plan->slice_channels > std::numeric_limits<int32_t>::max())) {
    return invalid("forced channels_last stream parts must be 1 to the " + std::to_string(rows) +
                   " rows of a sample, got " + std::to_string(forced));
  }
  // The applying kernel's parts: the forced ones, else the most of one round whose CTAs each combine
  // at most kChannelsLastStreamApplyMaxPartials (C <= 128: 16 parts or more), or where those would
  // leave half the SMs or more without a CTA, a CTA an SM (the combine's latency costs less than
  // the idle SMs: dev/VARIANTS.md 95).
  int64_t combined_parts = detail::kChannelsLastStreamApplyMaxPartials / plan->channels;
  if (2 * batch * combined_parts <= limits.sm_count) combined_parts = limits.sm_count / batch;
  const int64_t apply_capacity = capacity_of(true);
  const int64_t apply_parts =
      forced > 0 ? forced
                 : std::min({apply_capacity / batch, rows / detail::channels_last_stream_apply_min_rows(*plan),
                             detail::kChannelsLastStreamMaxParts, combined_parts});
  const bool can_apply = apply_parts >= 1 && batch * apply_parts <= apply_capacity &&
                         rows / apply_parts >= detail::channels_last_stream_apply_min_rows(*plan);
  if (forced_applies == 1 && !can_apply) {
    return invalid("forced channels_last stream applies need every part of a sample in one round of " +
                   std::to_string(apply_capacity) + " CTAs, each part at least " +
                   std::to_string(detail::channels_last_stream_apply_min_rows(*plan)) + " rows: " + plan->describe() +
                   (forced > 0 ? " in " + std::to_string(forced) + " parts" : std::string()));
  }
  const int64_t inputs_bytes = x_bytes * plan->inputs;
  const int64_t apply_max_bytes = plan->pass == Pass::kForward ? detail::kChannelsLastStreamApplyMaxBytes
                                                               : detail::kChannelsLastStreamApplyMaxBackwardBytes;
  const bool applies_by_rule = inputs_bytes >= detail::kChannelsLastStreamApplyMinBytes &&
                              inputs_bytes <= apply_max_bytes &&
                              apply_parts <= combined_parts &&
                              batch * apply_parts >= detail::kChannelsLastStreamApplyMinCtas;
  if (can_apply && (forced_applies == 1 || (forced_applies < 0 && applies_by_rule))) {
    plan->stream_parts = apply_parts;
    plan->stream_grid = batch * apply_parts;
    plan->stream_applies = true;
    return Status::Ok();
  }
  if (forced < 0 && x_bytes < detail::kChannelsLastStreamMinBytes) return Status::Ok();
  int64_t parts = forced;
  if (forced < 0) {
    int64_t best_cost = std::numeric_limits<int64_t>::max();
    for (int64_t p = 1; p <= std::min(detail::kChannelsLastStreamMaxParts, rows); ++p) {
      const int64_t cost =
          ceil_div(batch * p, capacity) * (ceil_div(sample_bytes, p) + detail::kChannelsLastStreamPartCostBytes);
      if (cost < best_cost) {
        best_cost = cost;
        parts = p;
      }
    }
  }
  plan->stream_parts = parts;
  plan->stream_grid = std::min(batch * parts, capacity);
  // The elementwise kernel alone then takes the tiles: a CTA each, a one-shot grid (up to
  // gridDim.x's reach), ran the seeds' pass faster than the persistent grid (dev/VARIANTS.md 124).
  plan->grid = std::min<int64_t>(detail::channels_last_tile_items(*plan), std::numeric_limits<int32_t>::max());
  return Status::Ok();
}

// channels_last's cluster form (plan_internal.h channels_last_clusters) where its kernel runs the
// problem (channels_last_cluster_runs), in the pass's shape (config.h channels_last_cluster_shape): a
// CTA holds rows in its share of the SM's shared memory beside its static cells and its warps' sums,
// and the forward's register_runs rows a thread past them. The fewest CTAs a sample whose rows fit
// (those in shared memory at most the shape's tile_bytes), or force_ctas_per_slice of them, at most
// kChannelsLastClusterMaxCtas, a cluster each, as many clusters as are resident at once (the limits'
// clusters of that size at the shape's CTAs an SM, where known, else the SMs' share) and samples
// take. `by_rule`: only where config.h's rule takes it (samples of
// kChannelsLastClusterMinSampleBytes or more filling the shape's min_rounds rounds, elements of its
// min_element_bytes or more).
Status plan_channels_last_clusters(const Plan& base, const DeviceLimits& limits, int forced_group, bool by_rule,
                                   Plan* plan) {
  Plan clusters = base;
  clusters.path = Path::kChannelsLast;
  clusters.exchange = Exchange::kCluster;
  if (!detail::channels_last_cluster_runs(clusters)) {
    return unsupported("channels_last's cluster form runs InstanceNorm without an activation, in float32, float16 or "
                       "bfloat16, C a power of two up to " +
                       std::to_string(detail::kChannelsLastClusterMaxChannels) +
                       " of whole 16-byte runs a row, every tensor aligned to 16 bytes: " + base.describe());
  }
  const detail::ChannelsLastClusterShape shape = detail::channels_last_cluster_shape_of(clusters);
  const int64_t rows = detail::channel_len_of(base);
  const int64_t row_bytes = base.channels * static_cast<int64_t>(dtype_size(base.dtype));
  const int64_t sample_bytes = rows * row_bytes;
  // Rows a CTA holds in shared memory (`fit`; `preferred`: at most tile_bytes) and in registers.
  clusters.channel_block = static_cast<int>(base.channels);
  clusters.tile_rows = 0;
  clusters.register_len = 0;
  const int64_t warp_sums = detail::channels_last_smem_bytes(clusters);
  const int64_t share = std::min<int64_t>(limits.smem_per_sm / shape.ctas_per_sm - limits.reserved_smem_per_block,
                                          limits.max_smem_per_block_optin) -
                        shape.static_bytes - warp_sums;
  const int64_t fit = std::max<int64_t>(share, 0) / row_bytes;
  const int64_t preferred = std::min(share, shape.tile_bytes) / row_bytes;
  const int64_t register_rows = detail::channels_last_cluster_register_rows(clusters);
  const int64_t group =
      forced_group != 0 ? forced_group : ceil_div(rows, std::max<int64_t>(preferred + register_rows, 1));
  const int64_t tile_rows = group >= 1 ? ceil_div(rows, group) : 0;
  clusters.tile_rows = tile_rows;
  clusters.register_len = std::max<int64_t>(tile_rows - fit, 0);
  if (group < 1 || group > detail::kChannelsLastClusterMaxCtas || (group - 1) * tile_rows >= rows ||
      clusters.register_len > register_rows || clusters.register_len >= tile_rows) {
    return unsupported("channels_last's cluster form holds a sample of " + std::to_string(rows) + " rows of " +
                       std::to_string(row_bytes) + " bytes in 1 to " +
                       std::to_string(detail::kChannelsLastClusterMaxCtas) + " CTAs, each with " +
                       std::to_string(fit) + " rows in shared memory at most and " + std::to_string(register_rows) +
                       " in registers, and at least one row: not in " + std::to_string(group));
  }
  const int64_t batch = detail::batch_of(base);
  const int known = group > 1 ? limits.resident_clusters[shape.ctas_per_sm][group] : 0;
  const int64_t resident = known > 0 ? known : std::max<int64_t>(limits.sm_count * shape.ctas_per_sm / group, 1);
  if (by_rule && (sample_bytes < detail::kChannelsLastClusterMinSampleBytes || batch < shape.min_rounds * resident ||
                  static_cast<int>(dtype_size(base.dtype)) < shape.min_element_bytes)) {
    return unsupported("channels_last's cluster form is not the planner's for " + base.describe());
  }
  clusters.parts_per_slice = static_cast<int>(group);
  clusters.ctas_per_slice = static_cast<int>(group);
  clusters.ctas_per_sm = shape.ctas_per_sm;
  clusters.threads = shape.threads;
  clusters.grid = std::min(batch, resident) * group;
  clusters.smem_bytes = static_cast<int>(detail::channels_last_smem_bytes(clusters));
  *plan = clusters;
  return Status::Ok();
}

Status plan_channels_last_path(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  if (options.force_exchange == Exchange::kCluster) {
    const int ctas_per_sm = detail::channels_last_cluster_shape_of(base).ctas_per_sm;
    if ((options.force_ctas_per_sm != 0 && options.force_ctas_per_sm != ctas_per_sm) ||
        (options.force_channel_block != 0 && options.force_channel_block != base.channels) ||
        options.force_tile_rows != 0 || options.force_stream_parts > 0 || options.force_stream_applies == 1 ||
        options.force_ctas_per_slice < 0 || options.force_ctas_per_slice > detail::kChannelsLastClusterMaxCtas) {
      return invalid("channels_last's cluster form takes forced CTAs a sample (force_ctas_per_slice, 1 to " +
                     std::to_string(detail::kChannelsLastClusterMaxCtas) +
                     ") at its pass's CTAs an SM (" + std::to_string(ctas_per_sm) +
                     " here), whole rows, no tiles and no stream");
    }
    return plan_channels_last_clusters(base, limits, options.force_ctas_per_slice, /*by_rule=*/false, plan);
  }
  const bool forced_form = options.force_exchange != Exchange::kAuto || options.force_ctas_per_sm != 0 ||
                           options.force_ctas_per_slice != 0 || options.force_channel_block != 0 ||
                           options.force_tile_rows != 0 || options.force_stream_parts >= 0 ||
                           options.force_stream_applies >= 0;
  if (!forced_form && plan_channels_last_clusters(base, limits, 0, /*by_rule=*/true, plan).ok()) return Status::Ok();
  const Status status = plan_channels_last_form(base, limits, options, plan);
  if (!status.ok()) return status;
  const Status streamed = plan_channels_last_stream(limits, options, plan);
  if (!streamed.ok()) return streamed;
  // (The elementwise kernel's hints: none where the streamed kernel applies. Its own hints, where a
  // caller sets Plan::evict_first, ran 1-6% faster one call at a time up to 128 MiB of inputs, but
  // showed no gain in python -m inorm.bench's calls back to back, across runs: not the planner's
  // until an A/B back to back says, dev/VARIANTS.md 97.)
  plan->evict_first = plan->pass == Pass::kBackward && !detail::channels_last_resident(*plan) &&
                      !plan->stream_applies &&
                      detail::input_bytes_of(*plan) * plan->inputs <= detail::kChannelsLastEvictFirstMaxBytes;
  return Status::Ok();
}

// Whether the planner's own shared_resident forward plan gives way to split_pipelined (config.h
// kForwardSplitMinGroup): not where the path or any of shared_resident's options is forced.
bool splits_wide_forward(const Plan& shared, const PlanOptions& options) {
  const bool shared_forced = options.force_path != Path::kAuto || shared_shape_forced(options);
  const bool plain_by_channel = shared.channel_affine && !detail::runs_general_op(shared) &&
                                shared.ctas_per_slice <= detail::kSharedMaxClusterCtas;
  return shared.pass == Pass::kForward && !shared_forced && shared.register_len == 0 && !plain_by_channel &&
         shared.ctas_per_slice >= detail::kForwardSplitMinGroup;
}

// Where the forward's general op (an activation, a channel affine across chunks) would give way to
// split_pipelined, its plan with register parts instead, if one holds the slice (config.h
// shared_register_part_max_group: in place of split_pipelined they won or tied; in place of the
// steady plan they lost). Returns whether *plan was replaced.
bool plan_general_registers(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  if (!detail::runs_general_op(base)) return false;
  Plan registers;
  if (!plan_shared(base, limits, options, &registers, /*in_place_of_split=*/true).ok() || registers.register_len == 0) {
    return false;
  }
  *plan = registers;
  return true;
}

// Where the planner's own *plan holds no slice in one cluster (split_pipelined, or a group through
// L2), replaces it with one whose slices span clusters of kSharedPairClusterCtas: the narrowest
// group of whole pairs, at most config.h kSharedPairSpanMaxClusters* of them, that holds a slice at
// kSharedRegisterCtasPerSm CTAs an SM with register parts, where the slices fill config.h
// kSharedPairSpanMinRounds* rounds of the resident pairs (the forward's general op with register
// parts, as in place of split_pipelined). Not where any option is forced, nor for ops without
// register parts (the backward with an activation).
void plan_spanning_pairs(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  const bool forced = options.force_path != Path::kAuto || shared_shape_forced(options) ||
                      options.force_resident_parts >= 0 || options.force_part_bytes != 0 ||
                      options.force_walk_back >= 0 || options.force_register_vecs != 0;
  const bool one_cluster = plan->path == Path::kSharedResident && plan->exchange != Exchange::kGlobal;
  if (forced || one_cluster) return;
  constexpr int kPair = detail::kSharedPairClusterCtas;
  const int64_t pairs_a_round = resident_pairs(limits);
  const int min_rounds = base.pass == Pass::kForward ? detail::kSharedPairSpanMinRoundsForward
                                                     : detail::kSharedPairSpanMinRoundsBackward;
  const int max_clusters = base.pass == Pass::kBackward      ? detail::kSharedPairSpanMaxClustersBackward
                           : detail::runs_general_op(base) ? detail::kSharedPairSpanMaxClustersGeneralForward
                                                           : detail::kSharedPairSpanMaxClustersForward;
  for (int clusters = 2; clusters <= max_clusters; ++clusters) {
    PlanOptions pairs;
    pairs.force_ctas_per_slice = clusters * kPair;
    pairs.force_slice_clusters = clusters;
    pairs.force_ctas_per_sm = detail::kSharedRegisterCtasPerSm;
    Plan spanning;
    if (!plan_shared(base, limits, pairs, &spanning).ok()) continue;
    // The narrowest group that holds the slice (the forward's general op takes register parts in
    // forced shapes); without register parts (the backward with an activation, or no 16-byte
    // access) it is not measured this way.
    if (spanning.register_len > 0 && base.num_slices >= min_rounds * (pairs_a_round / clusters)) *plan = spanning;
    return;
  }
}

}  // namespace

namespace detail {

Status plan_slices(const Plan& base, const DeviceLimits& limits, const PlanOptions& options, Plan* plan) {
  if (plan == nullptr) return invalid("plan is null");
  if (limits.sm_count <= 0 || limits.max_smem_per_block_optin <= 0) {
    return invalid("device limits are not filled in");
  }
  if (options.force_register_vecs != 0 && options.force_register_vecs != kSharedRegisterVecs &&
      options.force_register_vecs != kSharedWideRegisterVecs) {
    return invalid("forced register vectors must be 0 (the planner's), " + std::to_string(kSharedRegisterVecs) +
                   " or " + std::to_string(kSharedWideRegisterVecs) + ", got " +
                   std::to_string(options.force_register_vecs));
  }
  const int64_t numel = base.num_slices * base.slice_len;
  if (reduces_channels(base) && base.channels > std::numeric_limits<int32_t>::max()) {
    return unsupported("the running-stat update and the weight gradients support at most 2^31 - 1 channels");
  }
  Path path = options.force_path;
  if (numel == 0 || (!base.writes_output && !base.weight_grads)) {
    if (path != Path::kAuto && path != Path::kEmpty) {
      return invalid(std::string("forced path ") + path_name(path) + " for a pass with nothing to compute");
    }
    *plan = base;
    plan->path = Path::kEmpty;
    return Status::Ok();
  }
  // The forward with running stats is elementwise (in either layout); the backward's weight
  // gradients are reductions even then, so it runs on the slice engine in either mode.
  if (base.pass == Pass::kForward && !base.use_input_stats) {
    if (path != Path::kAuto && path != Path::kElementwiseEval) {
      return invalid(std::string("forced path ") + path_name(path) +
                     " needs use_input_stats; evaluation with running stats is elementwise");
    }
    *plan = base;
    plan->path = Path::kElementwiseEval;
    plan->threads = kEvalThreads;
    // Four full waves of the grid-stride loop at most.
    plan->grid = std::min<int64_t>(ceil_div(numel, kEvalThreads),
                                   static_cast<int64_t>(limits.sm_count) * limits.max_threads_per_sm /
                                       kEvalThreads * 4);
    plan->workspace_bytes = workspace_layout(*plan).total;
    return Status::Ok();
  }

  if (base.layout == Layout::kChannelsLast) {
    if (path != Path::kAuto && path != Path::kChannelsLast) {
      return invalid(std::string("forced path ") + path_name(path) + " reads slices contiguous in memory; "
                     "channels_last input runs channels_last");
    }
    const Status status = plan_channels_last_path(base, limits, options, plan);
    if (!status.ok()) return status;
    plan->stagger_cycles = stagger_cycles_of(*plan);
    plan->workspace_bytes = workspace_layout(*plan).total;
    return Status::Ok();
  }
  if (path == Path::kChannelsLast) return invalid("forced path channels_last needs channels_last input");
  if (options.force_group_lanes != 0 &&
      (options.force_group_lanes < 4 || options.force_group_lanes > 64 ||
       (options.force_group_lanes & (options.force_group_lanes - 1)) != 0)) {
    return invalid("forced group lanes must be 4, 8, 16, 32 or 64, got " + std::to_string(options.force_group_lanes));
  }
  const int group_config = choose_group_config(base, options.force_group_lanes);
  const bool fits_shared = base.slice_len <= largest_resident_slice(base.dtype, base.inputs, limits);
  // Every slice too large for the chip, one or many, of any length, goes to split_pipelined: it beat
  // or tied the two-kernel split_slice (now in dev/VARIANTS.md 32-33) on every shape measured.
  if (path == Path::kAuto) {
    const bool group_fits = group_config >= 0 && !(fits_shared && group_seeks_too_long(base, group_config, limits));
    path = group_fits    ? Path::kGroupRegisters
           : fits_shared ? Path::kSharedResident
                         : Path::kSplitPipelined;
  }
  Status status;
  switch (path) {
    case Path::kGroupRegisters:
      if (group_config < 0) {
        return invalid("no group_registers configuration holds a slice of " + std::to_string(base.slice_len) +
                       " elements" +
                       (options.force_group_lanes > 0
                            ? " with " + std::to_string(options.force_group_lanes) + " lanes a slice"
                            : std::string()));
      }
      status = plan_group(base, group_config, options.force_group_cta_threads, plan);
      break;
    case Path::kSharedResident:
      status = plan_shared(base, limits, options, plan);
      if (status.ok() && splits_wide_forward(*plan, options) && !plan_general_registers(base, limits, options, plan)) {
        status = plan_split_pipelined(base, limits, options, plan);
      }
      break;
    case Path::kSplitPipelined:
      status = plan_split_pipelined(base, limits, options, plan);
      break;
    default:
      return invalid(std::string("path ") + path_name(path) + " cannot compute instance statistics");
  }
  if (!status.ok()) return status;
  if (path != Path::kGroupRegisters) plan_spanning_pairs(base, limits, options, plan);
  plan->stagger_cycles = stagger_cycles_of(*plan);
  plan->workspace_bytes = workspace_layout(*plan).total;
  return Status::Ok();
}

}  // namespace detail

Status plan_forward(const ForwardParams& params, const DeviceLimits& limits, Plan* plan,
                    const PlanOptions& options) {
  const Status status = validate_forward(params);
  if (!status.ok()) return status;
  return detail::plan_slices(detail::plan_signature(params), limits, options, plan);
}

Status plan_backward(const BackwardParams& params, const DeviceLimits& limits, Plan* plan,
                     const PlanOptions& options) {
  const Status status = validate_backward(params);
  if (!status.ok()) return status;
  return detail::plan_slices(detail::plan_signature(params), limits, options, plan);
}

}  // namespace inorm
