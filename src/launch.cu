// The device-facing half of the API for both passes: device limits, residency check, launch.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "inorm/inorm.h"
#include "kernels/launchers.h"
#include "plan_cache.h"
#include "plan_internal.h"

namespace inorm {

using detail::cuda_status;

namespace detail {

Status allow_max_dynamic_smem(const void* kernel, bool non_portable_clusters) {
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> prepared;
  int device = 0;
  Status status = cuda_status(cudaGetDevice(&device), "cudaGetDevice");
  if (!status.ok()) return status;
  const std::lock_guard<std::mutex> lock(mutex);
  if (prepared.count({kernel, device}) != 0) return Status::Ok();
  int optin = 0;
  status = cuda_status(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                       "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  if (!status.ok()) return status;
  cudaFuncAttributes attributes{};
  status = cuda_status(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes");
  if (!status.ok()) return status;
  status = cuda_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            optin - static_cast<int>(attributes.sharedSizeBytes)),
                       "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  if (!status.ok()) return status;
  if (non_portable_clusters) {
    status = cuda_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                         "cudaFuncSetAttribute(NonPortableClusterSizeAllowed)");
    if (!status.ok()) return status;
  }
  prepared.insert({kernel, device});
  return Status::Ok();
}

}  // namespace detail

Status query_device_limits(int device, DeviceLimits* limits) {
  if (limits == nullptr) return Status(StatusCode::kInvalidArgument, "inorm: limits is null");
  struct Query {
    cudaDeviceAttr attr;
    int* out;
    const char* name;
  };
  int major = 0;
  const Query queries[] = {
      {cudaDevAttrComputeCapabilityMajor, &major, "ComputeCapabilityMajor"},
      {cudaDevAttrMultiProcessorCount, &limits->sm_count, "MultiProcessorCount"},
      {cudaDevAttrMaxThreadsPerMultiProcessor, &limits->max_threads_per_sm, "MaxThreadsPerMultiProcessor"},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, &limits->smem_per_sm, "MaxSharedMemoryPerMultiprocessor"},
      {cudaDevAttrMaxSharedMemoryPerBlockOptin, &limits->max_smem_per_block_optin, "MaxSharedMemoryPerBlockOptin"},
      {cudaDevAttrReservedSharedMemoryPerBlock, &limits->reserved_smem_per_block, "ReservedSharedMemoryPerBlock"},
  };
  for (const Query& query : queries) {
    Status status = cuda_status(cudaDeviceGetAttribute(query.out, query.attr, device),
                                (std::string("cudaDeviceGetAttribute(") + query.name + ")").c_str());
    if (!status.ok()) return status;
  }
  if (major < 9) {
    return Status(StatusCode::kUnsupported,
                  "inorm: device " + std::to_string(device) + " has compute capability " +
                      std::to_string(major) + ".x; inorm is built for sm_90 (Hopper)");
  }
  return Status::Ok();
}

namespace {

// The limits of `device` with the clusters its GPCs hold, asked of the runtime once per device.
Status device_limits(int device, DeviceLimits* limits) {
  static std::mutex mutex;
  static std::map<int, DeviceLimits> known;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto found = known.find(device);
    if (found != known.end()) {
      *limits = found->second;
      return Status::Ok();
    }
  }
  DeviceLimits fresh;
  Status status = query_device_limits(device, &fresh);
  if (!status.ok()) return status;
  // So that the planner counts rounds of slices as they will run.
  status = detail::fill_resident_clusters(&fresh);
  if (!status.ok()) return status;
  const std::lock_guard<std::mutex> lock(mutex);
  *limits = known.emplace(device, fresh).first->second;
  return Status::Ok();
}

// channels_last's cluster form with the clusters its kernel keeps resident here: its grid no larger
// (the clusters stride over the samples; one launched past them would wait for a whole cluster's
// samples before its first), and a clear refusal where none fits.
Status fit_channels_last_clusters(Plan* plan) {
  int clusters = 0;
  const Status status = detail::channels_last_cluster_occupancy(*plan, &clusters);
  if (!status.ok()) return status;
  if (clusters == 0) {
    return Status(StatusCode::kUnsupported, "inorm: no cluster of " + std::to_string(plan->parts_per_slice) +
                                                " channels_last CTAs fits on this device");
  }
  plan->grid = std::min<int64_t>(plan->grid, static_cast<int64_t>(clusters) * plan->parts_per_slice);
  plan->stagger_cycles = detail::stagger_cycles_of(*plan);  // (fewer clusters: more rounds)
  return Status::Ok();
}

