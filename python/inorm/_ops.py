"""Fake (meta) kernels of torch.ops.inorm (InstanceNorm's and GroupNorm's) for torch.compile and meta
tensors. The kernels themselves and the autograd formulas (which call inorm's backward kernels) are
C++ (python/csrc/ops.cpp), so no Python runs on a call."""
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
    return _gradients(input, output_mask, _output_format(input), weight, bias, running_mean)


def _gradients(input, output_mask, memory_format, *parameters):
    # dx in `memory_format`, dweight and dbias [C] in the parameters' dtype (none: float32); each
    # [0] where output_mask does not ask for it.
    channels = input.shape[1]
    grad_dtype = next((t.dtype for t in parameters if t is not None), torch.float32)
    grad_input = torch.empty_like(input, memory_format=memory_format) if output_mask[0] else input.new_empty((0,))
    grad_weight = input.new_empty((channels,) if output_mask[1] else (0,), dtype=grad_dtype)
    grad_bias = input.new_empty((channels,) if output_mask[2] else (0,), dtype=grad_dtype)
    return grad_input, grad_weight, grad_bias


def _check_group_norm_args(input, num_groups, weight, bias):
    # As the real kernels do (ops.cpp check_group_norm_args): torch.group_norm's checks and messages.
    torch._check(input.dim() >= 2, lambda: f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    torch._check(num_groups > 0, lambda: f"Expected num groups to be greater than 0, got {num_groups}")
    torch._check(input.shape[1] % num_groups == 0,
                 lambda: f"Expected number of channels in input to be divisible by num_groups, but got input of "
                         f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, tensor in (("weight", weight), ("bias", bias)):
        torch._check(tensor is None or (tensor.dim() == 1 and tensor.numel() == input.shape[1]),
                     lambda: f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                             f"got {name} of shape {list(tensor.shape)} and input of shape {list(input.shape)}")


@torch.library.register_fake("inorm::group_norm_forward")
def _group_norm_forward_fake(input, num_groups, weight, bias, eps, activation="none", negative_slope=0.01):
    _check_group_norm_args(input, num_groups, weight, bias)
    _check_activation(activation)
    _check_devices(input, weight=weight, bias=bias)
    stats_dtype = _stats_dtype(input.dtype)
    output = torch.empty_like(input, memory_format=_output_format(input))
    mean = input.new_empty((input.shape[0], num_groups), dtype=stats_dtype)
    rstd = input.new_empty((input.shape[0], num_groups), dtype=stats_dtype)
    return output, mean, rstd


@torch.library.register_fake("inorm::group_norm_backward")
def _group_norm_backward_fake(grad_output, input, mean, rstd, weight, num_groups, eps, output_mask, bias=None,
                              activation="none", negative_slope=0.01):
    _check_group_norm_args(input, num_groups, weight, bias)
    torch._check(grad_output.shape == input.shape, lambda: "inorm: grad_output and input differ in shape")
    _check_activation(activation)
    _check_devices(input, grad_output=grad_output, mean=mean, rstd=rstd, weight=weight, bias=bias)
    return _gradients(input, output_mask, _output_format(input), weight, bias)
