"""The activations fused into the norm (inorm.InstanceNormAct1d/2d/3d, instance_norm(activation=...),
convert_instance_norm(fuse=True)): the same values and gradients as torch.nn's norm followed by
nn.ReLU / nn.LeakyReLU / nn.SiLU, on CUDA (inorm's kernels, against float64) and on the CPU (PyTorch's
own ops), opcheck, torch.compile, CUDA graphs, gradcheck, and fusion in real networks."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import inorm  # noqa: E402
from helpers import (DTYPES, ORACLE_TOLERANCES, TOLERANCES, expect_compiled_step_matches_eager,  # noqa: E402
                     expect_graph_replay_matches_eager, make_input, outputs_and_gradients, requires_gpu)

ACTIVATIONS = {"relu": (nn.ReLU, {}), "leaky_relu": (nn.LeakyReLU, {"negative_slope": 0.2}), "silu": (nn.SiLU, {})}
FUSED = {3: (nn.InstanceNorm1d, inorm.InstanceNormAct1d), 4: (nn.InstanceNorm2d, inorm.InstanceNormAct2d),
         5: (nn.InstanceNorm3d, inorm.InstanceNormAct3d)}


def unfused_and_fused(rank, channels, activation, device, dtype=torch.float32, **kwargs):
    """nn.Sequential(torch.nn norm, activation) and inorm's fused module with the same random
    parameters and buffers."""
    norm_cls, fused_cls = FUSED[rank]
    activation_cls, activation_kwargs = ACTIVATIONS[activation]
    reference = nn.Sequential(norm_cls(channels, device=device, dtype=dtype, **kwargs),
                              activation_cls(**activation_kwargs))
    fused = fused_cls(channels, device=device, dtype=dtype, activation=activation, **activation_kwargs, **kwargs)
    with torch.no_grad():
        if reference[0].weight is not None:
            reference[0].weight.uniform_(0.5, 1.5)
            reference[0].bias.uniform_(-0.5, 0.5)
        if reference[0].running_mean is not None:
            reference[0].running_mean.uniform_(0.2, 0.8)
            reference[0].running_var.uniform_(0.5, 1.5)
    fused.load_state_dict(reference[0].state_dict())
    return reference, fused


# ---- Every device: the module, its arguments, the CPU's results ------------------------------------


def test_module_takes_torch_arguments_and_names_its_activation():
    fused = inorm.InstanceNormAct2d(8, affine=True, activation="leaky_relu", negative_slope=0.1)
    assert isinstance(fused, nn.InstanceNorm2d) and isinstance(fused, inorm.InstanceNorm2d)
    assert fused.state_dict().keys() == nn.InstanceNorm2d(8, affine=True).state_dict().keys()
    assert "activation='leaky_relu', negative_slope=0.1" in repr(fused)
    assert "activation='silu'" in repr(inorm.InstanceNormAct3d(4, activation="silu"))
    with pytest.raises(ValueError, match="activation must be one of relu, leaky_relu, silu"):
        inorm.InstanceNormAct2d(8, activation="gelu")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_gpu)])
def test_unknown_activation_raises_from_the_op_and_its_fake(device):
    # A RuntimeError, as torch's gelu raises for an unknown `approximate`.
    x = torch.rand(2, 3, 8, device=device)
    with pytest.raises(RuntimeError, match="unknown activation 'tanh'"):
        inorm.instance_norm(x, activation="tanh")
    with torch._subclasses.fake_tensor.FakeTensorMode():
        with pytest.raises(RuntimeError, match="unknown activation 'tanh'"):
            torch.ops.inorm.instance_norm_forward(torch.empty(2, 3, 8), None, None, None, None, True, 0.1, 1e-5,
                                                  "tanh", 0.01)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_cpu_matches_torch(activation, mode):
    # On the CPU the op runs PyTorch's own norm and activation (and their backward).
    reference, fused = unfused_and_fused(4, 5, activation, "cpu", dtype=torch.float64, affine=True,
                                         track_running_stats=True)
    reference.train(mode == "train")
    fused.train(mode == "train")
    x = torch.randn(3, 5, 7, 9, dtype=torch.float64)
    dy = torch.randn_like(x)
    for got, want in zip(outputs_and_gradients(fused, x, dy), outputs_and_gradients(reference, x, dy)):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(fused.running_mean, reference[0].running_mean, atol=1e-15, rtol=1e-15)


def op_samples(device):
    """torch.ops.inorm.instance_norm_forward arguments with each activation, train and eval mode."""
    samples = []
    for activation, (_, kwargs) in ACTIVATIONS.items():
        slope = kwargs.get("negative_slope", 0.01)
        x = torch.randn(3, 4, 9, 11, device=device, requires_grad=True)
        weight = torch.rand(4, device=device, requires_grad=True)
        bias = torch.randn(4, device=device, requires_grad=True)
        running = (torch.rand(4, device=device), torch.rand(4, device=device) + 0.5)
        samples.append((x, weight, bias, None, None, True, 0.1, 1e-5, activation, slope))
        samples.append((x, weight, bias, *running, False, 0.1, 1e-5, activation, slope))
    return samples


def test_opcheck_cpu():
    for args in op_samples("cpu"):
        torch.library.opcheck(torch.ops.inorm.instance_norm_forward.default, args)


def test_gradcheck_float64_cpu():
    for activation in ACTIVATIONS:
        x = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
        weight = torch.rand(3, dtype=torch.float64, requires_grad=True)
        bias = torch.randn(3, dtype=torch.float64, requires_grad=True)
        torch.autograd.gradcheck(lambda *a: inorm.instance_norm(*a[:1], weight=a[1], bias=a[2], activation=activation,
                                                                negative_slope=0.2), (x, weight, bias))


# ---- CUDA: inorm's kernels ---------------------------------------------------------------------------


def float64_reference(reference, x, dy):
    """The unfused modules' output and gradients computed in float64 on the same values."""
    return outputs_and_gradients(copy.deepcopy(reference).to(torch.float64), x.double(), dy.double())


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("shape, channels_last", [((4, 6, 33, 35), False), ((2, 5, 9, 10, 11), False),
                                                  ((3, 7, 4097), False), ((4, 6, 33, 35), True),
                                                  ((2, 2, 400, 1000), False)],
                         ids=["2d", "3d", "1d-odd", "2d-channels_last", "2d-wide-slices"])