// The planner for `limits`, with the occupancy the compiled kernels really reach on the current
// device.
Status plan_with_occupancy(const Plan& signature, const PlanOptions& options, const DeviceLimits& limits,
                           Plan* plan) {
  // The planner assumes the shared_resident kernel fits kSharedThreadsPerSm threads per SM: if the
  // compiled kernel reaches fewer CTAs per SM here, plan again under that cap; if no cluster of the
  // plan's size fits, plan again with the L2 exchange. Each retry tightens an option, so the loop
  // ends. Fewer clusters than the plan's grid holds (its buffer may differ from the equal share the
  // table was asked with) shrink the grid: the persistent loop gives them more slices each.
  Status status;
  PlanOptions capped = options;
  for (;;) {
    status = detail::plan_slices(signature, limits, capped, plan);
    if (status.ok() && detail::channels_last_clusters(*plan)) return fit_channels_last_clusters(plan);
    if (!status.ok() || plan->path != Path::kSharedResident) return status;
    detail::SharedOccupancy occupancy;
    status = detail::shared_resident_occupancy(*plan, &occupancy);
    if (!status.ok()) return status;
    if (occupancy.ctas_per_sm == 0) {
      return Status(StatusCode::kUnsupported,
                    "inorm: the shared_resident kernel with " + std::to_string(plan->smem_bytes) +
                        " bytes of shared memory cannot be resident on this device");
    }
    if (occupancy.ctas_per_sm < plan->ctas_per_sm) {
      capped.max_ctas_per_sm = occupancy.ctas_per_sm;
      continue;
    }
    if (plan->exchange != Exchange::kCluster) return Status::Ok();
    if (occupancy.clusters == 0) {  // not expected on an H200 (clusters of 16 at 3 per SM fit 21)
      if (options.force_exchange == Exchange::kCluster) {
        return Status(StatusCode::kUnsupported, "inorm: no cluster of " + std::to_string(detail::shared_cluster_ctas(*plan)) +
                                                    " shared_resident CTAs fits on this device");
      }
      capped.force_exchange = Exchange::kGlobal;  // needs only that the CTAs are resident
      continue;
    }
    plan->grid = std::min<int64_t>(plan->grid,
                                   static_cast<int64_t>(occupancy.clusters) * detail::shared_cluster_ctas(*plan));
    plan->stagger_cycles = detail::stagger_cycles_of(*plan);  // (fewer groups: more rounds, a wider spread each)
    plan->workspace_bytes = detail::workspace_layout(*plan).total;  // a smaller grid may need the slice counter
    return Status::Ok();
  }
}

// The plan for the current device: from the cache, else planned (and kept) there.
Status plan_on_device(const Plan& signature, const PlanOptions& options, Plan* plan) {
  static detail::PlanCache cache(detail::kPlanCacheCapacity);
  int device = 0;
  Status status = cuda_status(cudaGetDevice(&device), "cudaGetDevice");
  if (!status.ok()) return status;
  const detail::PlanKey key{device, signature, options};
  if (cache.find(key, plan)) return Status::Ok();
  DeviceLimits limits;
  status = device_limits(device, &limits);
  if (!status.ok()) return status;
  status = plan_with_occupancy(signature, options, limits, plan);
  if (status.ok()) cache.insert(key, *plan);
  return status;
}

// A kChannelsLast plan's counts and divisors (common.cuh ChannelsLastDivisors). The channel-block
// paths' units: plan_internal.h channels_last_unit_elems (the whole-rows path, channel_block == C,
// moves none).
detail::ChannelsLastDivisors channels_last_divisors(const Plan& plan) {
  using detail::FastDivisor;
  detail::ChannelsLastDivisors d;
  const int64_t block = std::max<int64_t>(plan.channel_block, 1);
  d.samples = detail::batch_of(plan);
  const int64_t blocks = detail::channels_last_blocks(plan);
  d.by_groups = FastDivisor(plan.channels / plan.slice_channels);
  d.by_slice_channels = FastDivisor(plan.slice_channels);
  d.by_other_channels = FastDivisor(std::max<int64_t>(plan.slice_channels - 1, 1));
  d.by_tiles = FastDivisor(plan.parts_per_slice);
  d.by_blocks = FastDivisor(blocks);
  d.by_channel_block = FastDivisor(block);
  d.by_rows_a_pass = FastDivisor(std::max<int64_t>(plan.threads / block, 1));
  const int64_t unit = detail::channels_last_unit_elems(plan);
  const int64_t widths[2] = {block, plan.channels - (blocks - 1) * block};
  for (int i = 0; i < 2; ++i) {
    const int64_t units = std::max<int64_t>(widths[i] / unit, 1);
    d.by_units_a_row[i] = FastDivisor(units);
    d.by_unit_rows_a_pass[i] = FastDivisor(std::max<int64_t>(plan.threads / units, 1));
  }
  return d;
}

