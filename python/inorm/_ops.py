"""Registrations for torch.ops.inorm: fake (meta) kernels for torch.compile, and the autograd formula
of instance_norm_forward, which calls inorm's backward kernel (instance_norm_backward) with the
saved input and statistics."""
import torch


def _stats_dtype(input_dtype):
    return torch.float64 if input_dtype == torch.float64 else torch.float32


@torch.library.register_fake("inorm::instance_norm_forward")
def _instance_norm_forward_fake(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps):
    torch._check(input.dim() >= 2, lambda: f"inorm: input must have at least 2 dimensions (N, C, ...), got {input.dim()}")
    stats_dtype = _stats_dtype(input.dtype)
    output = torch.empty_like(input, memory_format=torch.contiguous_format)
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
                                 eps, output_mask):
    torch._check(grad_output.shape == input.shape, lambda: "inorm: grad_output and input differ in shape")
    channels = input.shape[1]
    grad_dtype = next((t.dtype for t in (weight, running_mean) if t is not None), torch.float32)
    grad_input = (torch.empty_like(input, memory_format=torch.contiguous_format) if output_mask[0]
                  else input.new_empty((0,)))
    grad_weight = input.new_empty((channels,) if output_mask[1] else (0,), dtype=grad_dtype)
    grad_bias = input.new_empty((channels,) if output_mask[2] else (0,), dtype=grad_dtype)
    return grad_input, grad_weight, grad_bias


def _setup_context(ctx, inputs, output):
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps = inputs
    _, mean, rstd, new_running_mean, new_running_var = output
    ctx.mark_non_differentiable(mean, rstd, new_running_mean, new_running_var)
    # The statistics have no gradient: no zeros of their size are made for them (a training step's
    # peak memory stays at torch.nn's).
    ctx.set_materialize_grads(False)
    ctx.use_input_stats = use_input_stats
    ctx.eps = eps
    ctx.bias_dtype = bias.dtype if bias is not None else None
    if use_input_stats:  # x, weight and the per-(n, c) statistics: nothing the size of x but x itself
        ctx.save_for_backward(input, weight, mean, rstd)
    else:  # eval: the running stats normalized the input (and are not written by this call)
        ctx.save_for_backward(input, weight, running_mean, running_var)


def _backward(ctx, grad_output, *_unused_stat_grads):
    if grad_output is None:  # the output took no part in what is differentiated
        return (None,) * 8
    input, weight, center, scale_source = ctx.saved_tensors
    output_mask = [ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[1],
                   ctx.bias_dtype is not None and ctx.needs_input_grad[2]]
    stats = (center, scale_source, None, None) if ctx.use_input_stats else (None, None, center, scale_source)
    grad_input, grad_weight, grad_bias = torch.ops.inorm.instance_norm_backward(
        grad_output, input, weight, *stats, ctx.use_input_stats, ctx.eps, output_mask)
    return (grad_input if output_mask[0] else None,
            grad_weight if output_mask[1] else None,
            grad_bias.to(ctx.bias_dtype) if output_mask[2] else None,
            None, None, None, None, None)


torch.library.register_autograd("inorm::instance_norm_forward", _backward, setup_context=_setup_context)
