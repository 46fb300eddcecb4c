"""inorm.convert_instance_norm on real networks built here: a style-transfer generator (Johnson et
al.: InstanceNorm2d after every convolution, residual blocks) and a 3D U-Net encoder (nnU-Net's
conv -> InstanceNorm3d(affine) -> LeakyReLU stages). The CPU tests need no GPU."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
from torch import nn  # noqa: E402

import inorm  # noqa: E402
from helpers import requires_gpu  # noqa: E402


def conv_norm_relu(cin, cout, kernel, stride=1, **norm_kwargs):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, kernel // 2), nn.InstanceNorm2d(cout, **norm_kwargs),
                         nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(conv_norm_relu(channels, channels, 3, affine=True),
                                  nn.Conv2d(channels, channels, 3, padding=1), nn.InstanceNorm2d(channels, affine=True))

    def forward(self, x):
        return x + self.body(x)


def style_transfer_generator():
    return nn.Sequential(
        conv_norm_relu(3, 16, 9, affine=True), conv_norm_relu(16, 32, 3, 2, affine=True),
        conv_norm_relu(32, 64, 3, 2, affine=True), *[Residual(64) for _ in range(3)],
        nn.Upsample(scale_factor=2), conv_norm_relu(64, 32, 3, affine=True),
        nn.Upsample(scale_factor=2), conv_norm_relu(32, 16, 3, affine=True),
        # No affine, running stats tracked: the buffers must come across too.
        conv_norm_relu(16, 16, 3, track_running_stats=True), nn.Conv2d(16, 3, 9, padding=4))


def unet3d_encoder():
    def stage(cin, cout, stride):
        return nn.Sequential(nn.Conv3d(cin, cout, 3, stride, 1), nn.InstanceNorm3d(cout, eps=1e-5, affine=True),
                             nn.LeakyReLU(0.01, inplace=True), nn.Conv3d(cout, cout, 3, 1, 1),
                             nn.InstanceNorm3d(cout, eps=1e-5, affine=True), nn.LeakyReLU(0.01, inplace=True))
    return nn.Sequential(stage(1, 8, 1), stage(8, 16, 2), stage(16, 32, 2))


NETWORKS = {"style_transfer": (style_transfer_generator, (2, 3, 64, 64)), "unet3d": (unet3d_encoder, (2, 1, 24, 24, 24))}


def norms(model):
    return [m for m in model.modules() if isinstance(m, nn.modules.instancenorm._InstanceNorm)]


def randomized(model):
    """The network with non-trivial affine parameters (torch.nn initializes them to 1 and 0)."""
    torch.manual_seed(0)
    with torch.no_grad():
        for norm in norms(model):
            if norm.affine:
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)
    return model


@pytest.mark.parametrize("network", NETWORKS)
def test_every_instance_norm_is_replaced_and_keeps_its_tensors(network):
    build, _ = NETWORKS[network]
    original = randomized(build()).to(torch.float64).eval()
    params, buffers = dict(original.named_parameters()), dict(original.named_buffers())
    before = len(norms(original))
    converted = inorm.convert_instance_norm(original)
    assert converted is original  # converted in place, as convert_sync_batchnorm does
    replaced = norms(converted)
    assert len(replaced) == before > 0
    assert all(type(m).__module__ == "inorm.modules" for m in replaced)
    # The same tensor objects: an optimizer made before the conversion still updates them.
    assert all(p is params[name] for name, p in converted.named_parameters())
    assert all(b is buffers[name] for name, b in converted.named_buffers())
    assert all(not m.training for m in replaced)
    assert all(m.weight.dtype == torch.float64 for m in replaced if m.affine)


def test_a_root_instance_norm_is_returned_replaced():
    original = nn.InstanceNorm3d(6, affine=True, track_running_stats=True, momentum=0.3, eps=1e-3)
    converted = inorm.convert_instance_norm(original)
    assert type(converted) is inorm.InstanceNorm3d
    assert (converted.num_features, converted.eps, converted.momentum, converted.affine,
            converted.track_running_stats) == (6, 1e-3, 0.3, True, True)
    assert converted.weight is original.weight and converted.running_var is original.running_var


def test_subclasses_and_inorm_modules_are_left_alone():
    class Custom(nn.InstanceNorm2d):
        pass
    model = nn.Sequential(Custom(4), inorm.InstanceNorm2d(4))
    first, second = model[0], model[1]
    inorm.convert_instance_norm(model)
    assert model[0] is first and model[1] is second


@pytest.mark.parametrize("network", NETWORKS)
def test_converted_network_is_the_original_bit_for_bit_on_cpu(network):
    build, shape = NETWORKS[network]
    original = randomized(build())
    converted = inorm.convert_instance_norm(copy.deepcopy(original))
    x = 1 + torch.randn(shape)
    y_original, y_converted = original(x), converted(x)
    assert torch.equal(y_converted, y_original)
    y_original.square().mean().backward()
    y_converted.square().mean().backward()
    for (name, p_conv), p_orig in zip(converted.named_parameters(), original.parameters()):
        assert torch.equal(p_conv.grad, p_orig.grad), name


@pytest.fixture
def full_float32_convolutions():
    """Convolutions in float32 rather than TF32 (cuDNN's default): TF32 rounds each input to 10
    bits, so a last-bit difference between two norms' outputs could flip that rounding and show up
    as 1e-3 differences that say nothing about the norms."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@requires_gpu
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("network", NETWORKS)
def test_converted_network_matches_the_original_on_gpu(network, compiled, full_float32_convolutions):
    # float32 through a dozen normalizations: inorm and torch.nn each round differently, so outputs
    # agree to the seed harness's 1e-4 and gradients (sums over the batch) to 1e-3 relative.
    build, shape = NETWORKS[network]
    original = randomized(build()).cuda()
    converted = inorm.convert_instance_norm(copy.deepcopy(original))
    if compiled:
        torch._dynamo.reset()
        converted = torch.compile(converted, fullgraph=True)
    x = 1 + torch.randn(shape, device="cuda")
    y_original, y_converted = original(x), converted(x)
    torch.testing.assert_close(y_converted, y_original, rtol=1e-4, atol=1e-4)
    y_original.square().mean().backward()
    y_converted.square().mean().backward()
    largest = max(p.grad.abs().max().item() for p in original.parameters())
    for (name, p_conv), p_orig in zip(converted.named_parameters(), original.parameters()):
        scale = p_orig.grad.abs().max().item()
        if scale < 1e-6 * largest:
            # A convolution's bias right before an instance norm: the norm removes it, so its exact
            # gradient is 0 and both sides hold rounding noise.
            assert p_conv.grad.abs().max().item() < 1e-5 * largest, name
            continue
        torch.testing.assert_close(p_conv.grad, p_orig.grad, rtol=1e-3, atol=1e-3 * scale, msg=name)
