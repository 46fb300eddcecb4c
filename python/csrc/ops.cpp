// The PyTorch binding of inorm: six operators in the `inorm` namespace. It only translates tensors
// to inorm::ForwardParams / BackwardParams, allocates through torch and launches on the current
// stream; every kernel and every numerical decision lives in the torch-free library.
//
//   inorm::instance_norm_forward  functional: returns the running statistics it would write, so that
//                                 torch.compile traces it without mutation; its autograd formula
//                                 (InstanceNormFunction, C++: no Python runs on a call) calls
//   inorm::instance_norm_backward the gradients of the forward.
//   inorm::instance_norm          the user-facing op: running stats are mutable arguments (Tensor(a!)),
//                                 written in place; CompositeImplicitAutograd over the functional op.
//   inorm::group_norm_forward,    GroupNorm (F.group_norm), the same way: no running stats, so the
//   inorm::group_norm_backward,   user-facing op returns the functional op's output.
//   inorm::group_norm
//
// CUDA tensors run inorm's kernels in NCHW or channels_last (the outputs keep the input's memory
// format; torch.nn.GroupNorm's are NCHW on CUDA, channels_last on the CPU); every other device
// (CPU, ...) runs ATen's own implementation (instance norm: batch norm over the [1, N * C, S] view,
// as at::instance_norm does; group norm: native_group_norm), so the values are torch.nn's there,
// and the outputs are given the same memory format as on CUDA. Under CUDA autocast GroupNorm runs in
// float32, as torch.group_norm does (InstanceNorm, which autocast leaves alone, in the input's dtype).
#include <Python.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "inorm/inorm.h"