// What every pass's launch shares once its params are checked against the plan: the workspace
// checks, the family-specific arguments, the main kernel and, where the pass has per-channel
// outputs, the channel reduction.
Status launch_plan(const Plan& plan, detail::KernelArgs args, const detail::ChannelOutputs& outputs, void* workspace,
                   cudaStream_t stream) {
  if (plan.workspace_bytes > 0 && workspace == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan needs " + std::to_string(plan.workspace_bytes) +
                      " bytes of workspace, got null");
  }
  const detail::WorkspaceLayout layout = detail::workspace_layout(plan);
  // A plan edited by hand (its grid, say) may need more workspace than it says it does.
  if (layout.total > plan.workspace_bytes) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's workspace_bytes (" + std::to_string(plan.workspace_bytes) +
                      ") is less than the " + std::to_string(layout.total) + " bytes it needs; plan again");
  }
  // A hand-edited stagger: each group waits at most the longest spread the planner makes.
  if (plan.stagger_cycles < 0 || plan.stagger_cycles > detail::kChannelsLastClusterStaggerSpreadCycles) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's stagger_cycles (" + std::to_string(plan.stagger_cycles) + ") is not 0 to " +
                      std::to_string(detail::kChannelsLastClusterStaggerSpreadCycles));
  }
  auto* ws = static_cast<unsigned char*>(workspace);
  args.num_slices = plan.num_slices;
  args.channels = plan.channels;
  args.slice_len = plan.slice_len;
  args.slice_channels = plan.slice_channels;
  args.groups = plan.channels / plan.slice_channels;
  args.channel_len = detail::channel_len_of(plan);
  args.chunk_len = plan.chunk_len;
  args.register_len = plan.register_len;
  args.parts_per_slice = plan.parts_per_slice;
  args.coaligned = plan.coaligned;
  args.channels_last = plan.layout == Layout::kChannelsLast;
  if (detail::reduces_channels(plan)) {
    args.slice_term0 = ws + layout.slice_term0;
    args.slice_term1 = ws + layout.slice_term1;
  }
  if (detail::sums_channels_in_slices(plan)) {
    args.channel_partials = ws + layout.channel_partials;
    args.channel_partials_per_slice = detail::channel_partials_per_slice(plan);
  }
  if (plan.path == Path::kSplitPipelined) {
    args.split_partials = ws + layout.split_partials;
    args.split_slice_stats = ws + layout.split_slice_stats;
    args.next_item = reinterpret_cast<unsigned*>(ws + layout.split_counters);
    args.slice_arrivals = args.next_item + 1;
    args.pipeline_lead = plan.pipeline_lead;
    args.resident_parts = plan.resident_parts;
    args.evict_first = plan.evict_first;
    args.walk_back = plan.walk_back;
  }
  args.stagger_cycles = plan.stagger_cycles;
  if (plan.path == Path::kChannelsLast) {
    args.evict_first = plan.evict_first;
    args.stream_parts = plan.stream_parts;
    if (!detail::channels_last_clusters(plan)) {  // (the cluster form exchanges in distributed shared memory)
      args.split_partials = ws + layout.split_partials;
      if (detail::channels_last_resident(plan) || detail::channels_last_stream_applies(plan)) {
        args.slice_arrivals = reinterpret_cast<unsigned*>(ws + layout.slice_arrivals);
      } else {
        args.slice_coefficients = ws + layout.slice_coefficients;
      }
    }
    args.channel_block = plan.channel_block;
    args.tile_rows = plan.tile_rows;
    args.channels_last_divisors = channels_last_divisors(plan);
  }
  if (plan.path == Path::kSharedResident) {
    args.ctas_per_slice = plan.ctas_per_slice;
    args.slice_clusters = plan.slice_clusters;
    if (detail::shared_exchanges_through_l2(plan)) {
      args.chunk_partials = ws + layout.chunk_partials;
      args.slice_arrivals = reinterpret_cast<unsigned*>(ws + layout.slice_arrivals);
    }
    if (detail::shared_slices_in_order(plan)) {
      args.slice_counter = reinterpret_cast<unsigned long long*>(ws + layout.slice_counter);
      args.take_slices_early = detail::shared_takes_slices_early(plan);
    }
  }

  Status status;
  switch (plan.path) {
    case Path::kElementwiseEval: status = detail::launch_eval(plan, args, stream); break;
    case Path::kGroupRegisters: status = detail::launch_group(plan, args, stream); break;
    case Path::kSharedResident: status = detail::launch_shared(plan, args, stream); break;
    case Path::kSplitPipelined: status = detail::launch_split(plan, args, stream); break;
    case Path::kChannelsLast: status = detail::launch_channels_last(plan, args, stream); break;
    default:
      return Status(StatusCode::kInvalidArgument,
                    std::string("inorm: cannot launch path ") + path_name(plan.path));
  }
  if (!status.ok() || !detail::reduces_channels(plan)) return status;
  return detail::launch_channel_reduce(plan, args, outputs, stream);
}

