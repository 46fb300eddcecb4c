// channels_last's launch (the kernels and what they do: kernels/channels_last.cuh): the checks of
// a plan edited by hand.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <string>

#include "config.h"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

// The cluster form's kernel for the plan, allowed the device's whole opt-in shared memory and
// clusters of up to kChannelsLastClusterMaxCtas CTAs (above 8 "non-portable" on sm_90).
Status cluster_kernel(const Plan& plan, KernelFn* kernel) {
  *kernel = nullptr;
  const Status status = dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    *kernel = channels_last_cluster_kernel_of(tag, plan);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  if (*kernel == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: channels_last's cluster form runs the plain ops, not " + plan.describe());
  }
  return allow_max_dynamic_smem(reinterpret_cast<const void*>(*kernel), /*non_portable_clusters=*/true);
}

}  // namespace

Status channels_last_cluster_occupancy(const Plan& plan, int* clusters) {
  *clusters = 0;
  KernelFn kernel = nullptr;
  const Status status = cluster_kernel(plan, &kernel);
  if (!status.ok()) return status;
  cudaLaunchAttribute cluster = cluster_dimension(static_cast<unsigned>(plan.parts_per_slice));
  const cudaLaunchConfig_t config = launch_config_of(plan, nullptr, &cluster);
  return cuda_status(cudaOccupancyMaxActiveClusters(clusters, kernel, &config), "cudaOccupancyMaxActiveClusters");
}

Status launch_channels_last(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  // The cluster form: a problem its kernel runs, in whole clusters of 1 to kChannelsLastClusterMaxCtas
  // CTAs a sample, each with rows in shared memory, the last the rest.
  if (channels_last_clusters(plan)) {
    const int64_t group = plan.parts_per_slice;
    const int64_t rows = channel_len_of(plan);
    if (!channels_last_cluster_runs(plan) || plan.channel_block != plan.channels ||
        plan.threads != channels_last_cluster_shape_of(plan).threads || group < 1 ||
        group > kChannelsLastClusterMaxCtas || plan.ctas_per_slice != group || plan.tile_rows < 1 ||
        group * plan.tile_rows < rows || plan.register_len < 0 || plan.register_len >= plan.tile_rows ||
        plan.register_len > channels_last_cluster_register_rows(plan) ||
        (group - 1) * plan.tile_rows >= rows || plan.grid < group || plan.grid % group != 0 ||
        plan.smem_bytes < channels_last_smem_bytes(plan) || plan.stream_parts != 0) {
      return Status(StatusCode::kInvalidArgument, "inorm: the plan's channels_last clusters (" + plan.describe() +
                                                      ") are not ones the planner makes");
    }
    KernelFn kernel = nullptr;
    const Status status = cluster_kernel(plan, &kernel);
    if (!status.ok()) return status;
    cudaLaunchAttribute cluster = cluster_dimension(static_cast<unsigned>(plan.parts_per_slice));  // a sample's
    return launch_with("channels_last cluster launch", &cluster, kernel, static_cast<unsigned>(plan.grid),
                       static_cast<unsigned>(plan.threads), static_cast<std::size_t>(plan.smem_bytes), stream, args);
  }
  // A plan edited by hand must still tile every slice with whole passes of its threads, stage a
  // tile of every input in its shared memory, and move 16-byte runs only where rows and blocks
  // hold whole ones.
  const int64_t block = plan.channel_block;
  const int64_t rows = block > 0 ? plan.threads / block : 0;
  const int64_t spatial = channel_len_of(plan);
  const int64_t vector = channels_last_unit_elems(plan);
  const bool resident = channels_last_resident(plan);
  const int most_threads = resident && plan.ctas_per_sm == 1 ? kChannelsLastResidentWideThreads : kChannelsLastThreads;
  if (block < 1 || block > most_threads || block > plan.channels || plan.threads > most_threads || rows < 1 ||
      rows * block != plan.threads || plan.tile_rows < rows || plan.tile_rows % rows != 0 ||
      plan.parts_per_slice < 1 || static_cast<int64_t>(plan.parts_per_slice) * plan.tile_rows < spatial ||
      static_cast<int64_t>(plan.parts_per_slice - 1) * plan.tile_rows >= spatial ||
      plan.slice_channels * plan.parts_per_slice > std::numeric_limits<int>::max() || plan.grid < 1 ||
      plan.grid > std::numeric_limits<int32_t>::max() ||
      plan.smem_bytes < channels_last_smem_bytes(plan) || block % vector != 0 || plan.channels % vector != 0 ||
      (plan.exchange != Exchange::kNone && plan.exchange != Exchange::kGlobal)) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's channels_last tiles (" + plan.describe() + ") are not ones the planner makes");
  }
  // The resident form: whole groups of a tile a CTA; on channel blocks, 16-byte runs of whole
  // slices' channels.
  if (resident && (plan.grid < plan.parts_per_slice || plan.grid % plan.parts_per_slice != 0 ||
                   (!channels_last_whole_rows(plan) && (!plan.vector_io || block % plan.slice_channels != 0)))) {
    return Status(StatusCode::kInvalidArgument, "inorm: the plan's resident channels_last groups (" + plan.describe() +
                                                    ") are not ones the planner makes");
  }
  // The streamed reduction: where it can stream, each part at least a row, its partials counted in int.
  if (plan.stream_parts < 0 ||
      (plan.stream_parts > 0 && (!channels_last_can_stream(plan) || plan.stream_parts > spatial ||
                                 plan.slice_channels * plan.stream_parts > std::numeric_limits<int>::max() ||
                                 plan.stream_grid < 1)) ||
      // Applying: a CTA a part, all at once, each part's ring full of it.
      (plan.stream_applies &&
       (plan.stream_parts < 1 || plan.stream_grid != batch_of(plan) * plan.stream_parts ||
        spatial / plan.stream_parts < channels_last_stream_apply_min_rows(plan)))) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's streamed channels_last reduction (" + plan.describe() +
                      ") is not one the planner makes");
  }
  return dispatch_dtype(plan.dtype, [&](auto tag) { return launch_channels_last_of(tag, plan, args, stream); });
}

}  // namespace inorm::detail
