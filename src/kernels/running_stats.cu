// Running-statistics update (use_input_stats with running_mean/var): per channel, the batch
// average of the per-instance mean and unbiased variance that the forward kernel left in the
// workspace; running = (1 - momentum) * running + momentum * average. A CTA per channel reduces
// over the batch in a fixed order, so the update is the same from run to run.
#include <cub/block/block_reduce.cuh>

#include "kernels/common.cuh"
#include "kernels/launchers.h"

namespace inorm::detail {
namespace {

constexpr int kRunningStatsThreads = 256;

template <typename Acc>
__global__ void __launch_bounds__(kRunningStatsThreads)
    update_running_stats_kernel(const Acc* slice_mean, const Acc* slice_var, int64_t batch,
                                int64_t channels, void* running_mean, void* running_var,
                                DType param_dtype, double momentum) {
  using Reduce = cub::BlockReduce<PairSum<double>, kRunningStatsThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  const int64_t channel = blockIdx.x;
  PairSum<double> sums{0.0, 0.0};
  for (int64_t n = threadIdx.x; n < batch; n += kRunningStatsThreads) {
    sums.first += static_cast<double>(slice_mean[n * channels + channel]);
    sums.second += static_cast<double>(slice_var[n * channels + channel]);
  }
  sums = Reduce(reduce_storage).Reduce(sums, PairSumOp<double>{});
  if (threadIdx.x != 0) return;
  const double inv_batch = 1.0 / static_cast<double>(batch);
  const double old_mean = load_param<double>(running_mean, param_dtype, channel);
  const double old_var = load_param<double>(running_var, param_dtype, channel);
  store_param(running_mean, param_dtype, channel, (1.0 - momentum) * old_mean + momentum * sums.first * inv_batch);
  store_param(running_var, param_dtype, channel, (1.0 - momentum) * old_var + momentum * sums.second * inv_batch);
}

}  // namespace

Status launch_running_stats(const Plan& plan, const ForwardParams& params, const void* slice_mean,
                            const void* slice_var, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(params.channels);
  if (stats_dtype(plan.dtype) == DType::kFloat64) {
    update_running_stats_kernel<double><<<grid, kRunningStatsThreads, 0, stream>>>(
        static_cast<const double*>(slice_mean), static_cast<const double*>(slice_var), params.batch,
        params.channels, params.running_mean, params.running_var, params.param_dtype, params.momentum);
  } else {
    update_running_stats_kernel<float><<<grid, kRunningStatsThreads, 0, stream>>>(
        static_cast<const float*>(slice_mean), static_cast<const float*>(slice_var), params.batch,
        params.channels, params.running_mean, params.running_var, params.param_dtype, params.momentum);
  }
  return cuda_status(cudaGetLastError(), "running-stats update launch");
}

}  // namespace inorm::detail
