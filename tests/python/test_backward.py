"""Training with inorm: its backward kernel against torch.nn's backward and a float64 computation, the
backward op under opcheck, a compiled training step, CUDA-graph capture of forward + backward, and
peak memory."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
import torch.nn.functional as F  # noqa: E402

import inorm  # noqa: E402
from helpers import DTYPE_NAMES, module_classes, DTYPES, ORACLE_TOLERANCES, make_input, make_pair, public_suite_cases, requires_gpu  # noqa: E402

pytestmark = requires_gpu

EDGE_SHAPES = [
    pytest.param((3, 5, 2), id="S=2: smallest slice with statistics"),
    pytest.param((2, 3, 4097), id="S=4097: slices start off 16-byte boundaries"),
    pytest.param((2, 3, 127, 129), id="127x129: ragged ends in every slice"),
    pytest.param((1, 1, 1000), id="N*C=1: a single slice"),
    pytest.param((1, 3, 2048, 2048), id="1x3x2048x2048: split_pipelined in the backward"),
    pytest.param((256, 256, 16, 16), id="256x256x16x16: many tiny slices"),
    pytest.param((2, 4, 17, 19, 23), id="2x4x17x19x23: 3D, odd extents"),
    pytest.param((2, 4, 512, 512), id="2x4x512x512: a slice spread over several CTAs"),
    pytest.param((4, 64, 512, 512), id="4x64x512x512: the seed's slices, register parts"),
]


def gradients(module, x, dy):
    """(dx, dweight, dbias) of module(x) against dy, without accumulating into .grad."""
    x = x.detach().requires_grad_()
    return torch.autograd.grad(module(x), [x, module.weight, module.bias], dy)


def float64_gradients(x, module, dy, rows=8):
    """The same gradients in float64 on the same values: torch's own formula, eager, in float64, a
    few samples of the batch at a time (each sample's slices are independent; dweight and dbias add
    up over the batch)."""
    weight = module.weight.detach().double().requires_grad_()
    bias = module.bias.detach().double().requires_grad_()
    dx = torch.empty_like(x, dtype=torch.float64)
    dweight = torch.zeros_like(weight)
    dbias = torch.zeros_like(bias)
    for start in range(0, x.shape[0], rows):
        x64 = x[start:start + rows].detach().double().requires_grad_()
        y = F.instance_norm(x64, weight=weight, bias=bias, eps=module.eps)
        grads = torch.autograd.grad(y, [x64, weight, bias], dy[start:start + rows].double())
        dx[start:start + rows] = grads[0]
        dweight += grads[1]
        dbias += grads[2]
    return dx, dweight, dbias


def expect_no_further_from_float64_than_torch(ours, reference, x, dy):
    """dx, dweight and dbias: inorm's error against float64 is at most torch.nn's own (in the same
    dtype), plus the oracle tolerance of the dtype times the gradient's size."""
    exact = float64_gradients(x, ours, dy)
    for name, got, eager, want in zip(("dx", "dweight", "dbias"), gradients(ours, x, dy), gradients(reference, x, dy),
                                      exact):
        assert got.dtype == eager.dtype and got.shape == eager.shape, name
        slack = ORACLE_TOLERANCES[x.dtype]["atol"] * max(want.abs().max().item() if want.numel() else 0.0, 1.0)
        assert max_error(got, want) <= max_error(eager, want) + slack, (
            f"{name}: inorm {max_error(got, want):.3g} from float64, torch.nn {max_error(eager, want):.3g}")


def max_error(got, exact):
    return (got.double() - exact).abs().max().item()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", EDGE_SHAPES)
@pytest.mark.parametrize("data", ["uniform", "offset"])
def test_backward_no_further_from_float64_than_torch(shape, dtype, data):
    x = make_input(shape, dtype, data=data, seed=len(shape))
    reference, ours = make_pair(*module_classes(len(shape)), shape[1], affine=True, dtype=dtype)
    dy = torch.randn(shape, device="cuda", generator=torch.Generator("cuda").manual_seed(3)).to(dtype)
    expect_no_further_from_float64_than_torch(ours, reference, x, dy)


@pytest.mark.parametrize("case", public_suite_cases(), ids=lambda case: case["id"])
def test_public_suite_backward_no_further_from_float64_than_torch(case):
    shape, dtype = tuple(case["shape"]), DTYPE_NAMES[case["dtype"]]
    x = make_input(shape, dtype, channels_last=case["layout"] == "nhwc")
    reference, ours = make_pair(*module_classes(len(shape)), shape[1], affine=True, dtype=dtype)
    dy = torch.randn(shape, device="cuda", dtype=torch.float32).to(dtype)
    expect_no_further_from_float64_than_torch(ours, reference, x, dy)