namespace inorm_torch {
namespace {

using at::Tensor;
using OptionalTensor = std::optional<Tensor>;

inorm::DType to_inorm_dtype(at::ScalarType type, const char* what) {
  switch (type) {
    case at::kFloat: return inorm::DType::kFloat32;
    case at::kHalf: return inorm::DType::kFloat16;
    case at::kBFloat16: return inorm::DType::kBFloat16;
    case at::kDouble: return inorm::DType::kFloat64;
    default:  // NotImplementedError, as torch's own kernels say for a dtype they lack
      TORCH_CHECK_NOT_IMPLEMENTED(false, "inorm: ", what, " must be float32, float16, bfloat16 or float64, got ", type);
  }
}

at::ScalarType stats_scalar_type(at::ScalarType input_type) {
  return input_type == at::kDouble ? at::kDouble : at::kFloat;
}

// The CUDA kernels allocate straight from the caching allocator, as ATen's own CUDA kernels do:
// at::empty would pass through the dispatcher once more (host time on every call).
Tensor empty_cuda(at::IntArrayRef sizes, at::ScalarType dtype, at::Device device,
                  at::MemoryFormat format = at::MemoryFormat::Contiguous) {
  return at::detail::empty_cuda(sizes, dtype, device, format);
}

// Integers in error messages are formatted here, never streamed (c10::str): in the H200's Python a
// message that streamed an integer from this library (a shape, a dimension count) crashed the
// process, while those of strings alone raised as they should (std::to_string takes no locale).
std::string shape_text(at::IntArrayRef sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

void check_status(const inorm::Status& status) {
  if (status.ok()) return;
  if (status.code() == inorm::StatusCode::kUnsupported) TORCH_CHECK_NOT_IMPLEMENTED(false, status.message());
  TORCH_CHECK(false, status.message());
}

// The ops' activation argument (inorm.h Activation): "none", "relu", "leaky_relu" or "silu"; another
// is a RuntimeError, as torch's gelu says of an unknown `approximate`.
inorm::Activation to_activation(c10::string_view name) {
  for (const inorm::Activation activation : {inorm::Activation::kNone, inorm::Activation::kRelu,
                                             inorm::Activation::kLeakyRelu, inorm::Activation::kSilu}) {
    if (name == inorm::activation_name(activation)) return activation;
  }
  TORCH_CHECK(false, "inorm: unknown activation '", name, "'; expected none, relu, leaky_relu or silu");
}

// weight, bias and running stats: [C], on the input's device, one dtype among them (the library
// takes a single parameter dtype).
void check_parameter(const OptionalTensor& tensor, const char* name, const Tensor& input,
                     std::optional<at::ScalarType>* param_type) {
  if (!tensor.has_value()) return;
  const int64_t channels = input.size(1);
  TORCH_CHECK(tensor->device() == input.device(), "Expected all tensors to be on the same device: inorm's ", name,
              " is on ", tensor->device(), " but input is on ", input.device());
  TORCH_CHECK(tensor->dim() == 1 && tensor->size(0) == channels, "inorm: ", name, " must have shape [",
              std::to_string(channels), "] (the input's channels), got ", shape_text(tensor->sizes()));
  to_inorm_dtype(tensor->scalar_type(), name);
  if (!param_type->has_value()) {
    *param_type = tensor->scalar_type();
  } else {
    TORCH_CHECK(**param_type == tensor->scalar_type(),
                "inorm: weight, bias, running_mean and running_var must share one dtype; ", name,
                " is ", tensor->scalar_type(), ", another is ", **param_type);
  }
}

// The forward's arguments, on every device: returns the parameters' dtype (none given: nullopt).
std::optional<at::ScalarType> check_forward_args(const Tensor& input, const OptionalTensor& weight,
                                                 const OptionalTensor& bias, const OptionalTensor& running_mean,
                                                 const OptionalTensor& running_var, bool use_input_stats) {
  TORCH_CHECK(input.dim() >= 2, "inorm: input must have at least 2 dimensions (N, C, ...), got ",
              std::to_string(input.dim()));
  TORCH_CHECK(use_input_stats || (running_mean.has_value() && running_var.has_value()),
              "Expected running_mean and running_var to be defined when use_input_stats is false");
  TORCH_CHECK(running_mean.has_value() == running_var.has_value(),
              "inorm: running_mean and running_var must be given together");
  std::optional<at::ScalarType> param_type;
  check_parameter(weight, "weight", input, &param_type);
  check_parameter(bias, "bias", input, &param_type);
  check_parameter(running_mean, "running_mean", input, &param_type);
  check_parameter(running_var, "running_var", input, &param_type);
  return param_type;
}

// grad_output: the input's shape, device and dtype.
void check_grad_output(const Tensor& grad_output, const Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "inorm: input must have at least 2 dimensions (N, C, ...), got ",
              std::to_string(input.dim()));
  TORCH_CHECK(grad_output.sizes() == input.sizes(), "inorm: grad_output has shape ", shape_text(grad_output.sizes()),
              ", input ", shape_text(input.sizes()));
  TORCH_CHECK(grad_output.device() == input.device() && grad_output.scalar_type() == input.scalar_type(),
              "inorm: grad_output must be on the input's device with its dtype, got ", grad_output.device(), " ",
              grad_output.scalar_type(), " against ", input.device(), " ", input.scalar_type());
}

// The forward's instance statistics, as the backward takes them: `count` values each.
void check_saved_stats(const OptionalTensor& mean, const OptionalTensor& rstd, const Tensor& input, int64_t count) {
  const auto stats_type = stats_scalar_type(input.scalar_type());
  for (const auto& [tensor, name] : {std::pair{&mean, "mean"}, std::pair{&rstd, "rstd"}}) {
    TORCH_CHECK(tensor->has_value() && (*tensor)->device() == input.device() &&
                    (*tensor)->scalar_type() == stats_type && (*tensor)->numel() == count,
                "inorm: the backward needs the forward's ", name, " (", stats_type, ", ", std::to_string(count),
                " values on ", input.device(), ")");
  }
}

// The backward's arguments, on every device: returns the parameters' dtype (none given: nullopt).
std::optional<at::ScalarType> check_backward_args(const Tensor& grad_output, const Tensor& input,
                                                  const OptionalTensor& weight, const OptionalTensor& mean,
                                                  const OptionalTensor& rstd, const OptionalTensor& running_mean,
                                                  const OptionalTensor& running_var, bool use_input_stats,
                                                  const OptionalTensor& bias) {
  check_grad_output(grad_output, input);
  std::optional<at::ScalarType> param_type;
  check_parameter(weight, "weight", input, &param_type);
  check_parameter(bias, "bias", input, &param_type);
  check_parameter(running_mean, "running_mean", input, &param_type);
  check_parameter(running_var, "running_var", input, &param_type);
  if (use_input_stats) {
    check_saved_stats(mean, rstd, input, input.size(0) * input.size(1));
  } else {
    TORCH_CHECK(running_mean.has_value() && running_var.has_value(),
                "Expected running_mean and running_var to be defined when use_input_stats is false");
  }
  return param_type;
}

// GroupNorm's arguments, with torch.group_norm's checks and messages: returns the parameters' dtype.
std::optional<at::ScalarType> check_group_norm_args(const Tensor& input, int64_t groups, const OptionalTensor& weight,
                                                    const OptionalTensor& bias) {
  TORCH_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ",
              std::to_string(input.dim()));
  TORCH_CHECK(groups > 0, "Expected num groups to be greater than 0, got ", std::to_string(groups));
  const int64_t channels = input.size(1);
  TORCH_CHECK(channels % groups == 0, "Expected number of channels in input to be divisible by num_groups, but got "
              "input of shape ", shape_text(input.sizes()), " and num_groups=", std::to_string(groups));
  for (const auto& [tensor, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    TORCH_CHECK(!tensor->has_value() || ((*tensor)->dim() == 1 && (*tensor)->numel() == channels), "Expected ", name,
                " to be a vector of size equal to the number of channels in input, but got ", name, " of shape ",
                shape_text((*tensor)->sizes()), " and input of shape ", shape_text(input.sizes()));
  }
  std::optional<at::ScalarType> param_type;
  check_parameter(weight, "weight", input, &param_type);
  check_parameter(bias, "bias", input, &param_type);
  return param_type;
}

std::optional<at::ScalarType> check_group_norm_backward_args(const Tensor& grad_output, const Tensor& input,
                                                             const OptionalTensor& mean, const OptionalTensor& rstd,
                                                             const OptionalTensor& weight, int64_t groups,
                                                             const OptionalTensor& bias) {
  const std::optional<at::ScalarType> param_type = check_group_norm_args(input, groups, weight, bias);
  check_grad_output(grad_output, input);
  check_saved_stats(mean, rstd, input, input.size(0) * groups);
  return param_type;
}

// The input's batch, channels and spatial extents in the library's terms. Contiguous NCHW depends
// only on the product of the spatial extents: a 2-D input is S = 1, and more than 3 spatial dims
// are flattened into one.
template <typename Params>
void set_shape(const Tensor& x, Params* params) {
  params->batch = x.size(0);
  params->channels = x.size(1);
  const int64_t spatial_dims = x.dim() - 2;
  if (spatial_dims >= 1 && spatial_dims <= 3) {
    params->spatial_rank = static_cast<int>(spatial_dims);
    for (int64_t d = 0; d < spatial_dims; ++d) params->spatial[d] = x.size(2 + d);
  } else {
    params->spatial_rank = 1;
    params->spatial[0] = c10::multiply_integers(x.sizes().slice(2));
  }
}

// The memory format the kernels run `input` in, and its outputs have: channels_last (4-D) or
// channels_last_3d (5-D) where the input is dense in it and not also contiguous NCHW, else NCHW.
at::MemoryFormat kernel_format(const Tensor& input) {
  if (input.is_contiguous()) return at::MemoryFormat::Contiguous;
  if (input.dim() == 4 && input.is_contiguous(at::MemoryFormat::ChannelsLast)) return at::MemoryFormat::ChannelsLast;
  if (input.dim() == 5 && input.is_contiguous(at::MemoryFormat::ChannelsLast3d)) return at::MemoryFormat::ChannelsLast3d;
  return at::MemoryFormat::Contiguous;
}

inorm::Layout layout_of(at::MemoryFormat format) {
  return format == at::MemoryFormat::Contiguous ? inorm::Layout::kContiguous : inorm::Layout::kChannelsLast;
}

// The kernels read NCHW or channels_last; any other strides are copied to NCHW first, one extra
// read and write: said once rather than lost silently.
Tensor input_in(const Tensor& input, at::MemoryFormat format) {
  if (format == at::MemoryFormat::Contiguous && !input.is_contiguous()) {
    TORCH_WARN_ONCE("inorm: input is neither contiguous nor channels_last; it is copied to a contiguous "
                    "NCHW tensor first, and the output is contiguous NCHW.");
  }
  return input.contiguous(format);
}

// dy is read in x's memory format. A dense dy in the other one (an NCHW gradient for channels_last
// input, as a layer after the norm may return) is copied first, one extra read and write: said
// once. An expanded dy (a sum's gradient) is copied without a word, as the loss made it.
Tensor grad_in(const Tensor& grad_output, at::MemoryFormat format) {
  if (!grad_output.is_contiguous(format) && grad_output.is_non_overlapping_and_dense()) {
    TORCH_WARN_ONCE("inorm: grad_output is not in the input's memory format (",
                    format == at::MemoryFormat::Contiguous ? "contiguous" : "channels_last",
                    "); it is copied to that format first, one extra read and write.");
  }
  return grad_output.contiguous(format);
}

// Plans for the current device (a cached plan after the first call of a shape) and launches on the
// current stream with a workspace, where the plan needs one, from torch's caching allocator
// (stream-ordered, and valid under CUDA graph capture).
template <typename Params, typename PlanFn, typename LaunchFn>
void plan_and_launch(const Params& params, const Tensor& like, PlanFn&& plan_fn, LaunchFn&& launch_fn) {
  inorm::Plan plan;
  check_status(plan_fn(params, &plan));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(like.device().index());
  const Tensor workspace =
      plan.workspace_bytes > 0 ? empty_cuda({static_cast<int64_t>(plan.workspace_bytes)}, at::kByte, like.device())
                               : Tensor();
  check_status(launch_fn(plan, params, workspace.defined() ? workspace.data_ptr() : nullptr, stream));
}

// Where the forward writes besides y: the instance statistics ([N, C], or undefined: not written)
// and the running stats (contiguous [C]), updated with use_input_stats, read without.
struct ForwardTargets {
  Tensor mean;
  Tensor rstd;
  Tensor running_mean;
  Tensor running_var;
};

// inorm's forward on the input's device and current stream; returns y (in kernel_format). groups:
// 0 for InstanceNorm, else GroupNorm's.
Tensor launch_forward_kernels(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                              const std::optional<at::ScalarType>& param_type, const ForwardTargets& targets,
                              bool use_input_stats, double momentum, double eps, inorm::Activation activation,
                              double negative_slope, int64_t groups) {
  const inorm::DType dtype = to_inorm_dtype(input.scalar_type(), "input");
  const c10::cuda::CUDAGuard guard(input.device());
  const at::MemoryFormat format = kernel_format(input);
  const Tensor x = input_in(input, format);
  Tensor output = empty_cuda(x.sizes(), x.scalar_type(), x.device(), format);
  const Tensor weight_c = weight.has_value() ? weight->contiguous() : Tensor();
  const Tensor bias_c = bias.has_value() ? bias->contiguous() : Tensor();
  const auto pointer = [](const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; };

  inorm::ForwardParams params;
  params.x = x.data_ptr();
  params.y = output.data_ptr();
  params.dtype = dtype;
  params.layout = layout_of(format);
  set_shape(x, &params);
  params.eps = eps;
  params.weight = pointer(weight_c);
  params.bias = pointer(bias_c);
  params.param_dtype = param_type.has_value() ? to_inorm_dtype(*param_type, "parameters") : inorm::DType::kFloat32;
  params.use_input_stats = use_input_stats;
  params.momentum = momentum;
  params.mean = pointer(targets.mean);
  params.rstd = pointer(targets.rstd);
  params.running_mean = pointer(targets.running_mean);
  params.running_var = pointer(targets.running_var);
  params.activation = activation;
  params.negative_slope = negative_slope;
  params.groups = groups;
  plan_and_launch(
      params, x, [](const inorm::ForwardParams& p, inorm::Plan* plan) { return inorm::plan_forward(p, plan); },
      inorm::launch_forward);
  return output;
}

// Returns (output, mean [N, C], rstd [N, C], new_running_mean, new_running_var). mean and rstd are
// the instance statistics (empty when use_input_stats is false); the new running stats are empty
// unless use_input_stats and running stats are given.
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> instance_norm_forward_cuda(
    const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
    const OptionalTensor& running_mean, const OptionalTensor& running_var, bool use_input_stats,
    double momentum, double eps, c10::string_view activation, double negative_slope) {
  TORCH_CHECK(input.is_cuda(), "inorm: the CUDA kernel got an input on ", input.device());
  const std::optional<at::ScalarType> param_type =
      check_forward_args(input, weight, bias, running_mean, running_var, use_input_stats);
  const at::ScalarType stats_type = stats_scalar_type(input.scalar_type());
  const bool update_running = use_input_stats && running_mean.has_value();
  ForwardTargets targets;
  if (use_input_stats) {
    targets.mean = empty_cuda({input.size(0), input.size(1)}, stats_type, input.device());
    targets.rstd = empty_cuda({input.size(0), input.size(1)}, stats_type, input.device());
  }
  // This functional op updates copies of the running stats and returns them.
  if (update_running) {
    targets.running_mean = running_mean->clone(at::MemoryFormat::Contiguous);
    targets.running_var = running_var->clone(at::MemoryFormat::Contiguous);
  } else if (!use_input_stats) {
    targets.running_mean = running_mean->contiguous();
    targets.running_var = running_var->contiguous();
  }
  Tensor output = launch_forward_kernels(input, weight, bias, param_type, targets, use_input_stats, momentum, eps,
                                         to_activation(activation), negative_slope, 0);
  const auto or_empty = [&](const Tensor& t, bool wanted) {
    return wanted ? t : empty_cuda({0}, stats_type, input.device());
  };
  return {output, or_empty(targets.mean, use_input_stats), or_empty(targets.rstd, use_input_stats),
          or_empty(targets.running_mean, update_running), or_empty(targets.running_var, update_running)};
}

// inorm's backward on the input's device and current stream, arguments checked; groups: 0 for
// InstanceNorm, else GroupNorm's.
std::tuple<Tensor, Tensor, Tensor> launch_backward_kernels(
    const Tensor& grad_output, const Tensor& input, const OptionalTensor& weight, const OptionalTensor& mean,
    const OptionalTensor& rstd, const OptionalTensor& running_mean, const OptionalTensor& running_var,
    bool use_input_stats, double eps, std::array<bool, 3> output_mask, const OptionalTensor& bias,
    inorm::Activation fused, double negative_slope, const std::optional<at::ScalarType>& param_type, int64_t groups) {
  const inorm::DType dtype = to_inorm_dtype(input.scalar_type(), "input");
  const int64_t channels = input.size(1);

  const c10::cuda::CUDAGuard guard(input.device());
  const at::MemoryFormat format = kernel_format(input);  // dy and dx follow x
  const Tensor x = input_in(input, format);
  const Tensor dy = grad_in(grad_output, format);
  const at::ScalarType grad_type = param_type.value_or(at::kFloat);
  Tensor grad_input = output_mask[0] ? empty_cuda(x.sizes(), x.scalar_type(), x.device(), format)
                                     : empty_cuda({0}, x.scalar_type(), x.device());
  Tensor grad_weight = empty_cuda({output_mask[1] ? channels : 0}, grad_type, x.device());
  Tensor grad_bias = empty_cuda({output_mask[2] ? channels : 0}, grad_type, x.device());
  const Tensor weight_c = weight.has_value() ? weight->contiguous() : Tensor();
  // The bias places the activation's z; without an activation it plays no part.
  const Tensor bias_c = fused != inorm::Activation::kNone && bias.has_value() ? bias->contiguous() : Tensor();
  const Tensor mean_c = use_input_stats ? mean->contiguous() : Tensor();
  const Tensor rstd_c = use_input_stats ? rstd->contiguous() : Tensor();
  const Tensor running_mean_c = use_input_stats ? Tensor() : running_mean->contiguous();
  const Tensor running_var_c = use_input_stats ? Tensor() : running_var->contiguous();

  inorm::BackwardParams params;
  params.x = x.data_ptr();
  params.dy = dy.data_ptr();
  params.dx = output_mask[0] ? grad_input.data_ptr() : nullptr;
  params.dtype = dtype;
  params.layout = layout_of(format);
  set_shape(x, &params);
  params.eps = eps;
  params.weight = weight.has_value() ? weight_c.data_ptr() : nullptr;
  params.param_dtype = to_inorm_dtype(param_type.value_or(at::kFloat), "parameters");
  params.use_input_stats = use_input_stats;
  if (use_input_stats) {
    params.mean = mean_c.data_ptr();
    params.rstd = rstd_c.data_ptr();
  } else {
    params.running_mean = running_mean_c.data_ptr();
    params.running_var = running_var_c.data_ptr();
  }
  params.dweight = output_mask[1] ? grad_weight.data_ptr() : nullptr;
  params.dbias = output_mask[2] ? grad_bias.data_ptr() : nullptr;
  params.bias = bias_c.defined() ? bias_c.data_ptr() : nullptr;
  params.activation = fused;
  params.negative_slope = negative_slope;
  params.groups = groups;
  plan_and_launch(
      params, x, [](const inorm::BackwardParams& p, inorm::Plan* plan) { return inorm::plan_backward(p, plan); },
      inorm::launch_backward);
  return {grad_input, grad_weight, grad_bias};
}

// Returns (grad_input, grad_weight, grad_bias), each an empty [0] tensor where output_mask says it
// is not wanted. With use_input_stats, mean and rstd are what the forward returned; without, the
// running stats normalized the input. grad_weight and grad_bias take the dtype of weight (else of
// the running stats, else float32).
std::tuple<Tensor, Tensor, Tensor> instance_norm_backward_cuda(
    const Tensor& grad_output, const Tensor& input, const OptionalTensor& weight, const OptionalTensor& mean,
    const OptionalTensor& rstd, const OptionalTensor& running_mean, const OptionalTensor& running_var,
    bool use_input_stats, double eps, std::array<bool, 3> output_mask, const OptionalTensor& bias,
    c10::string_view activation, double negative_slope) {
  TORCH_CHECK(input.is_cuda(), "inorm: the CUDA kernel got an input on ", input.device());
  const std::optional<at::ScalarType> param_type = check_backward_args(
      grad_output, input, weight, mean, rstd, running_mean, running_var, use_input_stats, bias);
  return launch_backward_kernels(grad_output, input, weight, mean, rstd, running_mean, running_var, use_input_stats,
                                 eps, output_mask, bias, to_activation(activation), negative_slope, param_type, 0);
}

// ---- GroupNorm on CUDA -----------------------------------------------------------------------------

// Returns (output, mean [N, groups], rstd [N, groups]); output in kernel_format(input).
std::tuple<Tensor, Tensor, Tensor> group_norm_forward_cuda(const Tensor& input, int64_t num_groups,
                                                           const OptionalTensor& weight, const OptionalTensor& bias,
                                                           double eps, c10::string_view activation,
                                                           double negative_slope) {
  TORCH_CHECK(input.is_cuda(), "inorm: the CUDA kernel got an input on ", input.device());
  const std::optional<at::ScalarType> param_type = check_group_norm_args(input, num_groups, weight, bias);
  const at::ScalarType stats_type = stats_scalar_type(input.scalar_type());
  ForwardTargets targets;
  targets.mean = empty_cuda({input.size(0), num_groups}, stats_type, input.device());
  targets.rstd = empty_cuda({input.size(0), num_groups}, stats_type, input.device());
  Tensor output = launch_forward_kernels(input, weight, bias, param_type, targets, true, 0.0, eps,
                                         to_activation(activation), negative_slope, num_groups);
  return {output, targets.mean, targets.rstd};
}

// Returns (grad_input, grad_weight, grad_bias), as instance_norm_backward_cuda does, from the
// forward's mean and rstd.
std::tuple<Tensor, Tensor, Tensor> group_norm_backward_cuda(
    const Tensor& grad_output, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const OptionalTensor& weight, int64_t num_groups, double eps, std::array<bool, 3> output_mask,
    const OptionalTensor& bias, c10::string_view activation, double negative_slope) {
  TORCH_CHECK(input.is_cuda(), "inorm: the CUDA kernel got an input on ", input.device());
  const std::optional<at::ScalarType> param_type =
      check_group_norm_backward_args(grad_output, input, mean, rstd, weight, num_groups, bias);
  return launch_backward_kernels(grad_output, input, weight, mean, rstd, std::nullopt, std::nullopt, true, eps,
                                 output_mask, bias, to_activation(activation), negative_slope, param_type, num_groups);
}

using ForwardResult = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>;
using BackwardResult = std::tuple<Tensor, Tensor, Tensor>;

// The ops through the dispatcher (from the autograd formula and the user-facing op).
const auto& forward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("inorm::instance_norm_forward", "")
                             .typed<ForwardResult(const Tensor&, const OptionalTensor&, const OptionalTensor&,
                                                  const OptionalTensor&, const OptionalTensor&, bool, double, double,
                                                  c10::string_view, double)>();
  return op;
}
const auto& backward_op() {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("inorm::instance_norm_backward", "")
          .typed<BackwardResult(const Tensor&, const Tensor&, const OptionalTensor&, const OptionalTensor&,
                                const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, bool, double,
                                std::array<bool, 3>, const OptionalTensor&, c10::string_view, double)>();
  return op;
}
using GroupNormResult = std::tuple<Tensor, Tensor, Tensor>;
const auto& group_norm_forward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("inorm::group_norm_forward", "")
                             .typed<GroupNormResult(const Tensor&, int64_t, const OptionalTensor&,
                                                    const OptionalTensor&, double, c10::string_view, double)>();
  return op;
}
const auto& group_norm_backward_op() {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("inorm::group_norm_backward", "")
          .typed<BackwardResult(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const OptionalTensor&,
                                int64_t, double, std::array<bool, 3>, const OptionalTensor&, c10::string_view,
                                double)>();
  return op;
}

