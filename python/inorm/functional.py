"""inorm.instance_norm and inorm.group_norm: torch.nn.functional's signatures and checks, inorm's
kernels."""
from typing import Optional

import torch
from torch import Tensor


def instance_norm(
    input: Tensor,
    running_mean: Optional[Tensor] = None,
    running_var: Optional[Tensor] = None,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
    activation: Optional[str] = None,
    negative_slope: float = 0.01,
) -> Tensor:
    """Instance normalization of a tensor (N, C, *), as torch.nn.functional.instance_norm: inorm's
    kernels on a CUDA device, PyTorch's own implementation on every other device.

    With use_input_stats and running stats given, the running stats are updated in place
    (mean and unbiased variance averaged over the batch, weighted by momentum). channels_last and
    channels_last_3d input runs without a copy and gives output in the same memory format (torch's
    instance norm returns contiguous NCHW); input with other strides is copied to NCHW first.

    activation: None, "relu", "leaky_relu" (with negative_slope) or "silu", applied to the
    normalized output inside the same kernel: F.relu(instance_norm(...)) and the like in one pass
    over memory, forward and backward (the backward recomputes the activation's input; nothing more
    is saved than for the norm alone)."""
    if use_input_stats:
        _verify_spatial_size(input.size())
    if activation is None:  # the op's default: two arguments fewer to convert on every call
        return _instance_norm_op(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)
    return _instance_norm_op(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                             activation, negative_slope)


# The overload itself: a call skips the packet's overload resolution (per-call host time).
_instance_norm_op = torch.ops.inorm.instance_norm.default


def _verify_spatial_size(size: torch.Size) -> None:
    # The same check and message as torch.nn.functional.instance_norm.
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    eps: float = 1e-5,
    activation: Optional[str] = None,
    negative_slope: float = 0.01,
) -> Tensor:
    """Group normalization of a tensor (N, C, *), as torch.nn.functional.group_norm (its checks and
    messages): inorm's kernels on a CUDA device, PyTorch's own implementation on every other device.

    channels_last and channels_last_3d input runs without a copy and gives output in the same memory
    format (torch's group norm returns contiguous NCHW on CUDA); input with other strides is copied
    to NCHW first, with a warning. Under torch.autocast on CUDA it runs in float32 (half-type input
    cast first), as torch's does.

    activation: None, "relu", "leaky_relu" (with negative_slope) or "silu", fused as in
    instance_norm: F.silu(F.group_norm(...)) in one pass over memory, forward and backward."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    _verify_batch_size([input.size(0) * input.size(1) // num_groups, num_groups] + list(input.size()[2:]))
    if activation is None:
        return _group_norm_op(input, num_groups, weight, bias, eps)
    return _group_norm_op(input, num_groups, weight, bias, eps, activation, negative_slope)


_group_norm_op = torch.ops.inorm.group_norm.default


def _verify_batch_size(size) -> None:
    # The same check and message as torch.nn.functional's (group_norm calls it on [N * C / G, G, *]).
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
