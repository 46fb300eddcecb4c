"""GroupNorm (inorm.GroupNorm, inorm.GroupNormAct, inorm.group_norm, torch.ops.inorm.group_norm*,
convert_group_norm): torch.nn.GroupNorm's checks and results on the CPU (bit for bit), inorm's kernels on
CUDA held to float64 no further than torch.nn is, on every group count, activation and dtype and on
every group_norm case of shared/suites/fused.json, and in channels_last without a copy; opcheck, fake
kernels, torch.compile, CUDA graphs, gradcheck, and fusion in a diffusion UNet's ResNet block."""
import copy
import json
import os

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
import torch._dynamo.testing  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import inorm  # noqa: E402
from inorm.bench import zero_dy_at_kinks  # noqa: E402
from helpers import (DTYPE_NAMES, DTYPES, ORACLE_TOLERANCES, REPO, expect_compiled_step_matches_eager,  # noqa: E402
                     expect_graph_replay_matches_eager, make_input, outputs_and_gradients, poison_next_allocation,
                     raised, requires_gpu)

ACTIVATIONS = {"none": None, "relu": nn.ReLU(), "leaky_relu": nn.LeakyReLU(0.2), "silu": nn.SiLU()}
CPU_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def unfused_and_ours(groups, channels, activation, device, dtype=torch.float32, affine=True):
    """torch.nn.GroupNorm (followed by the activation module) and inorm's module (GroupNormAct where
    there is an activation) with the same random affine parameters."""
    norm = nn.GroupNorm(groups, channels, affine=affine, device=device, dtype=dtype)
    if affine:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    if activation == "none":
        reference, ours = norm, inorm.GroupNorm(groups, channels, affine=affine, device=device, dtype=dtype)
    else:
        reference = nn.Sequential(norm, ACTIVATIONS[activation])
        slope = {"negative_slope": 0.2} if activation == "leaky_relu" else {}
        ours = inorm.GroupNormAct(groups, channels, affine=affine, device=device, dtype=dtype, activation=activation,
                                  **slope)
    ours.load_state_dict(norm.state_dict())
    return reference, ours


# ---- Every device: the module, the checks, the CPU's results -------------------------------------------


def test_module_is_torch_nn_group_norm():
    norm = inorm.GroupNorm(4, 8)
    assert isinstance(norm, nn.GroupNorm)
    assert norm.state_dict().keys() == nn.GroupNorm(4, 8).state_dict().keys()
    assert repr(norm) == "GroupNorm(4, 8, eps=1e-05, affine=True)"
    fused = inorm.GroupNormAct(4, 8, affine=False, activation="leaky_relu", negative_slope=0.1)
    assert isinstance(fused, inorm.GroupNorm)
    assert repr(fused) == "GroupNormAct(4, 8, eps=1e-05, affine=False, activation='leaky_relu', negative_slope=0.1)"
    assert inorm.GroupNormAct(32, 64).activation == "silu"  # a diffusion UNet's pairing is the default
    with pytest.raises(ValueError, match="activation must be one of relu, leaky_relu, silu"):
        inorm.GroupNormAct(4, 8, activation="gelu")
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        inorm.GroupNorm(4, 6)  # torch.nn.GroupNorm's own check


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_gpu)])
def test_bad_arguments_raise_what_torch_raises(device):
    x = torch.rand(2, 6, 4, device=device)
    ones = torch.ones(5, device=device)
    calls = {
        "channels not divisible": lambda f: f(x, 4),
        "weight of the wrong size": lambda f: f(x, 3, ones),
        "no groups": lambda f: f(x, 0),  # ZeroDivisionError from F.group_norm's size check
        "negative groups": lambda f: f(x, -3),
        "one dimension": lambda f: f(torch.rand(6, device=device), 3),
        "one value per group": lambda f: f(torch.rand(1, 6, 1, device=device), 6),  # ValueError
    }
    for name, call in calls.items():
        theirs, ours = raised(lambda: call(F.group_norm)), raised(lambda: call(inorm.group_norm))
        assert theirs is not None and ours == theirs, name
    # The bias's check: torch.nn's type and message start (its message names a wrong shape).
    error, message = raised(lambda: inorm.group_norm(x, 3, None, ones))
    assert error is RuntimeError and message.startswith("Expected bias to be a vector of size equal to the number")
    with pytest.raises(RuntimeError, match="unknown activation 'tanh'"):
        inorm.group_norm(x, 3, activation="tanh")


