// The channel reduction that follows the slice engine's kernel when a pass has per-channel outputs:
// per channel, the two per-slice terms the kernel left in the workspace, summed over the batch in
// float64 in a fixed order (a CTA per channel), so the result is the same from run to run.
// - forward with running stats: the batch averages of the per-instance mean and unbiased variance,
//   running = (1 - momentum) * running + momentum * average;
// - backward: dweight = sum of sum(dy * xhat), dbias = sum of sum(dy);
// - GroupNorm's backward, whose slices span several channels: per sample, the channel's partial
//   sums A = sum(dz) and B = sum(dz * (x - center)) of each chunk that overlaps it, with its slice's
//   rstd and r (kernels/backward_op.cuh), give dweight += rstd * (B - r * A) and dbias += A.
#include <cub/block/block_reduce.cuh>

#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

// A CTA a channel: a warp where the batch is at most 32 (a reduction without barriers; the small
// tensors whose training steps this kernel ends), else 256 threads.
constexpr int kChannelReduceThreads = 256;
constexpr int kSmallBatchThreads = 32;

// Where GroupNorm's per-channel partials lie (plan_internal.h channel_partials_per_slice).
struct ChannelPartials {
  const void* sums;  // stats type pairs, or null: the per-slice terms are the sums
  int64_t per_slice;
  int64_t chunk_len;
  int64_t channel_len;  // plan_internal.h channel_partial_channel_len
  int64_t slice_channels;
};

template <typename Acc, int kThreads>
__global__ void __launch_bounds__(kThreads)
    channel_reduce_kernel(const Acc* term0, const Acc* term1, int64_t batch, int64_t channels, DType param_dtype,
                          ChannelPartials partials, ChannelOutputs outputs) {
  begin_dependent_kernel();
  using Reduce = cub::BlockReduce<PairSum<double>, kThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  const int64_t channel = blockIdx.x;
  PairSum<double> sums{0.0, 0.0};
  if (partials.sums == nullptr) {
    for (int64_t n = threadIdx.x; n < batch; n += kThreads) {
      sums.first += static_cast<double>(term0[n * channels + channel]);
      sums.second += static_cast<double>(term1[n * channels + channel]);
    }
  } else {
    // GroupNorm: the channel's slice in each sample, its place there, and the chunks it overlaps
    // (64-bit divisions, taken only here).
    const int64_t local = channel % partials.slice_channels;
    const int64_t groups = channels / partials.slice_channels;
    const int64_t first_chunk = local * partials.channel_len / partials.chunk_len;
    const int64_t last_chunk = ((local + 1) * partials.channel_len - 1) / partials.chunk_len;
    for (int64_t n = threadIdx.x; n < batch; n += kThreads) {
      const int64_t slice = n * groups + channel / partials.slice_channels;
      const Acc* pairs = static_cast<const Acc*>(partials.sums) + 2 * (slice * partials.per_slice + local);
      double dz = 0.0;
      double dz_d = 0.0;
      for (int64_t k = first_chunk; k <= last_chunk; ++k) {
        dz += static_cast<double>(pairs[2 * k]);
        dz_d += static_cast<double>(pairs[2 * k + 1]);
      }
      sums.first += static_cast<double>(term0[slice]) * (dz_d - static_cast<double>(term1[slice]) * dz);
      sums.second += dz;
    }
  }
  sums = Reduce(reduce_storage).Reduce(sums, SumOp{});
  if (threadIdx.x != 0) return;
  if (outputs.running_mean != nullptr) {
    const double inv_batch = 1.0 / static_cast<double>(batch);
    const double momentum = outputs.momentum;
    const double old_mean = load_param<double>(outputs.running_mean, param_dtype, channel);
    const double old_var = load_param<double>(outputs.running_var, param_dtype, channel);
    store_param(outputs.running_mean, param_dtype, channel, (1.0 - momentum) * old_mean + momentum * sums.first * inv_batch);
    store_param(outputs.running_var, param_dtype, channel, (1.0 - momentum) * old_var + momentum * sums.second * inv_batch);
  }
  if (outputs.dweight != nullptr) store_param(outputs.dweight, param_dtype, channel, sums.first);
  if (outputs.dbias != nullptr) store_param(outputs.dbias, param_dtype, channel, sums.second);
}

}  // namespace

Status launch_channel_reduce(const Plan& plan, const KernelArgs& args, const ChannelOutputs& outputs,
                             cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(plan.channels);
  const int64_t batch = batch_of(plan);
  ChannelPartials partials{args.channel_partials, args.channel_partials_per_slice, channel_partial_chunk_len(plan),
                           channel_partial_channel_len(plan), plan.slice_channels};
  // A programmatic dependent of the slice kernel before it: its CTAs wait for the per-slice terms.
  const auto launch = [&](auto tag) {
    using Acc = decltype(tag);
    const auto with = [&](auto kernel, int threads) {
      return launch_dependent("channel reduction launch", kernel, grid, threads, 0, stream,
                              static_cast<const Acc*>(args.slice_term0), static_cast<const Acc*>(args.slice_term1),
                              batch, plan.channels, plan.param_dtype, partials, outputs);
    };
    return batch <= kSmallBatchThreads ? with(&channel_reduce_kernel<Acc, kSmallBatchThreads>, kSmallBatchThreads)
                                       : with(&channel_reduce_kernel<Acc, kChannelReduceThreads>, kChannelReduceThreads);
  };
  return stats_dtype(plan.dtype) == DType::kFloat64 ? launch(double{}) : launch(float{});
}

}  // namespace inorm::detail