// ---- Every device but CUDA: ATen's instance norm, as at::instance_norm computes it -------------------

// The [1, N * C, S...] view that at::instance_norm hands to batch norm, and a [C] tensor repeated
// for each of the N instances.
Tensor batch_norm_view(const Tensor& tensor) {
  std::vector<int64_t> shape = tensor.sizes().vec();
  shape[1] *= shape[0];
  shape[0] = 1;
  return tensor.contiguous().view(shape);
}
OptionalTensor repeated(const OptionalTensor& tensor, int64_t batch) {
  return tensor.has_value() ? OptionalTensor(tensor->repeat({batch})) : std::nullopt;
}
// The running stats repeated per instance, in the dtype at::instance_norm runs them in: the input's
// when no affine parameter would make the batch norm mixed-type.
OptionalTensor repeated_running(const OptionalTensor& tensor, int64_t batch, const Tensor& input, bool affine) {
  if (!tensor.has_value() || affine) return repeated(tensor, batch);
  return tensor->to(input.scalar_type()).repeat({batch});
}

// The activation, and dy times its derivative at z, with ATen's own ops: torch.nn's results.
void activate_in_place(Tensor& z, inorm::Activation activation, double negative_slope) {
  switch (activation) {
    case inorm::Activation::kRelu: at::relu_(z); break;
    case inorm::Activation::kLeakyRelu: at::leaky_relu_(z, negative_slope); break;
    case inorm::Activation::kSilu: at::silu_(z); break;
    default: break;
  }
}
Tensor activation_backward(const Tensor& grad_output, const Tensor& z, inorm::Activation activation,
                           double negative_slope) {
  switch (activation) {
    case inorm::Activation::kRelu: return at::threshold_backward(grad_output, z, 0);
    case inorm::Activation::kLeakyRelu: return at::leaky_relu_backward(grad_output, z, negative_slope, false);
    case inorm::Activation::kSilu: return at::silu_backward(grad_output, z);
    default: return grad_output;
  }
}