@pytest.mark.parametrize("dtype", CPU_DTYPES, ids=str)
@pytest.mark.parametrize("rank", [2, 3, 4, 5])
@pytest.mark.parametrize("groups", [1, 2, 4])
@pytest.mark.parametrize("affine", [False, True])
def test_cpu_is_torch_nn_bit_for_bit(dtype, rank, groups, affine):
    # Output and every gradient: identical bits, since both run ATen's native_group_norm on the same
    # tensor (offset data: 3 + 2 * randn; parameters in float32 for the half types, torch.nn's rule).
    param_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    reference, ours = unfused_and_ours(groups, 4, "none", "cpu", param_dtype, affine)
    generator = torch.Generator().manual_seed(rank * 10 + groups)
    shape = [3, 4] + [5, 7, 3][: rank - 2]
    x = (3 + 2 * torch.randn(shape, generator=generator)).to(dtype)
    dy = torch.randn(shape, generator=generator).to(dtype)
    for got, want in zip(outputs_and_gradients(ours, x, dy), outputs_and_gradients(reference, x, dy)):
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_cpu_channels_last_gives_torch_values_in_channels_last():
    # torch.nn.GroupNorm keeps channels_last on the CPU; inorm's output keeps it on every device.
    reference, ours = unfused_and_ours(2, 4, "none", "cpu")
    x = torch.randn(2, 4, 5, 6).to(memory_format=torch.channels_last)
    y = ours(x)
    assert y.is_contiguous(memory_format=torch.channels_last) and torch.equal(y, reference(x))


@pytest.mark.parametrize("activation", [a for a in ACTIVATIONS if a != "none"])
def test_cpu_activation_matches_torch(activation):
    reference, ours = unfused_and_ours(3, 6, activation, "cpu", torch.float64)
    x = torch.randn(2, 6, 5, 7, dtype=torch.float64)
    dy = torch.randn_like(x)
    for got, want in zip(outputs_and_gradients(ours, x, dy), outputs_and_gradients(reference, x, dy)):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)


def op_samples(device):
    """torch.ops.inorm.group_norm_forward arguments: affine or not, float32 (x needs a gradient) and
    bfloat16 channels_last, each activation."""
    samples = []
    for activation in ACTIVATIONS:
        for dtype, affine in ((torch.float32, True), (torch.float32, False), (torch.bfloat16, True)):
            x = (1 + torch.randn(3, 6, 9, 11, device=device)).to(dtype).requires_grad_(dtype == torch.float32)
            if dtype == torch.bfloat16:
                x = x.to(memory_format=torch.channels_last)
            weight = torch.rand(6, device=device, requires_grad=True) if affine else None
            bias = torch.randn(6, device=device, requires_grad=True) if affine else None
            samples.append((x, 3, weight, bias, 1e-5, activation, 0.2))
    return samples


def check_ops(device):
    for args in op_samples(device):
        torch.library.opcheck(torch.ops.inorm.group_norm_forward.default, args)
        torch.library.opcheck(torch.ops.inorm.group_norm.default, args)
        # The backward op on tensors that need no gradient: its own derivative is not implemented.
        x, groups, weight, bias, eps, activation, slope = (a.detach() if isinstance(a, torch.Tensor) else a
                                                           for a in args)
        _, mean, rstd = torch.ops.inorm.group_norm_forward(x, groups, weight, bias, eps, activation, slope)
        torch.library.opcheck(torch.ops.inorm.group_norm_backward.default,
                              (torch.randn_like(x), x, mean, rstd, weight, groups, eps, [True, True, True],
                               bias, activation, slope))


def test_opcheck_cpu():
    check_ops("cpu")


def gradcheck(device):
    for activation in ACTIVATIONS:
        x = torch.randn(2, 6, 5, dtype=torch.float64, device=device, requires_grad=True)
        weight = torch.rand(6, dtype=torch.float64, device=device, requires_grad=True)
        bias = torch.randn(6, dtype=torch.float64, device=device, requires_grad=True)
        assert torch.autograd.gradcheck(
            lambda *a: inorm.group_norm(a[0], 3, a[1], a[2], activation=None if activation == "none" else activation,
                                        negative_slope=0.2), (x, weight, bias))