def backward_samples():
    """(args) for torch.ops.inorm.instance_norm_backward: train and eval mode, each gradient mask."""
    samples = []
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        x = make_input((3, 4, 9, 11), dtype)
        dy = torch.randn_like(x)
        weight = torch.rand(4, device="cuda", dtype=dtype)
        _, mean, rstd, _, _ = torch.ops.inorm.instance_norm_forward(x, weight, None, None, None, True, 0.1, 1e-5)
        running = (torch.rand(4, device="cuda", dtype=dtype), torch.rand(4, device="cuda", dtype=dtype) + 0.5)
        for mask in ([True, True, True], [True, False, False], [False, True, True]):
            samples.append((dy, x, weight, mean, rstd, None, None, True, 1e-5, mask))
            samples.append((dy, x, weight, None, None, *running, False, 1e-5, mask))
        samples.append((dy, x, None, mean, rstd, None, None, True, 1e-5, [True, False, True]))
        x_cl, dy_cl = x.to(memory_format=torch.channels_last), dy.to(memory_format=torch.channels_last)
        samples.append((dy_cl, x_cl, weight, mean, rstd, None, None, True, 1e-5, [True, True, True]))
    return samples


def test_opcheck_backward():
    for args in backward_samples():
        torch.library.opcheck(torch.ops.inorm.instance_norm_backward.default, args)


def test_backward_is_inorms_kernel():
    """The autograd formula calls inorm's backward op, not torch ops."""
    norm = inorm.InstanceNorm2d(4, affine=True).cuda()
    x = make_input((2, 4, 16, 16), torch.float32).requires_grad_()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        norm(x).sum().backward()
    names = {event.name for event in profile.events()}
    assert "inorm::instance_norm_backward" in names


class _Block(torch.nn.Module):
    """conv -> InstanceNorm(affine) -> ReLU -> conv, a style-transfer generator's residual block."""

    def __init__(self, norm_cls, channels):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = norm_cls(channels, affine=True)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(torch.relu(self.norm(self.conv1(x))))


def test_compiled_training_step_matches_eager(exact_convolutions):
    torch._dynamo.reset()
    torch.manual_seed(0)
    reference = _Block(torch.nn.InstanceNorm2d, 8).cuda()
    ours = _Block(inorm.InstanceNorm2d, 8).cuda()
    ours.load_state_dict(reference.state_dict())
    compiled = torch.compile(ours, fullgraph=True)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (reference, ours)]
    for step in range(3):
        x = make_input((4, 8, 32, 32), torch.float32, seed=step)
        for model, optimizer in zip((reference, compiled), optimizers):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
    for (name, p_ref), p_ours in zip(reference.named_parameters(), ours.parameters()):
        torch.testing.assert_close(p_ours, p_ref, atol=1e-4, rtol=1e-4, msg=name)


@pytest.mark.parametrize("shape,channels_last", [((8, 16, 96, 96), False), ((4, 8, 512, 512), False),
                                                 ((4, 24, 40, 36), True)],
                         ids=["small_slices", "shared_slices", "channels_last"])
def test_cuda_graph_of_forward_and_backward(shape, channels_last):
    norm = inorm.InstanceNorm2d(shape[1], affine=True).cuda()
    static_x = make_input(shape, torch.float32, channels_last=channels_last).requires_grad_()
    static_dy = torch.randn(shape, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch's docs advise
        torch.autograd.grad(norm(static_x), [static_x, norm.weight, norm.bias], static_dy)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_grads = torch.autograd.grad(norm(static_x), [static_x, norm.weight, norm.bias], static_dy)
    for seed in (1, 2):
        with torch.no_grad():
            static_x.copy_(make_input(shape, torch.float32, seed=seed))
            static_dy.normal_()
        graph.replay()
        x = static_x.detach().requires_grad_()
        want = torch.autograd.grad(F.instance_norm(x, weight=norm.weight, bias=norm.bias), [x, norm.weight, norm.bias],
                                   static_dy)
        for got, expected in zip(static_grads, want):
            torch.testing.assert_close(got, expected, atol=1e-3, rtol=1e-4)


def test_channels_last_training_step_under_compile():
    """channels_last in, channels_last out, forward and backward, through torch.compile(fullgraph)."""
    torch._dynamo.reset()
    reference, ours = make_pair(torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 8, affine=True)
    compiled = torch.compile(ours, fullgraph=True)
    x = make_input((4, 8, 24, 20), torch.float32, channels_last=True).requires_grad_()
    dy = torch.randn(x.shape, device="cuda").to(memory_format=torch.channels_last)
    y = compiled(x)
    assert y.is_contiguous(memory_format=torch.channels_last)
    got = torch.autograd.grad(y, [x, ours.weight, ours.bias], dy)
    want = torch.autograd.grad(reference(x), [x, reference.weight, reference.bias], dy)
    assert got[0].is_contiguous(memory_format=torch.channels_last)
    for name, g, w in zip(("dx", "dweight", "dbias"), got, want):
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4, msg=name)