ForwardResult instance_norm_forward_fallback(const Tensor& input, const OptionalTensor& weight,
                                             const OptionalTensor& bias, const OptionalTensor& running_mean,
                                             const OptionalTensor& running_var, bool use_input_stats,
                                             double momentum, double eps, c10::string_view activation,
                                             double negative_slope) {
  check_forward_args(input, weight, bias, running_mean, running_var, use_input_stats);
  const int64_t batch = input.size(0);
  const int64_t channels = input.size(1);
  const auto stats_options = input.options().dtype(stats_scalar_type(input.scalar_type()));
  // native_batch_norm updates the repeated running stats in place; the op returns their batch mean.
  const bool affine = weight.has_value() || bias.has_value();
  OptionalTensor instance_running_mean = repeated_running(running_mean, batch, input, affine);
  OptionalTensor instance_running_var = repeated_running(running_var, batch, input, affine);
  auto [output, saved_mean, saved_invstd] =
      at::native_batch_norm(batch_norm_view(input), repeated(weight, batch), repeated(bias, batch),
                            instance_running_mean, instance_running_var, use_input_stats, momentum, eps);
  activate_in_place(output, to_activation(activation), negative_slope);
  Tensor mean = at::empty({0}, stats_options);
  Tensor rstd = at::empty({0}, stats_options);
  if (use_input_stats) {
    mean = saved_mean.view({batch, channels}).to(stats_options.dtype());
    rstd = saved_invstd.view({batch, channels}).to(stats_options.dtype());
  }
  const bool update_running = use_input_stats && running_mean.has_value();
  const auto batch_mean = [&](const OptionalTensor& instances, const OptionalTensor& running) {
    return update_running ? instances->view({batch, channels}).mean(0).to(running->scalar_type())
                          : at::empty({0}, stats_options);
  };
  Tensor new_running_mean = batch_mean(instance_running_mean, running_mean);
  Tensor new_running_var = batch_mean(instance_running_var, running_var);
  // The output in the memory format the CUDA kernels give it (channels_last in, channels_last out).
  return {output.view(input.sizes()).contiguous(kernel_format(input)), mean, rstd, new_running_mean, new_running_var};
}

