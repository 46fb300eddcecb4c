// shared_resident's launch (the kernels and what they do: kernels/shared_resident.cuh): the checks
// of a plan edited by hand, the kernel's occupancy, and the clusters the device holds.
#include <cuda_runtime_api.h>

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "config.h"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

Status shared_kernel(const Plan& plan, KernelFn* kernel) {
  const bool cluster = plan.exchange == Exchange::kCluster;
  const bool register_part = plan.register_len > 0;
  const bool wide_registers = holds_wide_register_part(plan);
  if (register_part && !wide_registers && plan.register_len != shared_register_len(plan.dtype, plan.inputs)) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan holds " + std::to_string(plan.register_len) +
                      " elements of each chunk in registers; the kernel holds " +
                      std::to_string(shared_register_len(plan.dtype, plan.inputs)) +
                      (plan.inputs == 1 ? ", " + std::to_string(shared_wide_register_len(plan.dtype)) : std::string()) +
                      " or none");
  }
  const Status status = dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    *kernel = shared_kernel_of(tag, plan);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  if (*kernel == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  register_part ? "inorm: a shared_resident plan with a register part needs the cluster exchange, " +
                                      std::to_string(kSharedRegisterThreads) +
                                      " threads, and the forward or a backward without an activation; a wide one, "
                                      "the forward's plain op"
                                : std::string("inorm: the plan names a shared_resident thread count that is not compiled in") +
                                      (plan.slice_clusters > 1 ? " for a slice spanning clusters (" +
                                                                     std::to_string(shared_threads_for(kSharedRegisterCtasPerSm)) +
                                                                     " threads, two CTAs an SM)"
                                                               : std::string()));
  }
  // Clusters of up to kSharedMaxClusterCtas CTAs; above 8 they are "non-portable" on sm_90.
  return allow_max_dynamic_smem(reinterpret_cast<const void*>(*kernel), /*non_portable_clusters=*/cluster);
}

// The launch of the plan: a cluster per group for the cluster exchange; a cooperative launch for
// the L2 exchange, whose CTAs wait for each other and so must all be resident (the launch refuses
// with an error instead of hanging).
cudaLaunchConfig_t launch_config(const Plan& plan, cudaLaunchAttribute* attribute, cudaStream_t stream) {
  if (plan.exchange == Exchange::kCluster) {
    *attribute = cluster_dimension(static_cast<unsigned>(shared_cluster_ctas(plan)));
  } else {
    attribute->id = cudaLaunchAttributeCooperative;
    attribute->val.cooperative = 1;
  }
  return launch_config_of(plan, stream, plan.exchange == Exchange::kNone ? nullptr : attribute);
}

}  // namespace

Status launch_shared(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  // A plan edited by hand must still fit the kernel's inboxes and its exchange (the clusters a
  // slice spans: the spanning kernel's inbox, config.h shared_max_slice_clusters).
  const bool spans_clusters = plan.slice_clusters > 1;
  if (plan.ctas_per_slice < 1 || plan.slice_clusters < 1 ||
      plan.slice_clusters > shared_max_slice_clusters(runs_runtime_epilogue(plan)) ||
      plan.ctas_per_slice % plan.slice_clusters != 0 ||
      shared_cluster_ctas(plan) > shared_max_group(plan.exchange == Exchange::kCluster) ||
      (spans_clusters && plan.exchange != Exchange::kCluster) ||
      (plan.exchange == Exchange::kNone && plan.ctas_per_slice != 1) || plan.exchange == Exchange::kAuto) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's shared_resident group (" + std::to_string(plan.ctas_per_slice) +
                      " CTAs per slice in " + std::to_string(plan.slice_clusters) + " cluster(s), exchange " +
                      exchange_name(plan.exchange) + ") is not one the planner makes");
  }
  // ... and its chunks must cover the slice, their shared part fit the buffer, and a register part
  // (loaded and stored in whole 16-byte vectors) start 16-byte aligned in x and y.
  const int64_t elem = static_cast<int64_t>(dtype_size(plan.dtype));
  const int64_t shared_part = plan.chunk_len - plan.register_len;
  const bool register_part_aligned = plan.register_len == 0 || (plan.vector_io && plan.coaligned &&
                                                                plan.chunk_len * elem % 16 == 0 &&
                                                                shared_part * elem % 16 == 0);
  if (plan.chunk_len < 1 || plan.register_len < 0 || shared_part < 1 ||
      plan.chunk_len * plan.ctas_per_slice < plan.slice_len ||
      plan.smem_bytes < shared_buffer_bytes(shared_part * elem, plan.inputs) || !register_part_aligned) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's shared_resident chunks (" + std::to_string(plan.chunk_len) + " elements, " +
                      std::to_string(plan.register_len) + " of them in registers, " +
                      std::to_string(plan.smem_bytes) + " bytes of buffer) are not ones the planner makes");
  }
  // A slice's clusters wait for each other's partials: the grid must hold them all at once.
  if (spans_clusters && plan.grid / shared_cluster_ctas(plan) < plan.slice_clusters) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's grid of " + std::to_string(plan.grid / shared_cluster_ctas(plan)) +
                      " clusters cannot hold a slice spanning " + std::to_string(plan.slice_clusters));
  }
  KernelFn kernel = nullptr;
  Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  // The arrival counts and the slice counter lie side by side, in that order (planner.cpp
  // workspace_layout): one memset zeroes whichever the plan has, each memset being a launch of its
  // own ahead of the kernel.
  unsigned char* const arrivals = reinterpret_cast<unsigned char*>(args.slice_arrivals);
  unsigned char* const counter = reinterpret_cast<unsigned char*>(args.slice_counter);
  if (arrivals != nullptr || counter != nullptr) {
    unsigned char* const first = arrivals != nullptr ? arrivals : counter;
    const unsigned char* const end = counter != nullptr ? counter + sizeof(unsigned long long)
                                                        : arrivals + plan.num_slices * sizeof(unsigned);
    status = cuda_status(cudaMemsetAsync(first, 0, static_cast<std::size_t>(end - first), stream),
                         "cudaMemsetAsync(slice arrivals and counter)");
    if (!status.ok()) return status;
  }
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = launch_config(plan, &attribute, stream);
  return cuda_status(cudaLaunchKernelEx(&config, kernel, args), "shared_resident launch");
}

