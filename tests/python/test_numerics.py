"""inorm's numerics against exact references: float64 input keeps its digits on offset data (a
long-double reference, since torch's own float64 loses up to six of them there), and eps = 0 on a
constant slice gives NaN (its variance is exactly 0), as torch.nn does."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
import torch.nn.functional as F  # noqa: E402

import inorm  # noqa: E402
from helpers import module_classes, requires_gpu  # noqa: E402

pytestmark = requires_gpu

# One shape per path and slice size: S = 2 and 9 (register groups), 1024 and 65536 (one CTA, and
# CTAs sharing a slice), 2^20 and 2^24 elements (clusters, and the split path: 128 MiB slices).
FLOAT64_SHAPES = [(8, 65, 1, 2), (8, 65, 3, 3), (4, 8, 32, 32), (2, 4, 256, 256), (1, 2, 1024, 1024),
                  (1, 1, 4096, 4096)]


def long_double_reference(x, weight, bias, eps, mean=None, var=None):
    """Instance norm of x in numpy's long double (64-bit mantissa on x86: 2^11 times float64's), with
    the instance statistics, or with `mean` / `var` per channel (eval mode)."""
    a = x.detach().cpu().numpy().astype(np.longdouble)
    n, c = a.shape[:2]
    slices = a.reshape(n, c, -1)
    if mean is None:
        mean = slices.mean(-1, keepdims=True)
        var = ((slices - mean) ** 2).mean(-1, keepdims=True)
    else:
        mean = mean.detach().cpu().numpy().astype(np.longdouble)[None, :, None]
        var = var.detach().cpu().numpy().astype(np.longdouble)[None, :, None]
    y = (slices - mean) / np.sqrt(var + np.longdouble(eps))
    if weight is not None:
        y = y * weight.detach().cpu().numpy().astype(np.longdouble)[None, :, None]
        y = y + bias.detach().cpu().numpy().astype(np.longdouble)[None, :, None]
    return y.reshape(a.shape)


def relative_error(y, reference):
    """max |y - reference| / max |reference|: the error relative to the output's scale."""
    y = y.detach().cpu().numpy().astype(np.longdouble)
    return float(np.max(np.abs(y - reference)) / np.max(np.abs(reference)))


@pytest.mark.parametrize("shape", FLOAT64_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mode", ["train", "eval_input_stats", "eval_running_stats"])
def test_float64_keeps_its_digits_on_offset_data(shape, mode):
    generator = torch.Generator(device="cuda").manual_seed(1)
    x = 1e4 + torch.randn(shape, dtype=torch.float64, device="cuda", generator=generator)
    norm = module_classes(len(shape))[1](shape[1], affine=True, track_running_stats=mode == "eval_running_stats")
    norm = norm.to(device="cuda", dtype=torch.float64)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5, generator=generator)
        norm.bias.uniform_(-0.5, 0.5, generator=generator)
        if mode == "eval_running_stats":
            norm.running_mean.copy_(1e4 + torch.randn(shape[1], dtype=torch.float64, device="cuda", generator=generator))
            norm.running_var.uniform_(0.5, 2.0, generator=generator)
        if mode != "train":
            norm.eval()
        y = norm(x)
    stats = (norm.running_mean, norm.running_var) if mode == "eval_running_stats" else (None, None)
    error = relative_error(y, long_double_reference(x, norm.weight, norm.bias, norm.eps, *stats))
    assert error <= 1e-14, f"float64 relative error {error:.3g}"


@pytest.mark.parametrize("shape", [(2, 3, 1, 2), (2, 3, 7, 9), (2, 3, 64, 64), (4, 2, 300, 300), (1, 2, 2048, 2048)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_zero_eps_on_a_constant_slice_is_nan(shape, dtype):
    # Values whose sums round (0.1, 1000.3) and 0: every slice constant, one value per slice.
    values = torch.tensor([0.1, 1000.3, 0.0], dtype=torch.float64)
    slices = shape[0] * shape[1]
    x = values[torch.arange(slices) % 3].reshape(shape[0], shape[1], 1, 1).expand(shape).to("cuda", dtype)
    y = inorm.instance_norm(x.contiguous(), eps=0.0)
    assert torch.isnan(y).all()
    # torch.nn gives NaN wherever its own variance comes out exactly 0: for 0.0 always, for the
    # others where its mean happens to round to the constant.
    expected = F.instance_norm(x.contiguous(), eps=0.0)
    zero_slices = (torch.arange(slices) % 3 == 2).reshape(shape[0], shape[1]).to("cuda")
    assert torch.isnan(expected[zero_slices]).all()