BackwardResult instance_norm_backward_fallback(const Tensor& output_grad, const Tensor& input,
                                               const OptionalTensor& weight, const OptionalTensor& mean,
                                               const OptionalTensor& rstd, const OptionalTensor& running_mean,
                                               const OptionalTensor& running_var, bool use_input_stats, double eps,
                                               std::array<bool, 3> output_mask, const OptionalTensor& bias,
                                               c10::string_view activation, double negative_slope) {
  const std::optional<at::ScalarType> param_type = check_backward_args(
      output_grad, input, weight, mean, rstd, running_mean, running_var, use_input_stats, bias);
  // With an activation, the norm's gradient is that of its output z, recomputed (the forward
  // without the activation, running stats left as they are).
  const inorm::Activation fused = to_activation(activation);
  Tensor grad_output = output_grad;
  if (fused != inorm::Activation::kNone) {
    const Tensor z = std::get<0>(instance_norm_forward_fallback(
        input, weight, bias, use_input_stats ? std::nullopt : running_mean,
        use_input_stats ? std::nullopt : running_var, use_input_stats, 0.0, eps, "none", 0.0));
    grad_output = activation_backward(output_grad, z, fused, negative_slope);
  }
  const int64_t batch = input.size(0);
  const int64_t channels = input.size(1);
  const auto grad_options = input.options().dtype(param_type.value_or(at::kFloat));
  // The weight gradient without a weight (the op called directly): that of a weight of ones.
  OptionalTensor instance_weight = repeated(weight, batch);
  if (!instance_weight.has_value() && (output_mask[1] || output_mask[2])) {
    instance_weight = at::ones({batch * channels}, grad_options);
  }
  // native_batch_norm saved its statistics in the weight's dtype (mixed type), else the input's.
  const at::ScalarType saved_type = instance_weight.has_value() ? instance_weight->scalar_type() : input.scalar_type();
  OptionalTensor saved_mean, saved_invstd;
  if (use_input_stats) {
    saved_mean = mean->reshape({batch * channels}).to(saved_type);
    saved_invstd = rstd->reshape({batch * channels}).to(saved_type);
  }
  auto [grad_input, grad_weight, grad_bias] = at::native_batch_norm_backward(
      batch_norm_view(grad_output), batch_norm_view(input), instance_weight,
      repeated_running(running_mean, batch, input, instance_weight.has_value()),
      repeated_running(running_var, batch, input, instance_weight.has_value()), saved_mean, saved_invstd,
      use_input_stats, eps, output_mask);
  // Each instance's gradient, summed over the batch (the repeat's backward).
  const auto over_batch = [&](const Tensor& grad, bool wanted) {
    return wanted ? grad.view({batch, channels}).sum(0).to(grad_options.dtype()) : at::empty({0}, grad_options);
  };
  return {output_mask[0] ? grad_input.view(input.sizes()).contiguous(kernel_format(input)) : at::empty({0}, input.options()),
          over_batch(grad_weight, output_mask[1]), over_batch(grad_bias, output_mask[2])};
}

// ---- Every device but CUDA: ATen's group norm, as at::group_norm computes it -------------------------

// The input as at::group_norm hands it to native_group_norm: in its suggested memory format on the
// CPU, contiguous elsewhere.
Tensor group_norm_input(const Tensor& input) {
  return input.device().is_cpu() ? input.contiguous(input.suggest_memory_format()) : input.contiguous();
}
int64_t spatial_size(const Tensor& input) { return c10::multiply_integers(input.sizes().slice(2)); }

