// The PyTorch binding of inorm: three operators in the `inorm` namespace. It only translates tensors
// to inorm::ForwardParams / BackwardParams, allocates through torch and launches on the current
// stream; every kernel and every numerical decision lives in the torch-free library.
//
//   inorm::instance_norm_forward  functional; returns the running statistics it would write, so that
//                                 torch.library.register_autograd (functional ops only) can attach the
//                                 backward and torch.compile can trace it without mutation.
//   inorm::instance_norm_backward the gradients of the forward (its autograd formula, _ops.py).
//   inorm::instance_norm          the user-facing op: running stats are mutable arguments (Tensor(a!)),
//                                 written in place; CompositeImplicitAutograd over the functional op.
#include <Python.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <array>
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

void check_status(const inorm::Status& status) {
  if (status.ok()) return;
  if (status.code() == inorm::StatusCode::kUnsupported) TORCH_CHECK_NOT_IMPLEMENTED(false, status.message());
  TORCH_CHECK(false, status.message());
}

// weight, bias and running stats: [C], on the input's device, one dtype among them (the library
// takes a single parameter dtype).
void check_parameter(const OptionalTensor& tensor, const char* name, const Tensor& input,
                     std::optional<at::ScalarType>* param_type) {
  if (!tensor.has_value()) return;
  const int64_t channels = input.size(1);
  TORCH_CHECK(tensor->device() == input.device(), "inorm: ", name, " is on ", tensor->device(),
              " but input is on ", input.device());
  TORCH_CHECK(tensor->dim() == 1 && tensor->size(0) == channels, "inorm: ", name,
              " must have shape [", channels, "] (the input's channels), got ", tensor->sizes());
  to_inorm_dtype(tensor->scalar_type(), name);
  if (!param_type->has_value()) {
    *param_type = tensor->scalar_type();
  } else {
    TORCH_CHECK(**param_type == tensor->scalar_type(),
                "inorm: weight, bias, running_mean and running_var must share one dtype; ", name,
                " is ", tensor->scalar_type(), ", another is ", **param_type);
  }
}

