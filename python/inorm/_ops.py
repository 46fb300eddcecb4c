"""Registrations for torch.ops.inorm.instance_norm_forward: a fake (meta) kernel for torch.compile
and an autograd formula computed with torch ops from the saved statistics."""
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


def _setup_context(ctx, inputs, output):
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps = inputs
    _, mean, rstd, new_running_mean, new_running_var = output
    ctx.mark_non_differentiable(mean, rstd, new_running_mean, new_running_var)
    ctx.use_input_stats = use_input_stats
    ctx.eps = eps
    ctx.bias_dtype = bias.dtype if bias is not None else None
    if use_input_stats:
        ctx.save_for_backward(input, weight, mean, rstd)
    else:  # eval: the running stats normalized the input (and are not written by this call)
        ctx.save_for_backward(input, weight, running_mean, running_var)


def _backward(ctx, grad_output, *_unused_stat_grads):
    input, weight, center, scale_source = ctx.saved_tensors
    compute_dtype = _stats_dtype(input.dtype)
    n, c = input.shape[0], input.shape[1]
    x = input.reshape(n, c, -1).to(compute_dtype)
    grad = grad_output.reshape(n, c, -1).to(compute_dtype)
    if ctx.use_input_stats:
        mean, rstd = center.unsqueeze(-1), scale_source.unsqueeze(-1)
    else:
        mean = center.to(compute_dtype).view(1, c, 1)
        rstd = torch.rsqrt(scale_source.to(compute_dtype) + ctx.eps).view(1, c, 1)
    x_hat = (x - mean) * rstd

    grad_input = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
        grad_x_hat = grad * weight.to(compute_dtype).view(1, c, 1) if weight is not None else grad
        if ctx.use_input_stats:  # the statistics depend on x: project out their gradients
            grad_x_hat = (
                grad_x_hat
                - grad_x_hat.mean(-1, keepdim=True)
                - x_hat * (grad_x_hat * x_hat).mean(-1, keepdim=True)
            )
        grad_input = (grad_x_hat * rstd).to(input.dtype).reshape(input.shape)
    if weight is not None and ctx.needs_input_grad[1]:
        grad_weight = (grad * x_hat).sum(dim=(0, 2)).to(weight.dtype)
    if ctx.bias_dtype is not None and ctx.needs_input_grad[2]:
        grad_bias = grad.sum(dim=(0, 2)).to(ctx.bias_dtype)
    return grad_input, grad_weight, grad_bias, None, None, None, None, None


torch.library.register_autograd("inorm::instance_norm_forward", _backward, setup_context=_setup_context)