// plan, a stream-ordered workspace, launch: forward() and backward().
template <typename Params, typename PlanFn, typename LaunchFn>
Status plan_and_launch(const Params& params, PlanFn&& plan_fn, LaunchFn&& launch_fn, cudaStream_t stream) {
  Plan plan;
  Status status = plan_fn(params, &plan);
  if (!status.ok()) return status;
  void* workspace = nullptr;
  if (plan.workspace_bytes > 0) {
    status = cuda_status(cudaMallocAsync(&workspace, plan.workspace_bytes, stream), "cudaMallocAsync(workspace)");
    if (!status.ok()) return status;
  }
  status = launch_fn(plan, params, workspace, stream);
  if (workspace != nullptr) {
    const Status freed = cuda_status(cudaFreeAsync(workspace, stream), "cudaFreeAsync(workspace)");
    if (status.ok()) status = freed;
  }
  return status;
}

// The kernel arguments both passes take from their params alike (ForwardParams and BackwardParams
// name them the same).
template <typename Params>
detail::KernelArgs shared_kernel_args(const Params& params) {
  detail::KernelArgs args{};
  args.x = params.x;
  args.eps = params.eps;
  args.weight = params.weight;
  args.bias = params.bias;
  args.param_dtype = params.param_dtype;
  args.use_input_stats = params.use_input_stats;
  args.activation = params.activation;
  args.negative_slope = params.negative_slope;
  args.running_mean = params.running_mean;
  args.running_var = params.running_var;
  return args;
}

Status plan_mismatch() {
  return Status(StatusCode::kInvalidArgument,
                "inorm: the params differ from those the plan was made for (pass, shape, dtype, "
                "flags or pointer alignment); plan again");
}

}  // namespace

Status plan_forward(const ForwardParams& params, Plan* plan, const PlanOptions& options) {
  const Status status = validate_forward(params);
  if (!status.ok()) return status;
  return plan_on_device(detail::plan_signature(params), options, plan);
}

Status plan_backward(const BackwardParams& params, Plan* plan, const PlanOptions& options) {
  const Status status = validate_backward(params);
  if (!status.ok()) return status;
  return plan_on_device(detail::plan_signature(params), options, plan);
}

Status launch_forward(const Plan& plan, const ForwardParams& params, void* workspace,
                      cudaStream_t stream) {
  Status status = validate_forward(params);
  if (!status.ok()) return status;
  if (!detail::plan_matches(plan, detail::plan_signature(params))) return plan_mismatch();
  if (plan.path == Path::kEmpty) return Status::Ok();
  detail::KernelArgs args = shared_kernel_args(params);
  args.out = params.y;
  args.mean_out = params.mean;
  args.rstd_out = params.rstd;
  detail::ChannelOutputs outputs;
  outputs.running_mean = params.running_mean;
  outputs.running_var = params.running_var;
  outputs.momentum = params.momentum;
  return launch_plan(plan, args, outputs, workspace, stream);
}

Status launch_backward(const Plan& plan, const BackwardParams& params, void* workspace,
                       cudaStream_t stream) {
  Status status = validate_backward(params);
  if (!status.ok()) return status;
  if (!detail::plan_matches(plan, detail::plan_signature(params))) return plan_mismatch();
  if (plan.path == Path::kEmpty) {
    // Sums over no elements: the weight gradients are zeros (0.0's bits in every dtype).
    const std::size_t bytes = static_cast<std::size_t>(params.channels) * dtype_size(params.param_dtype);
    for (void* grad : {params.dweight, params.dbias}) {
      if (grad == nullptr || bytes == 0) continue;
      status = cuda_status(cudaMemsetAsync(grad, 0, bytes, stream), "cudaMemsetAsync(empty weight gradient)");
      if (!status.ok()) return status;
    }
    return Status::Ok();
  }
  detail::KernelArgs args = shared_kernel_args(params);
  args.dy = params.dy;
  args.out = params.dx;
  args.saved_mean = params.mean;
  args.saved_rstd = params.rstd;
  detail::ChannelOutputs outputs;
  outputs.dweight = params.dweight;
  outputs.dbias = params.dbias;
  return launch_plan(plan, args, outputs, workspace, stream);
}

Status forward(const ForwardParams& params, cudaStream_t stream) {
  return plan_and_launch(
      params, [](const ForwardParams& p, Plan* plan) { return plan_forward(p, plan); }, launch_forward, stream);
}

Status backward(const BackwardParams& params, cudaStream_t stream) {
  return plan_and_launch(
      params, [](const BackwardParams& p, Plan* plan) { return plan_backward(p, plan); }, launch_backward, stream);
}

}  // namespace inorm