const void* data_or_null(const OptionalTensor& tensor) {
  return tensor.has_value() ? tensor->data_ptr() : nullptr;
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

// The kernels read contiguous NCHW; other layouts (channels_last among them) are copied first,
// which costs one extra read and write: say so once rather than lose the speed silently.
Tensor contiguous_input(const Tensor& input) {
  if (!input.is_contiguous()) {
    TORCH_WARN_ONCE("inorm: input is not contiguous (e.g. channels_last); it is copied to a "
                    "contiguous NCHW tensor first, and the output is contiguous NCHW as in PyTorch. "
                    "Native channels_last support is not implemented yet.");
  }
  return input.contiguous();
}

// Plans for the current device and launches on the current stream with a workspace from torch's
// caching allocator (stream-ordered, and valid under CUDA graph capture).
template <typename Params, typename PlanFn, typename LaunchFn>
void plan_and_launch(const Params& params, const Tensor& like, PlanFn&& plan_fn, LaunchFn&& launch_fn) {
  inorm::Plan plan;
  check_status(plan_fn(params, &plan));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(like.device().index());
  const Tensor workspace = at::empty({static_cast<int64_t>(plan.workspace_bytes)}, like.options().dtype(at::kByte));
  check_status(launch_fn(plan, params, plan.workspace_bytes > 0 ? workspace.data_ptr() : nullptr, stream));
}

// Returns (output, mean [N, C], rstd [N, C], new_running_mean, new_running_var). mean and rstd are
// the instance statistics (empty when use_input_stats is false); the new running stats are empty
// unless use_input_stats and running stats are given.
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> instance_norm_forward_cuda(
    const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
    const OptionalTensor& running_mean, const OptionalTensor& running_var, bool use_input_stats,
    double momentum, double eps) {
  TORCH_CHECK(input.is_cuda(), "inorm: input must be a CUDA tensor, got one on ", input.device());
  TORCH_CHECK(input.dim() >= 2, "inorm: input must have at least 2 dimensions (N, C, ...), got ",
              input.dim());
  TORCH_CHECK(use_input_stats || (running_mean.has_value() && running_var.has_value()),
              "Expected running_mean and running_var to be defined when use_input_stats is false");
  TORCH_CHECK(running_mean.has_value() == running_var.has_value(),
              "inorm: running_mean and running_var must be given together");
  const inorm::DType dtype = to_inorm_dtype(input.scalar_type(), "input");
  std::optional<at::ScalarType> param_type;
  check_parameter(weight, "weight", input, &param_type);
  check_parameter(bias, "bias", input, &param_type);
  check_parameter(running_mean, "running_mean", input, &param_type);
  check_parameter(running_var, "running_var", input, &param_type);

  const c10::cuda::CUDAGuard guard(input.device());
  const Tensor x = contiguous_input(input);
  const int64_t batch = x.size(0);
  const int64_t channels = x.size(1);
  const auto stats_options = x.options().dtype(stats_scalar_type(x.scalar_type()));

  Tensor output = at::empty_like(x, at::MemoryFormat::Contiguous);
  const std::vector<int64_t> stats_shape = use_input_stats ? std::vector<int64_t>{batch, channels} : std::vector<int64_t>{0};
  Tensor mean = at::empty(stats_shape, stats_options);
  Tensor rstd = at::empty_like(mean);
  const bool update_running = use_input_stats && running_mean.has_value();
  // The library updates running stats in place; this functional op updates copies and returns them.
  Tensor new_running_mean = update_running ? running_mean->clone(at::MemoryFormat::Contiguous) : at::empty({0}, stats_options);
  Tensor new_running_var = update_running ? running_var->clone(at::MemoryFormat::Contiguous) : at::empty({0}, stats_options);
  const Tensor weight_c = weight.has_value() ? weight->contiguous() : Tensor();
  const Tensor bias_c = bias.has_value() ? bias->contiguous() : Tensor();
  const Tensor running_mean_c = running_mean.has_value() ? running_mean->contiguous() : Tensor();
  const Tensor running_var_c = running_var.has_value() ? running_var->contiguous() : Tensor();

  inorm::ForwardParams params;
  params.x = x.data_ptr();
  params.y = output.data_ptr();
  params.dtype = dtype;
  set_shape(x, &params);
  params.eps = eps;
  params.weight = weight.has_value() ? weight_c.data_ptr() : nullptr;
  params.bias = bias.has_value() ? bias_c.data_ptr() : nullptr;
  params.param_dtype = param_type.has_value() ? to_inorm_dtype(*param_type, "parameters") : inorm::DType::kFloat32;
  params.use_input_stats = use_input_stats;
  params.momentum = momentum;
  if (use_input_stats) {
    params.mean = mean.data_ptr();
    params.rstd = rstd.data_ptr();
    if (update_running) {
      params.running_mean = new_running_mean.data_ptr();
      params.running_var = new_running_var.data_ptr();
    }
  } else {
    params.running_mean = const_cast<void*>(data_or_null(running_mean_c));
    params.running_var = const_cast<void*>(data_or_null(running_var_c));
  }

  plan_and_launch(
      params, x, [](const inorm::ForwardParams& p, inorm::Plan* plan) { return inorm::plan_forward(p, plan); },
      inorm::launch_forward);
  return {output, mean, rstd, new_running_mean, new_running_var};
}

// Returns (grad_input, grad_weight, grad_bias), each an empty [0] tensor where output_mask says it
// is not wanted. With use_input_stats, mean and rstd are what the forward returned; without, the
// running stats normalized the input. grad_weight and grad_bias take the dtype of weight (else of
// the running stats, else float32).
std::tuple<Tensor, Tensor, Tensor> instance_norm_backward_cuda(
    const Tensor& grad_output, const Tensor& input, const OptionalTensor& weight, const OptionalTensor& mean,
    const OptionalTensor& rstd, const OptionalTensor& running_mean, const OptionalTensor& running_var,
    bool use_input_stats, double eps, std::array<bool, 3> output_mask) {
  TORCH_CHECK(input.is_cuda(), "inorm: input must be a CUDA tensor, got one on ", input.device());
  TORCH_CHECK(input.dim() >= 2, "inorm: input must have at least 2 dimensions (N, C, ...), got ", input.dim());
  TORCH_CHECK(grad_output.sizes() == input.sizes(), "inorm: grad_output has shape ", grad_output.sizes(),
              ", input ", input.sizes());
  TORCH_CHECK(grad_output.device() == input.device() && grad_output.scalar_type() == input.scalar_type(),
              "inorm: grad_output must be on the input's device with its dtype, got ", grad_output.device(), " ",
              grad_output.scalar_type(), " against ", input.device(), " ", input.scalar_type());
  const inorm::DType dtype = to_inorm_dtype(input.scalar_type(), "input");
  std::optional<at::ScalarType> param_type;
  check_parameter(weight, "weight", input, &param_type);
  check_parameter(running_mean, "running_mean", input, &param_type);
  check_parameter(running_var, "running_var", input, &param_type);
  const auto stats_type = stats_scalar_type(input.scalar_type());
  const int64_t batch = input.size(0);
  const int64_t channels = input.size(1);
  if (use_input_stats) {
    for (const auto& [tensor, name] : {std::pair{&mean, "mean"}, std::pair{&rstd, "rstd"}}) {
      TORCH_CHECK(tensor->has_value() && (*tensor)->device() == input.device() &&
                      (*tensor)->scalar_type() == stats_type && (*tensor)->numel() == batch * channels,
                  "inorm: with use_input_stats the backward needs the forward's ", name, " (", stats_type, ", ",
                  batch * channels, " values on ", input.device(), ")");
    }
  } else {
    TORCH_CHECK(running_mean.has_value() && running_var.has_value(),
                "Expected running_mean and running_var to be defined when use_input_stats is false");
  }

  const c10::cuda::CUDAGuard guard(input.device());
  const Tensor x = contiguous_input(input);
  const Tensor dy = grad_output.contiguous();
  const auto grad_options = x.options().dtype(param_type.value_or(at::kFloat));
  Tensor grad_input = output_mask[0] ? at::empty_like(x, at::MemoryFormat::Contiguous) : at::empty({0}, x.options());
  Tensor grad_weight = output_mask[1] ? at::empty({channels}, grad_options) : at::empty({0}, grad_options);
  Tensor grad_bias = output_mask[2] ? at::empty({channels}, grad_options) : at::empty({0}, grad_options);
  const Tensor weight_c = weight.has_value() ? weight->contiguous() : Tensor();
  const Tensor mean_c = use_input_stats ? mean->contiguous() : Tensor();
  const Tensor rstd_c = use_input_stats ? rstd->contiguous() : Tensor();
  const Tensor running_mean_c = use_input_stats ? Tensor() : running_mean->contiguous();
  const Tensor running_var_c = use_input_stats ? Tensor() : running_var->contiguous();

  inorm::BackwardParams params;
  params.x = x.data_ptr();
  params.dy = dy.data_ptr();
  params.dx = output_mask[0] ? grad_input.data_ptr() : nullptr;
  params.dtype = dtype;
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
  plan_and_launch(
      params, x, [](const inorm::BackwardParams& p, inorm::Plan* plan) { return inorm::plan_backward(p, plan); },
      inorm::launch_backward);
  return {grad_input, grad_weight, grad_bias};
}

// The user-facing op: the functional op, then the running stats written back in place.
Tensor instance_norm(const Tensor& input, const OptionalTensor& weight, const OptionalTensor& bias,
                     const OptionalTensor& running_mean, const OptionalTensor& running_var,
                     bool use_input_stats, double momentum, double eps) {
  static const auto forward_op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("inorm::instance_norm_forward", "")
          .typed<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
              const Tensor&, const OptionalTensor&, const OptionalTensor&, const OptionalTensor&,
              const OptionalTensor&, bool, double, double)>();
  auto [output, mean, rstd, new_running_mean, new_running_var] =
      forward_op.call(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps);
  if (use_input_stats && running_mean.has_value() && running_var.has_value()) {
    running_mean->copy_(new_running_mean);
    running_var->copy_(new_running_var);
  }
  return output;
}

}  // namespace