GroupNormResult group_norm_forward_fallback(const Tensor& input, int64_t num_groups, const OptionalTensor& weight,
                                            const OptionalTensor& bias, double eps, c10::string_view activation,
                                            double negative_slope) {
  check_group_norm_args(input, num_groups, weight, bias);
  const inorm::Activation fused = to_activation(activation);
  auto [output, mean, rstd] = at::native_group_norm(group_norm_input(input), weight, bias, input.size(0),
                                                    input.size(1), spatial_size(input), num_groups, eps);
  activate_in_place(output, fused, negative_slope);
  const at::ScalarType stats_type = stats_scalar_type(input.scalar_type());
  // The output in the memory format the CUDA kernels give it (channels_last in, channels_last out).
  return {output.contiguous(kernel_format(input)), mean.to(stats_type), rstd.to(stats_type)};
}

BackwardResult group_norm_backward_fallback(const Tensor& output_grad, const Tensor& input, const Tensor& mean,
                                            const Tensor& rstd, const OptionalTensor& weight, int64_t num_groups,
                                            double eps, std::array<bool, 3> output_mask, const OptionalTensor& bias,
                                            c10::string_view activation, double negative_slope) {
  const std::optional<at::ScalarType> param_type =
      check_group_norm_backward_args(output_grad, input, mean, rstd, weight, num_groups, bias);
  const Tensor x = group_norm_input(input);
  const int64_t batch = input.size(0);
  const int64_t channels = input.size(1);
  const int64_t spatial = spatial_size(input);
  // With an activation, the norm's gradient is that of its output z, recomputed.
  const inorm::Activation fused = to_activation(activation);
  Tensor grad_output = output_grad;
  if (fused != inorm::Activation::kNone) {
    const Tensor z = std::get<0>(at::native_group_norm(x, weight, bias, batch, channels, spatial, num_groups, eps));
    grad_output = activation_backward(output_grad, z, fused, negative_slope);
  }
  // The weight gradient without a weight (the op called directly): that of a weight of ones.
  OptionalTensor gamma = weight;
  if (!gamma.has_value() && (output_mask[1] || output_mask[2])) gamma = at::ones({channels}, x.options());
  // native_group_norm saved its statistics in float where the parameters are float and the input a
  // half type (mixed type), else in the input's dtype.
  const bool mixed = at::isReducedFloatingType(x.scalar_type()) && param_type == at::kFloat;
  const at::ScalarType saved_type = mixed ? at::kFloat : x.scalar_type();
  // dx computed even where it is not wanted: torch 2.11's CPU kernel crashes (a segmentation fault, in
  // torch.nn.GroupNorm too) computing the weight gradients alone of channels_last half-type input.
  auto [grad_input, grad_weight, grad_bias] = at::native_group_norm_backward(
      grad_output.contiguous(x.suggest_memory_format()), x, mean.to(saved_type), rstd.to(saved_type), gamma, batch,
      channels, spatial, num_groups, {true, output_mask[1], output_mask[2]});
  const auto grad_options = input.options().dtype(param_type.value_or(at::kFloat));
  const auto wanted = [&](const Tensor& grad, bool want) { return want ? grad.to(grad_options) : at::empty({0}, grad_options); };
  return {output_mask[0] ? grad_input.contiguous(kernel_format(input)) : at::empty({0}, input.options()),
          wanted(grad_weight, output_mask[1]),
          wanted(grad_bias, output_mask[2])};
}

// ---- Autograd -----------------------------------------------------------------------------------------

// The autograd formulas' common part. The forward saves whether a weight was given, the bias's
// dtype (-1: none), the activation and its slope; the backward asks for the gradients needed
// (needs_input_grad counts the tensors given: input, then weight and bias where present) and gives
// grad_bias the bias's dtype.
void save_parameters_and_activation(torch::autograd::AutogradContext* ctx, const OptionalTensor& weight,
                                    const OptionalTensor& bias, c10::string_view activation, double negative_slope) {
  ctx->saved_data["has_weight"] = weight.has_value();
  ctx->saved_data["bias_type"] = bias.has_value() ? static_cast<int64_t>(bias->scalar_type()) : int64_t{-1};
  ctx->saved_data["activation"] = std::string(activation);
  ctx->saved_data["negative_slope"] = negative_slope;
  // The statistics have no gradient: no zeros of their size are made for them.
  ctx->set_materialize_grads(false);
}
// The bias places an activation's input z: saved only where there is an activation.
Tensor bias_for_activation(const OptionalTensor& bias, c10::string_view activation) {
  return bias.has_value() && to_activation(activation) != inorm::Activation::kNone ? *bias : Tensor();
}
std::array<bool, 3> gradient_mask(torch::autograd::AutogradContext* ctx) {
  const bool has_weight = ctx->saved_data["has_weight"].toBool();
  return {ctx->needs_input_grad(0), has_weight && ctx->needs_input_grad(1),
          ctx->saved_data["bias_type"].toInt() >= 0 && ctx->needs_input_grad(has_weight ? 2 : 1)};
}
// The gradients as the inputs of forward(): input at 0, weight and bias at the indices given.
torch::autograd::variable_list input_gradients(torch::autograd::AutogradContext* ctx, std::size_t arguments,
                                               std::size_t weight_index, const std::array<bool, 3>& mask,
                                               const BackwardResult& grads) {
  torch::autograd::variable_list result(arguments);
  if (mask[0]) result[0] = std::get<0>(grads);
  if (mask[1]) result[weight_index] = std::get<1>(grads);
  if (mask[2]) result[weight_index + 1] =
      std::get<2>(grads).to(static_cast<at::ScalarType>(ctx->saved_data["bias_type"].toInt()));
  return result;
}
OptionalTensor saved_weight(torch::autograd::AutogradContext* ctx, const Tensor& saved) {
  return ctx->saved_data["has_weight"].toBool() ? OptionalTensor(saved) : std::nullopt;
}
OptionalTensor saved_bias(const Tensor& saved) { return saved.defined() ? OptionalTensor(saved) : std::nullopt; }

