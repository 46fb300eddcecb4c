// kElementwiseEval: use_input_stats == false, y = activation((x - running_mean[c]) *
// rsqrt(running_var[c] + eps) * weight[c] + bias[c]). Any S, including 1, either layout. A
// grid-stride loop over the flat tensor that tracks (position in the run of one channel, channel)
// incrementally, so no 64-bit division runs per element.
#include "config.h"
#include "kernels/common.cuh"
#include "kernels/launchers.h"

namespace inorm::detail {
namespace {

template <typename T>
__global__ void __launch_bounds__(kEvalThreads) eval_forward_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using Acc = AccOf<T>;
  const int64_t numel = args.num_slices * args.slice_len;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * kEvalThreads + threadIdx.x;
  if (start >= numel) return;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kEvalThreads;
  const int64_t len = args.channels_last ? 1 : args.slice_len;  // elements of one channel in a row
  const int64_t channels = args.channels;
  const int64_t step_offset = stride % len;
  const int64_t step_channel = (stride / len) % channels;
  int64_t offset = start % len;
  int64_t channel = (start / len) % channels;
  const T* x = static_cast<const T*>(args.x);
  T* y = static_cast<T*>(args.out);
  ActivationEpilogue<Acc>::of(args).visit([&](const auto& activation) {
    for (int64_t i = start; i < numel; i += stride) {
      const Acc mean = load_param<Acc>(args.running_mean, args.param_dtype, channel);
      const Acc var = load_param<Acc>(args.running_var, args.param_dtype, channel);
      const ChannelAffine<Acc> channel_params = channel_affine<Acc>(args, channel);
      const SliceAffine<Acc> affine = SliceAffine<Acc>::of_parts(
          mean, Acc(0), reciprocal_sqrt(var + static_cast<Acc>(args.eps)) * channel_params.weight, channel_params.bias);
      y[i] = Traits<T>::from_acc(activation.activate(affine.apply(Traits<T>::to_acc(x[i]))));
      offset += step_offset;
      channel += step_channel;
      if (offset >= len) {
        offset -= len;
        ++channel;
      }
      if (channel >= channels) channel -= channels;
    }
  });
}

}  // namespace

Status launch_eval(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    return launch_dependent("elementwise_eval launch", &eval_forward_kernel<decltype(tag)>,
                            static_cast<unsigned>(plan.grid), kEvalThreads, 0, stream, args);
  });
}

}  // namespace inorm::detail