TORCH_LIBRARY(inorm, m) {
  m.def("instance_norm_forward(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
        "Tensor? running_var, bool use_input_stats, float momentum, float eps) "
        "-> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  m.def("instance_norm_backward(Tensor grad_output, Tensor input, Tensor? weight, Tensor? mean, Tensor? rstd, "
        "Tensor? running_mean, Tensor? running_var, bool use_input_stats, float eps, bool[3] output_mask) "
        "-> (Tensor, Tensor, Tensor)");
  m.def("instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, "
        "Tensor(b!)? running_var, bool use_input_stats, float momentum, float eps) -> Tensor");
  m.impl("instance_norm", c10::DispatchKey::CompositeImplicitAutograd, TORCH_FN(instance_norm));
}

TORCH_LIBRARY_IMPL(inorm, CUDA, m) {
  m.impl("instance_norm_forward", TORCH_FN(instance_norm_forward_cuda));
  m.impl("instance_norm_backward", TORCH_FN(instance_norm_backward_cuda));
}

// CPU tensors reach the same kernels only to be refused with a message naming the device.
TORCH_LIBRARY_IMPL(inorm, CPU, m) {
  m.impl("instance_norm_forward", TORCH_FN(instance_norm_forward_cuda));
  m.impl("instance_norm_backward", TORCH_FN(instance_norm_backward_cuda));
}

}  // namespace inorm_torch

// `import inorm._C` loads this library, which registers the ops above; the module itself is empty.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