// The forward's gradient through inorm's backward op: saves x, the weight and the per-(n, c)
// statistics (or, in eval mode, the running stats that normalized x), with an activation the bias
// (which places z), nothing the size of x but x.
class InstanceNormFunction : public torch::autograd::Function<InstanceNormFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& input,
                                                const OptionalTensor& weight, const OptionalTensor& bias,
                                                const OptionalTensor& running_mean, const OptionalTensor& running_var,
                                                bool use_input_stats, double momentum, double eps,
                                                c10::string_view activation, double negative_slope) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [output, mean, rstd, new_running_mean, new_running_var] = forward_op().call(
        input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, activation, negative_slope);
    ctx->saved_data["use_input_stats"] = use_input_stats;
    ctx->saved_data["eps"] = eps;
    save_parameters_and_activation(ctx, weight, bias, activation, negative_slope);
    const Tensor weight_or_none = weight.has_value() ? *weight : Tensor();
    const Tensor bias_for_z = bias_for_activation(bias, activation);
    if (use_input_stats) {
      ctx->save_for_backward({input, weight_or_none, mean, rstd, bias_for_z});
    } else {
      ctx->save_for_backward({input, weight_or_none, *running_mean, *running_var, bias_for_z});
    }
    ctx->mark_non_differentiable({mean, rstd, new_running_mean, new_running_var});
    return {output, mean, rstd, new_running_mean, new_running_var};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    constexpr std::size_t kArguments = 10;  // one per argument of forward
    const Tensor& grad_output = grads[0];
    if (!grad_output.defined()) return torch::autograd::variable_list(kArguments);  // took no part in the loss
    const auto saved = ctx->get_saved_variables();
    const bool use_input_stats = ctx->saved_data["use_input_stats"].toBool();
    const std::array<bool, 3> mask = gradient_mask(ctx);
    const OptionalTensor weight = saved_weight(ctx, saved[1]);
    const OptionalTensor first = saved[2];
    const OptionalTensor second = saved[3];
    const OptionalTensor bias = saved_bias(saved[4]);
    const double eps = ctx->saved_data["eps"].toDouble();
    const std::string activation = ctx->saved_data["activation"].toStringRef();
    const double negative_slope = ctx->saved_data["negative_slope"].toDouble();
    const BackwardResult grads_of_inputs =
        use_input_stats ? backward_op().call(grad_output, saved[0], weight, first, second, std::nullopt, std::nullopt,
                                             true, eps, mask, bias, activation, negative_slope)
                        : backward_op().call(grad_output, saved[0], weight, std::nullopt, std::nullopt, first, second,
                                             false, eps, mask, bias, activation, negative_slope);
    return input_gradients(ctx, kArguments, 1, mask, grads_of_inputs);
  }
};

// GroupNorm's gradient through inorm's GroupNorm backward op: saves x, the weight, the per-(n, group)
// statistics and, with an activation, the bias.
class GroupNormFunction : public torch::autograd::Function<GroupNormFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const Tensor& input,
                                                int64_t num_groups, const OptionalTensor& weight,
                                                const OptionalTensor& bias, double eps, c10::string_view activation,
                                                double negative_slope) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [output, mean, rstd] =
        group_norm_forward_op().call(input, num_groups, weight, bias, eps, activation, negative_slope);
    ctx->saved_data["num_groups"] = num_groups;
    ctx->saved_data["eps"] = eps;
    save_parameters_and_activation(ctx, weight, bias, activation, negative_slope);
    ctx->save_for_backward({input, weight.has_value() ? *weight : Tensor(), mean, rstd,
                            bias_for_activation(bias, activation)});
    ctx->mark_non_differentiable({mean, rstd});
    return {output, mean, rstd};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    constexpr std::size_t kArguments = 7;  // one per argument of forward
    const Tensor& grad_output = grads[0];
    if (!grad_output.defined()) return torch::autograd::variable_list(kArguments);  // took no part in the loss
    const auto saved = ctx->get_saved_variables();
    const std::array<bool, 3> mask = gradient_mask(ctx);
    const BackwardResult grads_of_inputs = group_norm_backward_op().call(
        grad_output, saved[0], saved[2], saved[3], saved_weight(ctx, saved[1]), ctx->saved_data["num_groups"].toInt(),
        ctx->saved_data["eps"].toDouble(), mask, saved_bias(saved[4]), ctx->saved_data["activation"].toStringRef(),
        ctx->saved_data["negative_slope"].toDouble());
    return input_gradients(ctx, kArguments, 2, mask, grads_of_inputs);
  }
};

// Whether an op may call inorm's CUDA kernels itself rather than through the dispatcher: plain CUDA
// tensors (no fake, functional or batched tensor, no tensor subclass, no dispatch mode in effect,
// as under torch.compile's tracing), contiguous parameters and running stats, nothing for autograd
// to record. The user-facing op then updates the running stats in place, with no statistics
// outputs and no copies of the running stats (per-call host time, and two copy kernels per call
// with running stats); the functional op's Autograd kernel skips a second dispatch.
bool runs_kernels_directly(const Tensor& input, std::initializer_list<const OptionalTensor*> others) {
  const c10::DispatchKeySet wrappers({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                      c10::DispatchKey::Functionalize, c10::DispatchKey::FuncTorchBatched,
                                      c10::DispatchKey::FuncTorchGradWrapper, c10::DispatchKey::FuncTorchDynamicLayerFrontMode});
  if (c10::impl::tls_local_dispatch_key_set().included_.has_any(wrappers)) return false;
  const bool recording = at::GradMode::is_enabled();
  const auto plain = [&](const Tensor& t) {
    return t.is_cuda() && !t.key_set().has_any(wrappers) && !(recording && t.requires_grad()) &&
           !(t.is_inference() && !c10::InferenceMode::is_enabled());
  };
  if (!plain(input)) return false;
  for (const OptionalTensor* other : others) {
    if (other->has_value() && !(plain(**other) && (*other)->is_contiguous())) return false;
  }
  return true;
}

// Whether autograd records a call on these tensors.
bool records_gradient(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias) {
  const auto requires_grad = [](const OptionalTensor& t) { return t.has_value() && t->requires_grad(); };
  return at::GradMode::is_enabled() && (input.requires_grad() || requires_grad(weight) || requires_grad(bias));
}

// The Autograd kernels: the functions above where a gradient may be asked for, else straight to the
// device's kernel (inference pays nothing for autograd).
ForwardResult instance_norm_forward_autograd(const Tensor& input, const OptionalTensor& weight,
                                             const OptionalTensor& bias, const OptionalTensor& running_mean,
                                             const OptionalTensor& running_var, bool use_input_stats, double momentum,
                                             double eps, c10::string_view activation, double negative_slope) {
  if (!records_gradient(input, weight, bias)) {
    // Plain CUDA tensors go straight to the CUDA kernel: a second trip through the dispatcher
    // costs host time on every call.
    if (runs_kernels_directly(input, {&weight, &bias, &running_mean, &running_var})) {
      return instance_norm_forward_cuda(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                                        eps, activation, negative_slope);
    }
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return forward_op().call(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                             activation, negative_slope);
  }
  const auto outputs = InstanceNormFunction::apply(input, weight, bias, running_mean, running_var, use_input_stats,
                                                   momentum, eps, activation, negative_slope);
  return {outputs[0], outputs[1], outputs[2], outputs[3], outputs[4]};
}

GroupNormResult group_norm_forward_autograd(const Tensor& input, int64_t num_groups, const OptionalTensor& weight,
                                            const OptionalTensor& bias, double eps, c10::string_view activation,
                                            double negative_slope) {
  if (!records_gradient(input, weight, bias)) {
    if (runs_kernels_directly(input, {&weight, &bias})) {
      return group_norm_forward_cuda(input, num_groups, weight, bias, eps, activation, negative_slope);
    }
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return group_norm_forward_op().call(input, num_groups, weight, bias, eps, activation, negative_slope);
  }
  const auto outputs = GroupNormFunction::apply(input, num_groups, weight, bias, eps, activation, negative_slope);
  return {outputs[0], outputs[1], outputs[2]};
}