def test_cuda_no_further_from_float64_than_torch(shape, channels_last, activation, dtype):
    reference, fused = unfused_and_fused(len(shape), shape[1], activation, "cuda", dtype=dtype, affine=True)
    x = make_input(shape, dtype, channels_last=channels_last, seed=len(shape))
    dy = torch.randn(shape, device="cuda", generator=torch.Generator("cuda").manual_seed(5)).to(dtype)
    ours = outputs_and_gradients(fused, x, dy)
    eager = outputs_and_gradients(reference, x, dy)
    exact = float64_reference(reference, x, dy)
    assert ours[0].is_contiguous(memory_format=torch.channels_last) == channels_last or len(shape) != 4
    for name, got, theirs, want in zip(("y", "dx", "dweight", "dbias"), ours, eager, exact):
        slack = ORACLE_TOLERANCES[dtype]["atol"] * max(want.abs().max().item(), 1.0)
        error, torch_error = (got.double() - want).abs().max().item(), (theirs.double() - want).abs().max().item()
        assert error <= torch_error + slack, f"{name}: inorm {error:.3g} from float64, torch.nn {torch_error:.3g}"


@requires_gpu
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_cuda_eval_mode_matches_torch(activation):
    reference, fused = unfused_and_fused(4, 6, activation, "cuda", affine=True, track_running_stats=True)
    reference.eval()
    fused.eval()
    x = make_input((2, 6, 17, 19), torch.float32)
    dy = torch.randn_like(x)
    for got, want in zip(outputs_and_gradients(fused, x, dy), outputs_and_gradients(reference, x, dy)):
        torch.testing.assert_close(got, want, **TOLERANCES[torch.float32])


@requires_gpu
def test_opcheck_cuda():
    for args in op_samples("cuda"):
        torch.library.opcheck(torch.ops.inorm.instance_norm_forward.default, args)
    x = make_input((3, 4, 9, 11), torch.float32)
    weight, bias = torch.rand(4, device="cuda"), torch.randn(4, device="cuda")
    _, mean, rstd, _, _ = torch.ops.inorm.instance_norm_forward(x, weight, bias, None, None, True, 0.1, 1e-5, "silu")
    torch.library.opcheck(torch.ops.inorm.instance_norm_backward.default,
                          (torch.randn_like(x), x, weight, mean, rstd, None, None, True, 1e-5, [True, True, True],
                           bias, "silu", 0.01))