Status shared_resident_occupancy(const Plan& plan, SharedOccupancy* occupancy) {
  KernelFn kernel = nullptr;
  Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  // The answer depends only on the kernel, its launch shape and the device; plan_forward runs on
  // every call of the PyTorch op, so each is asked once.
  using Key = std::tuple<const void*, int, int, int, int>;
  static std::mutex mutex;
  static std::map<Key, SharedOccupancy> known;
  int device = 0;
  status = cuda_status(cudaGetDevice(&device), "cudaGetDevice");
  if (!status.ok()) return status;
  const Key key{reinterpret_cast<const void*>(kernel), device, plan.threads, plan.smem_bytes, shared_cluster_ctas(plan)};
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = known.find(key);
  if (found != known.end()) {
    *occupancy = found->second;
    return Status::Ok();
  }
  SharedOccupancy answer;
  status = cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&answer.ctas_per_sm, kernel, plan.threads,
                                                                     static_cast<std::size_t>(plan.smem_bytes)),
                       "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!status.ok()) return status;
  // The cluster query refuses a CTA that cannot be resident at all.
  if (plan.exchange == Exchange::kCluster && answer.ctas_per_sm > 0) {
    cudaLaunchAttribute cluster{};
    const cudaLaunchConfig_t config = launch_config(plan, &cluster, nullptr);
    status = cuda_status(cudaOccupancyMaxActiveClusters(&answer.clusters, kernel, &config),
                         "cudaOccupancyMaxActiveClusters");
    if (!status.ok()) return status;
  }
  known.emplace(key, answer);
  *occupancy = answer;
  return Status::Ok();
}

Status fill_resident_clusters(DeviceLimits* limits) {
  static std::mutex mutex;
  static std::map<int, std::array<std::array<int, kSharedMaxClusterCtas + 1>, kSharedMaxCtasPerSm + 1>> known;
  int device = 0;
  Status status = cuda_status(cudaGetDevice(&device), "cudaGetDevice");
  if (!status.ok()) return status;
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(device);
  if (found == known.end()) {
    auto& table = known[device];  // zeros: unknown
    for (int ctas_per_sm = 1; ctas_per_sm <= kSharedMaxCtasPerSm && status.ok(); ++ctas_per_sm) {
      for (int cluster = 2; cluster <= kSharedMaxClusterCtas && status.ok(); ++cluster) {
        // The float32 kernel stands for every dtype: its launch bounds give each the same CTAs per SM.
        Plan probe;
        probe.dtype = DType::kFloat32;
        probe.exchange = Exchange::kCluster;
        probe.threads = shared_threads_for(ctas_per_sm);
        probe.smem_bytes = static_cast<int>(shared_sm_share(*limits, ctas_per_sm));
        probe.ctas_per_slice = cluster;
        probe.grid = cluster;
        SharedOccupancy occupancy;
        status = shared_resident_occupancy(probe, &occupancy);
        if (status.ok() && occupancy.ctas_per_sm >= ctas_per_sm) table[ctas_per_sm][cluster] = occupancy.clusters;
      }
    }
    if (!status.ok()) {
      known.erase(device);
      return status;
    }
    found = known.find(device);
  }
  for (int c = 0; c <= kSharedMaxCtasPerSm; ++c) {
    for (int k = 0; k <= kSharedMaxClusterCtas; ++k) limits->resident_clusters[c][k] = found->second[c][k];
  }
  return Status::Ok();
}

}  // namespace inorm::detail