def test_gradcheck_float64_cpu():
    gradcheck("cpu")


def test_double_backward_raises_rather_than_returning_zeros():
    x = torch.randn(2, 4, 5, dtype=torch.float64, requires_grad=True)
    (dx,) = torch.autograd.grad(inorm.group_norm(x, 2).pow(2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        dx.sum().backward()


@pytest.mark.parametrize("mask", [(True, True, True), (True, False, False), (False, True, True)], ids=str)
def test_fake_kernels_give_the_kernels_shapes(mask):
    x = torch.empty(2, 6, 5, 7, device="meta", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    weight = torch.empty(6, device="meta")
    y, mean, rstd = torch.ops.inorm.group_norm_forward(x, 3, weight, weight, 1e-5)
    assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous(memory_format=torch.channels_last)
    assert mean.shape == rstd.shape == (2, 3) and mean.dtype == torch.float32
    dx, dweight, dbias = torch.ops.inorm.group_norm_backward(x, x, mean, rstd, weight, 3, 1e-5, list(mask))
    assert dx.shape == (x.shape if mask[0] else (0,))
    assert not mask[0] or dx.is_contiguous(memory_format=torch.channels_last)
    assert dweight.shape == dbias.shape == ((6,) if mask[1] else (0,)) and dweight.dtype == torch.float32


def test_compile_fullgraph_traces_one_graph_with_backward():
    torch._dynamo.reset()
    norm = inorm.GroupNormAct(2, 4).to("meta")
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(norm, fullgraph=True, backend=counter)
    x = torch.empty(2, 4, 8, 8, device="meta", requires_grad=True)
    compiled(x).sum().backward()
    assert x.grad.shape == x.shape and norm.weight.grad.shape == (4,)
    assert counter.frame_count == 1


# ---- CUDA: inorm's kernels ---------------------------------------------------------------------------


# Where ReLU's or LeakyReLU's input z lies this close to 0, rounding in the dtype (1e-4 on 1000 +
# randn in float32) decides which slope its gradient takes: dy is zero there (zero_dy_at_kinks).
KINK_BAND = 1e-3


def expect_no_further_from_float64_than_torch(reference, ours, x, dy):
    """y, dx, dweight, dbias: inorm's largest error against the unfused torch.nn modules in float64
    is at most torch.nn's own in the input's dtype, plus the dtype's oracle tolerance times the
    value's size. Our outputs come from poisoned memory (NaN unless written)."""
    dy = zero_dy_at_kinks(reference, x, dy, KINK_BAND)
    poison_next_allocation(x)
    ours_all = outputs_and_gradients(ours, x, dy)
    eager = outputs_and_gradients(reference, x, dy)
    exact = outputs_and_gradients(copy.deepcopy(reference).to(torch.float64), x.double(), dy.double())
    for name, got, theirs, want in zip(("y", "dx", "dweight", "dbias"), ours_all, eager, exact):
        assert got.dtype == theirs.dtype and got.shape == theirs.shape, name
        slack = ORACLE_TOLERANCES[x.dtype]["atol"] * max(want.abs().max().item(), 1.0)
        error = (got.double() - want).abs().max().item()
        torch_error = (theirs.double() - want).abs().max().item()
        assert error <= torch_error + slack, f"{name}: inorm {error:.3g} from float64, torch.nn {torch_error:.3g}"


CUDA_SHAPES = [
    pytest.param((4, 8, 33, 35), 1, id="4x8x33x35 G=1: a sample is one slice (LayerNorm over C, H, W)"),
    pytest.param((4, 8, 33, 35), 2, id="4x8x33x35 G=2: four channels a slice, odd extents"),
    pytest.param((4, 8, 33, 35), 8, id="4x8x33x35 G=C: one channel a group (InstanceNorm)"),
    pytest.param((2, 6, 9, 10, 11), 3, id="2x6x9x10x11 G=3: 3D"),
    pytest.param((3, 12, 4097), 4, id="3x12x4097 G=4: channels start off 16-byte boundaries"),
    pytest.param((2, 4, 300, 1000), 2, id="2x4x300x1000 G=2: 2.4 MB slices, several CTAs a slice"),
    pytest.param((5, 6, 2), 3, id="5x6x2 G=3: four values a group, register groups"),
]


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("shape, groups", CUDA_SHAPES)
def test_cuda_no_further_from_float64_than_torch(shape, groups, activation, dtype):
    # Parameters in the input's dtype: torch.nn.GroupNorm on CUDA takes no other.
    reference, ours = unfused_and_ours(groups, shape[1], activation, "cuda", dtype)
    x = make_input(shape, dtype, data="offset", seed=len(shape) + groups)
    dy = torch.randn(shape, device="cuda", generator=torch.Generator("cuda").manual_seed(5)).to(dtype)
    expect_no_further_from_float64_than_torch(reference, ours, x, dy)


def fused_suite_group_norm_cases():
    path = os.path.join(REPO, "..", "shared", "suites", "fused.json")
    if not os.path.exists(path):
        path = os.path.join(REPO, "bench", "suites", "fused.json")
    with open(path) as f:
        cases = [c for c in json.load(f)["cases"] if c["op"] == "group_norm"]
    return [pytest.param(c, id=c["id"]) for c in cases]


@requires_gpu
@pytest.mark.parametrize("case", fused_suite_group_norm_cases())
def test_cuda_fused_suite_case_no_further_from_float64_than_torch(case):
    shape, dtype = tuple(case["shape"]), DTYPE_NAMES[case["dtype"]]
    reference, ours = unfused_and_ours(case["groups"], shape[1], case["activation"], "cuda", dtype, case["affine"])
    x = make_input(shape, dtype, channels_last=case["layout"] == "nhwc")
    dy = torch.randn(shape, device="cuda", generator=torch.Generator("cuda").manual_seed(3)).to(dtype)
    expect_no_further_from_float64_than_torch(reference, ours, x, dy)


CHANNELS_LAST_SHAPES = [
    pytest.param((2, 64, 33, 31), 8, id="2x64x33x31 G=8: tiles of whole 64-channel rows"),
    pytest.param((2, 320, 16, 16), 32, id="2x320x16x16 G=32: SD UNet's channels, two blocks of 160"),
    pytest.param((2, 6, 9, 10, 11), 3, id="2x6x9x10x11 G=3: channels_last_3d"),
]


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("activation", ["none", "silu", "leaky_relu"])
@pytest.mark.parametrize("shape, groups", CHANNELS_LAST_SHAPES)
def test_cuda_channels_last_runs_without_a_copy_and_keeps_its_format(shape, groups, activation, dtype, capfd):
    # A copy would warn: PyTorch's C++ warning (TORCH_WARN_ONCE), which a custom op's call from
    # Python prints to stderr; once a process, so warn_always, as an earlier test may have had it.
    reference, ours = unfused_and_ours(groups, shape[1], activation, "cuda", dtype)
    x = make_input(shape, dtype, data="offset", channels_last=True, seed=groups)
    dy = torch.randn(shape, device="cuda", generator=torch.Generator("cuda").manual_seed(7)).to(dtype)
    dy = dy.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    saved = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        expect_no_further_from_float64_than_torch(reference, ours, x, dy)
        y, dx = outputs_and_gradients(ours, x, dy)[:2]
    finally:
        torch.set_warn_always(saved)
    assert "inorm:" not in capfd.readouterr().err
    memory_format = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
    assert y.is_contiguous(memory_format=memory_format) and dx.is_contiguous(memory_format=memory_format)


@requires_gpu
@pytest.mark.parametrize("activation", ["none", "silu"])
def test_cuda_autocast_runs_in_float32_as_torch(activation):
    # torch.group_norm is on CUDA autocast's float32 list: float16 input, float32 output.
    reference, ours = unfused_and_ours(4, 16, activation, "cuda")
    x = make_input((2, 16, 9, 10), torch.float16)
    dy = torch.randn(x.shape, device="cuda", dtype=torch.float32)
    with torch.autocast("cuda", dtype=torch.float16):
        got, want = outputs_and_gradients(ours, x, dy), outputs_and_gradients(reference, x, dy)
    for name, g, w in zip(("y", "dx", "dweight", "dbias"), got, want):
        assert g.dtype == w.dtype, name
        torch.testing.assert_close(g, w, atol=1e-3, rtol=1e-3, msg=name)
    assert got[0].dtype == torch.float32 and got[1].dtype == torch.float16


@requires_gpu
def test_cuda_parameter_on_another_device_raises():
    x = torch.rand(2, 4, 8, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        inorm.group_norm(x, 2, torch.ones(4))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        inorm.GroupNorm(2, 4, device="meta")(x)


@requires_gpu
def test_opcheck_cuda():
    check_ops("cuda")


@requires_gpu
def test_gradcheck_float64_cuda():
    gradcheck("cuda")


@requires_gpu
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_compiled_training_step_matches_eager(activation):
    _, ours = unfused_and_ours(4, 16, activation, "cuda")
    expect_compiled_step_matches_eager(ours, (4, 16, 32, 32))


@requires_gpu
def test_cuda_graph_of_forward_and_backward():
    _, ours = unfused_and_ours(4, 16, "silu", "cuda")
    expect_graph_replay_matches_eager(ours, (2, 16, 64, 64))


# ---- A diffusion UNet's ResNet block: convert_group_norm(fuse=True) ---------------------------------------


class ResnetBlock(nn.Module):
    """A diffusion UNet's ResNet block as guided-diffusion writes it: GroupNorm(32) + SiLU + conv twice
    in nn.Sequential, a timestep embedding added in between, a 1x1 skip convolution."""

    def __init__(self, channels_in, channels_out, embedding):
        super().__init__()
        self.in_layers = nn.Sequential(nn.GroupNorm(32, channels_in), nn.SiLU(),
                                       nn.Conv2d(channels_in, channels_out, 3, padding=1))
        self.embedding = nn.Sequential(nn.SiLU(), nn.Linear(embedding, channels_out))
        self.out_layers = nn.Sequential(nn.GroupNorm(32, channels_out), nn.SiLU(), nn.Dropout(0.0),
                                        nn.Conv2d(channels_out, channels_out, 3, padding=1))
        self.skip = nn.Conv2d(channels_in, channels_out, 1)

    def forward(self, x, emb):
        h = self.in_layers(x) + self.embedding(emb)[:, :, None, None]
        return self.skip(x) + self.out_layers(h)


def resnet_block():
    torch.manual_seed(0)
    block = ResnetBlock(64, 96, 32)
    with torch.no_grad():
        for m in block.modules():
            if isinstance(m, nn.GroupNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return block


def test_fuse_replaces_group_norm_and_silu_pairs():
    original = resnet_block()
    keys = original.state_dict().keys()
    weight = original.in_layers[0].weight
    converted = inorm.convert_group_norm(original, fuse=True)
    assert [type(m).__name__ for m in converted.in_layers] == ["GroupNormAct", "Identity", "Conv2d"]
    assert [type(m).__name__ for m in converted.out_layers] == ["GroupNormAct", "Identity", "Dropout", "Conv2d"]
    assert converted.in_layers[0].weight is weight and converted.in_layers[0].num_groups == 32
    assert type(converted.embedding[0]) is nn.SiLU  # no norm before it: left alone
    assert converted.state_dict().keys() == keys
    plain = inorm.convert_group_norm(resnet_block())
    assert [type(m).__name__ for m in plain.in_layers] == ["GroupNorm", "SiLU", "Conv2d"]
    assert type(plain.in_layers[0]) is inorm.GroupNorm


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_gpu)])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_fused_resnet_block_matches_the_original(device, compiled, exact_convolutions):
    original = resnet_block().to(device)
    converted = inorm.convert_group_norm(copy.deepcopy(original), fuse=True)
    if compiled:
        torch._dynamo.reset()
        converted = torch.compile(converted, fullgraph=True)
    generator = torch.Generator(device).manual_seed(1)
    x = torch.randn(2, 64, 16, 16, device=device, generator=generator)
    emb = torch.randn(2, 32, device=device, generator=generator)
    y_want, y_got = original(x, emb), converted(x, emb)
    dy = torch.randn_like(y_want)
    want = torch.autograd.grad(y_want, list(original.parameters()), dy)
    got = torch.autograd.grad(y_got, list(converted.parameters()), dy)
    torch.testing.assert_close(y_got, y_want, atol=1e-4, rtol=1e-4)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-3, rtol=1e-3)
