// Host-side helpers shared by the planner and the launcher.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "config.h"
#include "inorm/inorm.h"

namespace inorm::detail {

// Partial statistics of one part of a slice (kSplitPipelined, forward); the backward's partial
// sums (kernels/backward_op.cuh) take as many bytes.
struct SplitPartial {
  double count;
  double mean;   // rounded mean
  double resid;  // what its rounding missed: float64 input keeps the digits of 1e4 + randn
  double m2;
};

// Where each piece of the workspace starts.
struct WorkspaceLayout {
  // kSharedResident through L2 (shared_exchanges_through_l2): chunk statistics [num_slices *
  // ctas_per_slice], or a cluster's [num_slices * slice_clusters]
  std::size_t chunk_partials = 0;
  // kSharedResident through L2: unsigned [num_slices]; resident kChannelsLast: [items]; kChannelsLast
  // where the stream applies: [samples]
  std::size_t slice_arrivals = 0;
  std::size_t slice_counter = 0;   // kSharedResident, shared_slices_in_order: unsigned long long
  // kSplitPipelined: SplitPartial[num_slices * parts_per_slice]; kChannelsLast: one per tile of each
  // channel, [num_slices * slice_channels * parts_per_slice] (resident: one per CTA of each slice,
  // [num_slices * parts_per_slice], in the same space)
  std::size_t split_partials = 0;
  std::size_t split_slice_stats = 0;  // kSplitPipelined: SplitPartial[num_slices], each slice's combined
  std::size_t split_counters = 0;     // kSplitPipelined: unsigned [1 + num_slices]: next item, arrivals per slice
  // kChannelsLast's three kernels: kSliceCoefficientBytes [num_slices * slice_channels], the
  // elementwise pass's, per channel
  std::size_t slice_coefficients = 0;
  // stats type [num_slices] each: the two terms per slice that the channel reduction sums over the
  // batch: per-instance mean and unbiased variance for the running stats (forward), sum(dy * xhat)
  // and sum(dy) for dweight and dbias (backward).
  std::size_t slice_term0 = 0;
  std::size_t slice_term1 = 0;
  // sums_channels_in_slices: stats type pairs [num_slices * channel_partials_per_slice].
  std::size_t channel_partials = 0;
  std::size_t total = 0;
};
WorkspaceLayout workspace_layout(const Plan& plan);

// A kSharedResident cluster plan's cluster: its CTAs (the group's, unless the slice spans several
// clusters, Plan::slice_clusters).
inline int shared_cluster_ctas(const Plan& plan) {
  return plan.slice_clusters > 1 ? plan.ctas_per_slice / plan.slice_clusters : plan.ctas_per_slice;
}
// Whether a kSharedResident plan exchanges partials through L2 (workspace: a partial per CTA, or per
// cluster of a slice spanning clusters, and an arrival counter per slice).
inline bool shared_exchanges_through_l2(const Plan& plan) {
  return plan.path == Path::kSharedResident && (plan.exchange == Exchange::kGlobal || plan.slice_clusters > 1);
}

// Whether a kSharedResident plan hands its slices out in order from a counter (config.h
// kSharedInOrderMinRounds): an exchange that needs no group to wait on another (cluster, or none
// for groups of one; the L2 exchange's group would need its own broadcast of the slice), enough
// rounds of slices and long enough chunks; and always where a slice spans clusters, each cluster
// taking its next part of a slice from the counter (so a part waits only on parts already taken).
bool shared_slices_in_order(const Plan& plan);
// Whether such a plan takes each next slice before normalizing the current one (config.h
// kSharedEarlyDispatchMinRounds): in order, with register parts, over that many rounds.
bool shared_takes_slices_early(const Plan& plan);
// The SM cycles between the starts of the groups of a plan's first round (Plan::stagger_cycles, the
// planner's): kSharedResident's groups of several CTAs (or clusters) over more than one round
// (config.h kSharedStaggerCycles), channels_last's clusters over more than one round
// (kChannelsLastClusterStaggerSpreadCycles over them); else 0.
int stagger_cycles_of(const Plan& plan);

template <typename Params>
int64_t slice_len_of(const Params& params) {
  int64_t len = 1;
  for (int i = 0; i < params.spatial_rank && i < 3; ++i) len *= params.spatial[i];
  return len;
}
// GroupNorm: the params' groups given.
template <typename Params>
bool is_group_norm(const Params& params) {
  return params.groups != 0;
}
// Channels a slice spans: C / groups for GroupNorm, else one.
template <typename Params>
int64_t slice_channels_of(const Params& params) {
  return is_group_norm(params) && params.channels > 0 ? params.channels / params.groups : 1;
}
// The batch (N): a plan's slices over the slices a sample holds (0 for a plan without channels).
inline int64_t batch_of(const Plan& plan) {
  return plan.channels > 0 ? plan.num_slices * plan.slice_channels / plan.channels : 0;
}
// Whether the plan ends with the channel reduction (kernels/channel_reduce.cu).
inline bool reduces_channels(const Plan& plan) { return plan.update_running_stats || plan.weight_grads; }
// A channel's elements in a slice (S): slice_len / slice_channels (0 for a plan without channels).
inline int64_t channel_len_of(const Plan& plan) {
  return plan.slice_channels > 0 ? plan.slice_len / plan.slice_channels : 0;
}
// The bytes of each input the plan reads (x; the backward's dy holds as many): N x C x S elements.
inline int64_t input_bytes_of(const Plan& plan) {
  return plan.num_slices * plan.slice_len * static_cast<int64_t>(dtype_size(plan.dtype));
}
// Whether every chunk of a plan lies inside one channel (a CTA's chunk on kSharedResident, a part
// on kSplitPipelined, whose length divides the channel's).
inline bool chunks_lie_in_channels(const Plan& plan) {
  return (plan.path == Path::kSharedResident || plan.path == Path::kSplitPipelined) && plan.chunk_len > 0 &&
         channel_len_of(plan) > 0 && channel_len_of(plan) % plan.chunk_len == 0;
}
// Whether the op takes GroupNorm's affine a chunk's channel at a time, where chunks lie in channels:
// the forward's plain op (kernels/forward_op.cuh finish), at no cost; the backward's chunk form
// (kernels/backward_op.cuh AffineBy::kChunk). The forward with an activation keeps its general op,
// whose window starts at the chunk's channel and so never moves.
inline bool takes_chunk_channel_affine(const Plan& plan) {
  return plan.channel_affine && chunks_lie_in_channels(plan) &&
         (plan.pass == Pass::kBackward || plan.activation == Activation::kNone);
}
// Whether the plan runs an op's general form (kernels/launchers.h dispatch_op): an activation, or
// an affine by channel inside chunks of the slices.
inline bool runs_general_op(const Plan& plan) {
  return plan.activation != Activation::kNone || (plan.channel_affine && !takes_chunk_channel_affine(plan));
}
// Whether the op applies a runtime epilogue (kernels/shared_resident.cuh kRuntimeEpilogue): an
// activation in either pass, or the forward's general op.
inline bool runs_runtime_epilogue(const Plan& plan) {
  return plan.activation != Activation::kNone || (plan.pass == Pass::kForward && runs_general_op(plan));
}
// Whether the backward's weight gradients come from per-channel sums inside slices (GroupNorm):
// each chunk of a slice leaves, per channel it overlaps, sum(dz) and sum(dz * (x - center)) in the
// workspace (kernels/backward_op.cuh), which the channel reduction combines per channel.
inline bool sums_channels_in_slices(const Plan& plan) {
  return plan.pass == Pass::kBackward && plan.weight_grads && plan.slice_channels > 1;
}
// The elements of a slice one such partial's chunk covers: a CTA's chunk (kSharedResident), a
// part (kSplitPipelined), a tile of one channel (kChannelsLast), or the whole slice.
inline int64_t channel_partial_chunk_len(const Plan& plan) {
  if (plan.path == Path::kChannelsLast) return plan.tile_rows;
  return plan.path == Path::kSharedResident || plan.path == Path::kSplitPipelined ? plan.chunk_len : plan.slice_len;
}
// The elements a channel takes in that count of chunks: its own (S), or on kChannelsLast, where no
// tile holds two channels of a slice, its tiles in whole (parts_per_slice of tile_rows).
inline int64_t channel_partial_channel_len(const Plan& plan) {
  if (plan.path == Path::kChannelsLast) return static_cast<int64_t>(plan.parts_per_slice) * plan.tile_rows;
  return channel_len_of(plan);
}
// Partials per slice: channel c of the slice and chunk k (the chunks c overlaps) at c + k, so the
// slice_channels channels and the chunks between them take slice_channels + chunks - 1.
inline int64_t channel_partials_per_slice(const Plan& plan) {
  const int64_t chunk = channel_partial_chunk_len(plan);
  const int64_t chunks = chunk > 0 ? (plan.slice_channels * channel_partial_channel_len(plan) + chunk - 1) / chunk : 1;
  return plan.slice_channels + chunks - 1;
}

// Bytes of a chunk's partial: ChunkStats<stats type> (count, mean, resid, m2; kernels/forward_op.cuh), or the
// backward's GradSums, as large.
inline std::size_t chunk_stats_bytes(DType dtype) { return 4 * dtype_size(stats_dtype(dtype)); }

// Elements at the end of each chunk of each input that a kSharedResident CTA with a register part
// holds in registers (config.h kSharedRegister*).
inline int64_t shared_register_len(DType dtype, int inputs) {
  return kSharedRegisterBytes / (static_cast<int64_t>(dtype_size(dtype)) * inputs);
}
// The same for a wide register part (config.h kSharedWideRegisterVecs; the forward's plain op, one input).
inline int64_t shared_wide_register_len(DType dtype) {
  return kSharedWideRegisterBytes / static_cast<int64_t>(dtype_size(dtype));
}
// Whether a plan's register part is the wide one.
inline bool holds_wide_register_part(const Plan& plan) {
  return plan.inputs == 1 && plan.register_len > 0 && plan.register_len == shared_wide_register_len(plan.dtype);
}

// kSharedResident dynamic shared memory: a region (config.h shared_region_bytes) per input.
inline int64_t shared_buffer_bytes(int64_t chunk_bytes, int inputs) { return inputs * shared_region_bytes(chunk_bytes); }
// The largest buffer of each of `ctas_per_sm` CTAs that share an SM equally, beside their static
// shared memory and the driver's per-CTA reservation.
int64_t shared_sm_share(const DeviceLimits& limits, int ctas_per_sm);
// How many CTAs with `smem_bytes` of dynamic shared memory (beside the static reserve and the
// driver's per-CTA reservation) fit on one SM.
int64_t ctas_fitting_on_sm(const DeviceLimits& limits, int64_t smem_bytes);

// kChannelsLast: whether the tiles hold every channel (one contiguous run of each tensor, staged by
// bulk copies in both passes); whether the plan runs the resident form (kernels/channels_last.cuh:
// a group of CTAs holds an item's tiles, a sample's or a channel block's), and whether its groups
// are of more than one CTA (the partials exchanged through L2, an arrival counter an item); its
// items (samples x channel blocks); and the dynamic shared memory of a tile of every input (a
// region per input where tiles hold whole rows, whose buffers mirror their sources' alignment;
// else the rows packed), and in the resident form a cell of coefficients per channel of the tile
// after it.
inline bool channels_last_whole_rows(const Plan& plan) { return plan.channel_block == plan.channels; }
// The elements a channel block's rows move at a time: 16-byte runs where vector_io (every row
// starts aligned), else single elements (channels_last.cuh's kUnitElems of its TileLoad).
inline int64_t channels_last_unit_elems(const Plan& plan) {
  return plan.vector_io ? 16 / static_cast<int64_t>(dtype_size(plan.dtype)) : 1;
}
inline bool channels_last_resident(const Plan& plan) {
  return plan.path == Path::kChannelsLast && plan.exchange == Exchange::kGlobal;
}
inline bool channels_last_exchanges(const Plan& plan) {
  return channels_last_resident(plan) && plan.parts_per_slice > 1;
}
// Channel blocks a sample (a block under 1, in a plan edited by hand, counts as 1 until the
// launch's checks reject it).
inline int64_t channels_last_blocks(const Plan& plan) {
  const int64_t block = plan.channel_block > 1 ? plan.channel_block : 1;
  return (plan.channels + block - 1) / block;
}
inline int64_t channels_last_resident_items(const Plan& plan) { return batch_of(plan) * channels_last_blocks(plan); }
// The three kernels' items: (sample, channel block, tile).
inline int64_t channels_last_tile_items(const Plan& plan) {
  return channels_last_resident_items(plan) * plan.parts_per_slice;
}
// The streamed reduction (Plan::stream_parts): a row's runs of kChannelsLastStreamRun channels (a
// power of two up to a warp, so that the lanes sharing a run sum by shuffles), rows aligned to 16
// bytes for the bulk copies; its ring and the consumer warps' sums of every channel
// (config.h channels_last_stream_sum_bytes) after it; the partials a channel (the stream's parts,
// or the tiles); whether a plan of the three kernels can stream (the plain ops, either pass).
inline bool channels_last_streams(const Plan& plan) { return plan.path == Path::kChannelsLast && plan.stream_parts > 0; }
inline int64_t channels_last_reduce_parts(const Plan& plan) {
  return channels_last_streams(plan) ? plan.stream_parts : plan.parts_per_slice;
}
// Where the streamed kernel also applies (Plan::stream_applies), a coefficient cell a channel after
// the sums; and its one arrival counter a sample.
inline bool channels_last_stream_applies(const Plan& plan) {
  return channels_last_streams(plan) && plan.stream_applies;
}
inline int64_t channels_last_stream_smem_bytes(const Plan& plan, bool applies) {
  return kChannelsLastStreamStages * kChannelsLastStreamStageBytes +
         kChannelsLastStreamWarps * plan.channels * channels_last_stream_sum_bytes(plan.inputs) +
         (applies ? plan.channels * static_cast<int64_t>(kSliceCoefficientBytes) : 0);
}
inline int64_t channels_last_stream_smem_bytes(const Plan& plan) {
  return channels_last_stream_smem_bytes(plan, channels_last_stream_applies(plan));
}
// The rows of a stage of the ring (whole rows), and the fewest rows of a part the applying kernel
// takes: its ring's stages all full of the part, so that they are the part's last when it applies.
inline int64_t channels_last_stream_stage_rows(const Plan& plan) {
  const int64_t row_bytes = plan.channels * static_cast<int64_t>(dtype_size(plan.dtype));
  return channels_last_stream_input_bytes(plan.inputs) / row_bytes;
}
inline int64_t channels_last_stream_apply_min_rows(const Plan& plan) {
  return kChannelsLastStreamStages * channels_last_stream_stage_rows(plan);
}
inline bool channels_last_can_stream(const Plan& plan) {
  const int64_t runs = plan.channels / kChannelsLastStreamRun;
  return !runs_general_op(plan) && plan.dtype != DType::kFloat64 && plan.vector_io &&
         plan.exchange == Exchange::kNone && plan.channels % kChannelsLastStreamRun == 0 && runs >= 1 &&
         runs <= 32 && (runs & (runs - 1)) == 0;
}
// channels_last's cluster form (Plan::exchange kCluster: kernels/channels_last.cuh
// channels_last_cluster_kernel), its shape for the plan's pass (config.h), and the problems its kernel
// runs: the plain ops (no activation), InstanceNorm, float32 and the 16-bit types, rows aligned to 16
// bytes of a power of two of C up to kChannelsLastClusterMaxChannels, whole 16-byte runs a row (so
// that a run's lanes of a warp sum by shuffles and the CTA's threads hold whole rows a pass).
inline bool channels_last_clusters(const Plan& plan) {
  return plan.path == Path::kChannelsLast && plan.exchange == Exchange::kCluster;
}
inline ChannelsLastClusterShape channels_last_cluster_shape_of(const Plan& plan) {
  return channels_last_cluster_shape(plan.pass == Pass::kBackward);
}
// A row's whole 16-byte runs, and the rows a CTA of the cluster form holds in its threads' registers
// at most.
inline int64_t channels_last_row_runs(const Plan& plan) {
  return plan.channels * static_cast<int64_t>(dtype_size(plan.dtype)) / 16;
}
inline int64_t channels_last_cluster_register_rows(const Plan& plan) {
  const ChannelsLastClusterShape shape = channels_last_cluster_shape_of(plan);
  const int64_t runs = channels_last_row_runs(plan);
  return runs >= 1 ? shape.register_runs * (shape.threads / runs) : 0;
}
inline bool channels_last_cluster_runs(const Plan& plan) {
  const int64_t runs = channels_last_row_runs(plan);
  return !runs_general_op(plan) && plan.slice_channels == 1 && plan.dtype != DType::kFloat64 && plan.vector_io &&
         plan.channels <= kChannelsLastClusterMaxChannels && (plan.channels & (plan.channels - 1)) == 0 && runs >= 1 &&
         runs <= 32;
}
inline int64_t channels_last_smem_bytes(const Plan& plan) {
  const int64_t tile_bytes = plan.tile_rows * plan.channel_block * static_cast<int64_t>(dtype_size(plan.dtype));
  if (channels_last_clusters(plan)) {  // the rows x holds there, then the warps' float32 sums a channel
    const int64_t held_bytes = (plan.tile_rows - plan.register_len) * plan.channel_block *
                               static_cast<int64_t>(dtype_size(plan.dtype));
    const ChannelsLastClusterShape shape = channels_last_cluster_shape_of(plan);
    return held_bytes + shape.threads / 32 * plan.channels * shape.sum_terms * static_cast<int64_t>(sizeof(float));
  }
  const int64_t tiles =
      channels_last_whole_rows(plan) ? shared_buffer_bytes(tile_bytes, plan.inputs) : tile_bytes * plan.inputs;
  const int64_t coefficients = plan.channel_block * static_cast<int64_t>(kSliceCoefficientBytes);
  return tiles + (channels_last_resident(plan) ? coefficients : 0);
}

// Whether split_pipelined's items (two per part at most) of `slices` slices of `parts` parts fit
// its 32-bit item counter.
inline bool pipelined_items_fit(int64_t slices, int64_t parts) {
  return parts >= 1 && slices <= std::numeric_limits<int32_t>::max() / (2 * parts);
}
// split_pipelined's items: a reduction item for every part of every slice, and an elementwise item
// for each part that is not resident (the first parts - resident of each slice; a resident part's
// reduction item writes its output itself).
INORM_HOST_DEVICE inline int64_t pipelined_items(int64_t slices, int64_t parts, int64_t resident) {
  return slices * (2 * parts - resident);
}
// What item `item` of split_pipelined is. Two streams of (slice, part) in order, the reductions
// (every part) and the elementwise passes (the parts that are not resident), merged: the first
// `lead` reduction items, then both streams in proportion (parts reduction items to every
// parts - resident elementwise items, a reduction first), then the elementwise items left. Both
// streams then move through the slices at one pace, `lead` reduction items apart, so with
// lead >= parts every slice's reduction items all come before its first elementwise item; every
// lead beyond that lets its last reductions finish before the elementwise items that wait for them
// start. `walk_back`: each slice's elementwise items take its streamed parts from the last back.
struct PipelinedItem {
  int64_t slice;
  int64_t part;
  bool elementwise;
};
INORM_HOST_DEVICE inline PipelinedItem pipelined_item(int64_t item, int64_t slices, int64_t parts, int64_t resident,
                                                      int64_t lead, bool walk_back) {
  const int64_t streamed = parts - resident;
  const auto elementwise = [&](int64_t index) -> PipelinedItem {
    const int64_t part = index % streamed;
    return {index / streamed, walk_back ? streamed - 1 - part : part, true};
  };
  const int64_t reductions = slices * parts;
  if (item < lead) return {item / parts, item % parts, false};
  const int64_t merged = item - lead;
  // Reduction items among the first `merged` after the lead, rounded up: a reduction leads each run.
  const auto reductions_before = [&](int64_t m) { return (m * parts + parts + streamed - 1) / (parts + streamed); };
  const int64_t before = reductions_before(merged);
  if (lead + before >= reductions) {  // every reduction is out: the elementwise items left
    return elementwise(item - reductions);
  }
  if (reductions_before(merged + 1) > before) return {(lead + before) / parts, (lead + before) % parts, false};
  return elementwise(merged - before);
}
// Fills limits->resident_clusters for the current device, whose other limits `limits` holds:
// clusters of every size the cluster exchange may use at every CTAs per SM, each CTA with the
// buffer of an equal share of its SM (cudaOccupancyMaxActiveClusters; asked once per device).
Status fill_resident_clusters(DeviceLimits* limits);

// The largest slice (elements) kSharedResident can hold with `inputs` tensors on chip: a full group
// of full CTAs.
int64_t largest_resident_slice(DType dtype, int inputs, const DeviceLimits& limits);

// A plan holding only what the params decide (pass, shape, dtype, flags, alignment facts).
Plan plan_signature(const ForwardParams& params);
Plan plan_signature(const BackwardParams& params);
// Whether two signatures are of the same pass, shape, dtypes and flags (their alignment aside).
bool same_problem(const Plan& a, const Plan& b);
// Whether a plan made earlier can run params of signature `now`: the same problem, and no vector
// access that their alignment forbids.
bool plan_matches(const Plan& plan, const Plan& now);

// The planner below the params: the path and launch shape for a signature, on `limits`.
Status plan_slices(const Plan& signature, const DeviceLimits& limits, const PlanOptions& options, Plan* plan);

}  // namespace inorm::detail