def test_training_step_peak_memory_no_higher_than_torch():
    """The forward saves x, mean and rstd only; the backward allocates dx and the [C] gradients."""
    shape = (16, 64, 128, 128)
    peaks = []
    for module_cls in (torch.nn.InstanceNorm2d, inorm.InstanceNorm2d):
        module = module_cls(shape[1], affine=True).cuda()
        x = make_input(shape, torch.float32).requires_grad_()
        dy = torch.randn(shape, device="cuda")
        torch.autograd.grad(module(x), [x, module.weight, module.bias], dy)  # warm-up
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        grads = torch.autograd.grad(module(x), [x, module.weight, module.bias], dy)
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_allocated() - base)
        del grads, module, x, dy
    eager_peak, inorm_peak = peaks
    assert inorm_peak <= eager_peak, f"inorm's step peaks at {inorm_peak} bytes above its inputs, torch.nn's at {eager_peak}"


def test_eval_mode_backward_with_running_stats():
    reference, ours = make_pair(torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 6, affine=True,
                                track_running_stats=True)
    with torch.no_grad():
        reference.running_mean.uniform_(-0.5, 0.5)
        reference.running_var.uniform_(0.5, 1.5)
    ours.load_state_dict(reference.state_dict())
    reference.eval(), ours.eval()
    x = make_input((3, 6, 20, 20), torch.float32)
    dy = torch.randn_like(x)
    for got, want in zip(gradients(ours, x, dy), gradients(reference, x, dy)):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_empty_batch_gradients_are_empty_and_zero():
    ours = inorm.InstanceNorm2d(3, affine=True).cuda()
    x = make_input((0, 3, 8, 8), torch.float32)
    dx, dweight, dbias = gradients(ours, x, torch.empty_like(x))
    assert dx.shape == x.shape
    assert torch.equal(dweight, torch.zeros(3, device="cuda")) and torch.equal(dbias, torch.zeros(3, device="cuda"))


def test_layout_copies_warn_once_and_keep_the_values():
    """The package's two copies for layouts the kernels do not read each warn once a process (run in a
    fresh one: TORCH_WARN_ONCE's state is the process's): an input neither contiguous nor
    channels_last, and a dense dy in the other memory format than x (an NCHW gradient for channels_last
    input). A sum's expanded dy is copied without a warning; dx is the same as from a dy in x's format."""
    import subprocess
    import sys

    code = (
        "import warnings, torch, inorm\n"
        "warnings.simplefilter('always')\n"
        "m = inorm.InstanceNorm2d(4, affine=True).cuda()\n"
        "x = (1000 + torch.randn(2, 4, 9, 7, device='cuda')).to(memory_format=torch.channels_last).requires_grad_()\n"
        "dy = torch.randn(2, 4, 9, 7, device='cuda')\n"
        "seen = []\n"
        "def grads(dy):\n"
        "    with warnings.catch_warnings(record=True) as w:\n"
        "        warnings.simplefilter('always')\n"
        "        g = torch.autograd.grad(m(x), [x, m.weight], dy)\n"
        "    seen.append(sum('grad_output is not in the input' in str(i.message) for i in w))\n"
        "    return g\n"
        "same = grads(dy.to(memory_format=torch.channels_last))\n"
        "expanded = grads(torch.ones(()).cuda().expand(2, 4, 9, 7))\n"
        "nchw = grads(dy)\n"
        "again = grads(dy)\n"
        "torch.testing.assert_close(nchw[0], same[0], atol=0, rtol=0)\n"
        "torch.testing.assert_close(nchw[1], same[1], atol=0, rtol=0)\n"
        "assert nchw[0].is_contiguous(memory_format=torch.channels_last)\n"
        "print('warnings:', seen, flush=True)\n"
        "m(x.detach().transpose(2, 3))\n"
        "m(x.detach().transpose(2, 3))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"exit status {result.returncode}: {result.stderr[-2000:]}"
    # dy in x's format, expanded, NCHW (warned), NCHW again (once only).
    assert "warnings: [0, 0, 1, 0]" in result.stdout, result.stdout + result.stderr[-2000:]
    # The transposed input, twice: warned once. Counted on stderr, where it lands either way (torch
    # 2.11 prints the forward op's C++ warning there rather than raise it as a Python warning).
    assert result.stderr.count("neither contiguous nor channels_last") == 1, result.stderr[-2000:]