// The user-facing op: the functional op, then the running stats written back in place.
Tensor instance_norm(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                     const OptionalTensor& running_mean, const OptionalTensor& running_var,
                     bool use_input_stats, double momentum, double eps, c10::string_view activation,
                     double negative_slope) {
  if (runs_kernels_directly(input, {&weight, &bias, &running_mean, &running_var})) {
    const std::optional<at::ScalarType> param_type =
        check_forward_args(input, weight, bias, running_mean, running_var, use_input_stats);
    ForwardTargets targets;
    if (running_mean.has_value()) {
      targets.running_mean = *running_mean;
      targets.running_var = *running_var;
    }
    Tensor output = launch_forward_kernels(input, weight, bias, param_type, targets, use_input_stats, momentum, eps,
                                           to_activation(activation), negative_slope, 0);
    if (use_input_stats && running_mean.has_value()) {  // written in place, as copy_ would: autograd sees it
      running_mean->unsafeGetTensorImpl()->bump_version();
      running_var->unsafeGetTensorImpl()->bump_version();
    }
    return output;
  }
  auto [output, mean, rstd, new_running_mean, new_running_var] = forward_op().call(
      input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, activation, negative_slope);
  if (use_input_stats && running_mean.has_value() && running_var.has_value()) {
    running_mean->copy_(new_running_mean);
    running_var->copy_(new_running_var);
  }
  return output;
}

// Under CUDA autocast GroupNorm runs in float32, as torch.group_norm does there (autocast's fp32
// list): half-type input and parameters are cast first, and the output is float32.
GroupNormResult group_norm_forward_autocast(const Tensor& input, int64_t num_groups, const OptionalTensor& weight,
                                            const OptionalTensor& bias, double eps, c10::string_view activation,
                                            double negative_slope) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCUDA);
  return group_norm_forward_op().call(at::autocast::cached_cast(at::kFloat, input), num_groups,
                                      at::autocast::cached_cast(at::kFloat, weight),
                                      at::autocast::cached_cast(at::kFloat, bias), eps, activation, negative_slope);
}

// The user-facing GroupNorm op: the functional op's output (plain CUDA tensors outside autocast:
// the kernels alone, no statistics written).
Tensor group_norm(const Tensor& input, int64_t num_groups, const OptionalTensor& weight, const OptionalTensor& bias,
                  double eps, c10::string_view activation, double negative_slope) {
  if (!at::autocast::is_autocast_enabled(at::kCUDA) && runs_kernels_directly(input, {&weight, &bias})) {
    const std::optional<at::ScalarType> param_type = check_group_norm_args(input, num_groups, weight, bias);
    return launch_forward_kernels(input, weight, bias, param_type, ForwardTargets(), true, 0.0, eps,
                                  to_activation(activation), negative_slope, num_groups);
  }
  return std::get<0>(group_norm_forward_op().call(input, num_groups, weight, bias, eps, activation, negative_slope));
}

}  // namespace

TORCH_LIBRARY(inorm, m) {
  // activation: "none", "relu", "leaky_relu" (negative_slope) or "silu", fused after the affine.
  m.def("instance_norm_forward(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
        "Tensor? running_var, bool use_input_stats, float momentum, float eps, str activation=\"none\", "
        "float negative_slope=0.01) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  m.def("instance_norm_backward(Tensor grad_output, Tensor input, Tensor? weight, Tensor? mean, Tensor? rstd, "
        "Tensor? running_mean, Tensor? running_var, bool use_input_stats, float eps, bool[3] output_mask, "
        "Tensor? bias=None, str activation=\"none\", float negative_slope=0.01) -> (Tensor, Tensor, Tensor)");
  m.def("instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, "
        "Tensor(b!)? running_var, bool use_input_stats, float momentum, float eps, str activation=\"none\", "
        "float negative_slope=0.01) -> Tensor");
  m.impl("instance_norm", c10::DispatchKey::CompositeImplicitAutograd, TORCH_FN(instance_norm));
  // GroupNorm (torch.nn.functional.group_norm), the same activations.
  m.def("group_norm_forward(Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps, "
        "str activation=\"none\", float negative_slope=0.01) -> (Tensor, Tensor, Tensor)");
  m.def("group_norm_backward(Tensor grad_output, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, "
        "int num_groups, float eps, bool[3] output_mask, Tensor? bias=None, str activation=\"none\", "
        "float negative_slope=0.01) -> (Tensor, Tensor, Tensor)");
  m.def("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, "
        "str activation=\"none\", float negative_slope=0.01) -> Tensor");
  m.impl("group_norm", c10::DispatchKey::CompositeImplicitAutograd, TORCH_FN(group_norm));
}

TORCH_LIBRARY_IMPL(inorm, CUDA, m) {
  m.impl("instance_norm_forward", TORCH_FN(instance_norm_forward_cuda));
  m.impl("instance_norm_backward", TORCH_FN(instance_norm_backward_cuda));
  m.impl("group_norm_forward", TORCH_FN(group_norm_forward_cuda));
  m.impl("group_norm_backward", TORCH_FN(group_norm_backward_cuda));
}

// Every backend without a kernel of its own above (CPU, MPS, XPU, ...); meta and fake tensors use
// the fake kernels of _ops.py.
TORCH_LIBRARY_IMPL(inorm, CompositeExplicitAutograd, m) {
  m.impl("instance_norm_forward", TORCH_FN(instance_norm_forward_fallback));
  m.impl("instance_norm_backward", TORCH_FN(instance_norm_backward_fallback));
  m.impl("group_norm_forward", TORCH_FN(group_norm_forward_fallback));
  m.impl("group_norm_backward", TORCH_FN(group_norm_backward_fallback));
}

TORCH_LIBRARY_IMPL(inorm, AutocastCUDA, m) {
  m.impl("group_norm_forward", TORCH_FN(group_norm_forward_autocast));
}

TORCH_LIBRARY_IMPL(inorm, Autograd, m) {
  m.impl("instance_norm_forward", TORCH_FN(instance_norm_forward_autograd));
  // Its own gradient is not implemented: differentiating it (double backward) raises, never a silent 0.
  m.impl("instance_norm_backward", torch::autograd::autogradNotImplementedFallback());
  m.impl("group_norm_forward", TORCH_FN(group_norm_forward_autograd));
  m.impl("group_norm_backward", torch::autograd::autogradNotImplementedFallback());
}

}  // namespace inorm_torch

// `import inorm._C` loads this library, which registers the ops above; the module itself is empty.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
