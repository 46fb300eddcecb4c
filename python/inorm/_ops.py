"""Fake (meta) kernels of torch.ops.inorm for torch.compile and meta tensors. The kernels themselves
and the autograd formula (which calls inorm's backward kernel) are C++ (python/csrc/ops.cpp), so no
Python runs on a call."""
import torch


def _stats_dtype(input_dtype):
    return torch.float64 if input_dtype == torch.float64 else torch.float32


def _output_format(input):
    # The memory format the kernels run the input in and give their outputs (ops.cpp kernel_format):
    # channels_last where the input is dense in it and not also contiguous NCHW, else NCHW.
    if input.is_contiguous():
        return torch.contiguous_format
    if input.dim() == 4 and input.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    if input.dim() == 5 and input.is_contiguous(memory_format=torch.channels_last_3d):
        return torch.channels_last_3d
    return torch.contiguous_format


def _check_devices(input, **tensors):
    # As the real kernels do: a parameter on another device (meta among them) is an error, not a
    # result computed from whatever the fake kernel returns.
    for name, tensor in tensors.items():
        if tensor is not None and tensor.device != input.device:
            raise RuntimeError(f"Expected all tensors to be on the same device: inorm's {name} is on "
                               f"{tensor.device} but input is on {input.device}")


ACTIVATIONS = ("none", "relu", "leaky_relu", "silu")


def _check_activation(activation):
    # As the real kernels do (ops.cpp to_activation): a RuntimeError naming the choices.
    if activation not in ACTIVATIONS:
        raise RuntimeError(f"inorm: unknown activation '{activation}'; expected none, relu, leaky_relu or silu")


@torch.library.register_fake("inorm::instance_norm_forward")
def _instance_norm_forward_fake(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                                activation="none", negative_slope=0.01):
    torch._check(input.dim() >= 2, lambda: f"inorm: input must have at least 2 dimensions (N, C, ...), got {input.dim()}")
    _check_activation(activation)
    _check_devices(input, weight=weight, bias=bias, running_mean=running_mean, running_var=running_var)
    stats_dtype = _stats_dtype(input.dtype)
    output = torch.empty_like(input, memory_format=_output_format(input))
    stats_shape = (input.shape[0], input.shape[1]) if use_input_stats else (0,)
    mean = input.new_empty(stats_shape, dtype=stats_dtype)
    rstd = input.new_empty(stats_shape, dtype=stats_dtype)
    if use_input_stats and running_mean is not None:
        new_running_mean = torch.empty_like(running_mean, memory_format=torch.contiguous_format)
        new_running_var = torch.empty_like(running_var, memory_format=torch.contiguous_format)
    else:
        new_running_mean = input.new_empty((0,), dtype=stats_dtype)
        new_running_var = input.new_empty((0,), dtype=stats_dtype)
    return output, mean, rstd, new_running_mean, new_running_var


@torch.library.register_fake("inorm::instance_norm_backward")
def _instance_norm_backward_fake(grad_output, input, weight, mean, rstd, running_mean, running_var, use_input_stats,
                                 eps, output_mask, bias=None, activation="none", negative_slope=0.01):
    torch._check(grad_output.shape == input.shape, lambda: "inorm: grad_output and input differ in shape")
    _check_activation(activation)
    _check_devices(input, grad_output=grad_output, weight=weight, mean=mean, rstd=rstd, running_mean=running_mean,
                   running_var=running_var, bias=bias)
    channels = input.shape[1]
    grad_dtype = next((t.dtype for t in (weight, running_mean) if t is not None), torch.float32)
    grad_input = (torch.empty_like(input, memory_format=_output_format(input)) if output_mask[0]
                  else input.new_empty((0,)))
    grad_weight = input.new_empty((channels,) if output_mask[1] else (0,), dtype=grad_dtype)
    grad_bias = input.new_empty((channels,) if output_mask[2] else (0,), dtype=grad_dtype)
    return grad_input, grad_weight, grad_bias
