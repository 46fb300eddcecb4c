"""inorm.instance_norm: torch.nn.functional.instance_norm's signature and checks, inorm's kernels."""
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