@requires_gpu
def test_gradcheck_float64_cuda():
    for activation in ACTIVATIONS:
        x = torch.randn(2, 3, 6, dtype=torch.float64, device="cuda", requires_grad=True)
        weight = torch.rand(3, dtype=torch.float64, device="cuda", requires_grad=True)
        bias = torch.randn(3, dtype=torch.float64, device="cuda", requires_grad=True)
        torch.autograd.gradcheck(lambda *a: inorm.instance_norm(*a[:1], weight=a[1], bias=a[2], activation=activation,
                                                                negative_slope=0.2), (x, weight, bias))


@requires_gpu
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_compiled_training_step_matches_eager(activation):
    _, fused = unfused_and_fused(4, 8, activation, "cuda", affine=True)
    expect_compiled_step_matches_eager(fused, (4, 8, 32, 32))


@requires_gpu
def test_cuda_graph_of_fused_forward_and_backward():
    _, fused = unfused_and_fused(4, 8, "silu", "cuda", affine=True)
    expect_graph_replay_matches_eager(fused, (4, 8, 64, 64))


# ---- Networks: convert_instance_norm(fuse=True) ------------------------------------------------------


def conv_norm_act_stack():
    """nnU-Net's stage (conv -> InstanceNorm3d(affine) -> LeakyReLU(0.01)) twice, and a 2D
    conv -> InstanceNorm2d -> ReLU / SiLU pair, one norm followed by no activation."""
    return nn.ModuleDict({
        "unet3d": nn.Sequential(nn.Conv3d(1, 8, 3, padding=1), nn.InstanceNorm3d(8, affine=True),
                                nn.LeakyReLU(0.01, inplace=True), nn.Conv3d(8, 8, 3, padding=1),
                                nn.InstanceNorm3d(8, affine=True), nn.LeakyReLU(0.01, inplace=True)),
        "cyclegan": nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8, affine=True), nn.ReLU(True),
                                  nn.Conv2d(8, 8, 3, padding=1), nn.InstanceNorm2d(8, track_running_stats=True),
                                  nn.SiLU(), nn.Conv2d(8, 8, 3, padding=1), nn.InstanceNorm2d(8)),
    })


def randomized(model):
    torch.manual_seed(0)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.instancenorm._InstanceNorm) and m.affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model


def test_fuse_replaces_pairs_and_keeps_indices_and_state_dict():
    original = randomized(conv_norm_act_stack())
    keys = original.state_dict().keys()
    converted = inorm.convert_instance_norm(original, fuse=True)
    kinds = [type(m).__name__ for m in converted["unet3d"]]
    assert kinds == ["Conv3d", "InstanceNormAct3d", "Identity", "Conv3d", "InstanceNormAct3d", "Identity"]
    assert converted["unet3d"][1].activation == "leaky_relu" and converted["unet3d"][1].negative_slope == 0.01
    kinds = [type(m).__name__ for m in converted["cyclegan"]]
    assert kinds == ["Conv2d", "InstanceNormAct2d", "Identity", "Conv2d", "InstanceNormAct2d", "Identity", "Conv2d",
                     "InstanceNorm2d"]
    assert [converted["cyclegan"][i].activation for i in (1, 4)] == ["relu", "silu"]
    assert converted.state_dict().keys() == keys
    # Without fuse only the norms change.
    plain = inorm.convert_instance_norm(randomized(conv_norm_act_stack()))
    assert [type(m).__name__ for m in plain["unet3d"]][1:3] == ["InstanceNorm3d", "LeakyReLU"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_gpu)])
@pytest.mark.parametrize("compiled", [False, True])
def test_fused_networks_match_the_original(device, compiled, exact_convolutions):
    shapes = {"unet3d": (2, 1, 12, 12, 12), "cyclegan": (2, 3, 24, 24)}
    original = randomized(conv_norm_act_stack()).to(device)
    converted = inorm.convert_instance_norm(copy.deepcopy(original), fuse=True)
    for name, shape in shapes.items():
        x = torch.randn(shape, device=device, generator=torch.Generator(device).manual_seed(1))
        net = torch.compile(converted[name], fullgraph=True) if compiled else converted[name]
        y_want = original[name](x.clone().requires_grad_())
        y_got = net(x.clone().requires_grad_())
        dy = torch.randn_like(y_want)
        want = torch.autograd.grad(y_want, list(original[name].parameters()), dy)
        got = torch.autograd.grad(y_got, list(converted[name].parameters()), dy)
        torch.testing.assert_close(y_got, y_want, atol=1e-4, rtol=1e-4)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, atol=1e-3, rtol=1e-3)
