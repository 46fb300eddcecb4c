"""torch.nn semantics of inorm's modules and functional: errors, warnings, state_dict, modes."""
import inspect
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
import torch.nn.functional as F  # noqa: E402

import inorm  # noqa: E402
from helpers import TOLERANCES, make_input, make_pair, raised, requires_gpu  # noqa: E402

PAIRS = [(torch.nn.InstanceNorm1d, inorm.InstanceNorm1d, 3),
         (torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 4),
         (torch.nn.InstanceNorm3d, inorm.InstanceNorm3d, 5)]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def assert_same_error(reference_call, inorm_call):
    expected, actual = raised(reference_call), raised(inorm_call)
    assert expected is not None, "torch.nn accepted the input"
    assert actual == expected


# The checks below run before any kernel, so they hold on a CPU-only machine as well.
@pytest.mark.parametrize("torch_cls,inorm_cls,rank", PAIRS)
def test_wrong_rank_error_matches_torch(torch_cls, inorm_cls, rank):
    # A rank above the batched one and one below the unbatched one: the module's own test for
    # batched input must leave both to torch.nn's forward and its message.
    for shape in ([2] * (rank + 1), [2]):
        x = torch.zeros(shape, device=DEVICE)
        assert_same_error(lambda: torch_cls(2)(x), lambda: inorm_cls(2)(x))


@pytest.mark.parametrize("torch_cls,inorm_cls,rank", PAIRS)
def test_wrong_channels_with_affine_error_matches_torch(torch_cls, inorm_cls, rank):
    x = torch.zeros([2, 3] + [4] * (rank - 2), device=DEVICE)
    assert_same_error(lambda: torch_cls(4, affine=True).to(DEVICE)(x), lambda: inorm_cls(4, affine=True).to(DEVICE)(x))


@pytest.mark.parametrize("shape", [(2, 4, 1, 1), (4, 1, 1)], ids=["batched", "unbatched"])
def test_single_spatial_element_error_matches_torch(shape):
    x = torch.zeros(shape, device=DEVICE)
    assert_same_error(lambda: torch.nn.InstanceNorm2d(4)(x), lambda: inorm.InstanceNorm2d(4)(x))
    # Eval mode without running stats still uses input statistics, so it raises too.
    assert_same_error(lambda: torch.nn.InstanceNorm2d(4).eval()(x), lambda: inorm.InstanceNorm2d(4).eval()(x))


def test_functional_signature_matches_torch():
    # torch's parameters in torch's order, then the fused activation's two, which default to none.
    ours = inspect.signature(inorm.instance_norm).parameters
    assert list(ours)[:-2] == list(inspect.signature(F.instance_norm).parameters)
    assert list(ours)[-2:] == ["activation", "negative_slope"] and ours["activation"].default is None
    for name, parameter in inspect.signature(F.instance_norm).parameters.items():
        assert ours[name].default == parameter.default


def test_constructor_and_state_dict_match_torch():
    for torch_cls, inorm_cls, _ in PAIRS:
        assert inspect.signature(inorm_cls.__init__) == inspect.signature(torch_cls.__init__)
        for kwargs in ({}, {"affine": True}, {"track_running_stats": True}, {"affine": True, "track_running_stats": True}):
            reference, ours = torch_cls(6, **kwargs), inorm_cls(6, **kwargs)
            assert repr(ours) == repr(reference)
            assert ours.state_dict().keys() == reference.state_dict().keys()
            with torch.no_grad():
                for tensor in reference.state_dict().values():
                    if tensor.is_floating_point():
                        tensor.uniform_()
            ours.load_state_dict(reference.state_dict())  # torch.nn -> inorm
            back = torch_cls(6, **kwargs)
            back.load_state_dict(ours.state_dict())  # inorm -> torch.nn
            for key, value in reference.state_dict().items():
                assert torch.equal(back.state_dict()[key], value)


def test_old_checkpoint_with_running_stats_is_refused_like_torch():
    # torch.nn's versioned state_dict rule: running stats in a checkpoint for track_running_stats=False.
    state = torch.nn.InstanceNorm2d(3, track_running_stats=True).state_dict()
    state._metadata = {"": {}}  # a checkpoint from before the version field
    assert_same_error(lambda: torch.nn.InstanceNorm2d(3).load_state_dict(state),
                      lambda: inorm.InstanceNorm2d(3).load_state_dict(state))


@requires_gpu
def test_wrong_channels_without_affine_warns_like_torch():
    x = make_input((2, 3, 8, 8), torch.float32)
    with warnings.catch_warnings(record=True) as expected:
        warnings.simplefilter("always")
        torch.nn.InstanceNorm2d(4)(x)
    with warnings.catch_warnings(record=True) as actual:
        warnings.simplefilter("always")
        y = inorm.InstanceNorm2d(4)(x)
    assert [(w.category, str(w.message)) for w in actual] == [(w.category, str(w.message)) for w in expected]
    torch.testing.assert_close(y, torch.nn.InstanceNorm2d(4)(x), **TOLERANCES[torch.float32])


@requires_gpu
def test_eval_without_running_stats_functional_error_matches_torch():
    x = make_input((2, 3, 8, 8), torch.float32)
    assert_same_error(lambda: F.instance_norm(x, use_input_stats=False), lambda: inorm.instance_norm(x, use_input_stats=False))


@requires_gpu
def test_integer_input_error_type_matches_torch():
    x = torch.ones(2, 3, 8, 8, dtype=torch.int64, device="cuda")
    expected, actual = raised(lambda: torch.nn.InstanceNorm2d(3)(x)), raised(lambda: inorm.InstanceNorm2d(3)(x))
    assert issubclass(actual[0], expected[0]), (expected, actual)
    assert "int64" in actual[1] or "Long" in actual[1]


@requires_gpu
@pytest.mark.parametrize("torch_cls,inorm_cls,rank", PAIRS)
def test_unbatched_input(torch_cls, inorm_cls, rank):
    x = make_input([5] + [9] * (rank - 2), torch.float32)
    reference, ours = make_pair(torch_cls, inorm_cls, 5, affine=True)
    y = ours(x)
    assert y.shape == x.shape
    torch.testing.assert_close(y, reference(x), **TOLERANCES[torch.float32])


@requires_gpu
@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_running_stats_train_then_eval(momentum):
    reference, ours = make_pair(torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 6, affine=True,
                                track_running_stats=True, momentum=momentum)
    for step in range(3):  # three updates, fresh data each
        x = make_input((4, 6, 20, 24), torch.float32, seed=step)
        torch.testing.assert_close(ours(x), reference(x), **TOLERANCES[torch.float32])
    torch.testing.assert_close(ours.running_mean, reference.running_mean, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(ours.running_var, reference.running_var, atol=1e-6, rtol=1e-6)
    reference.eval(), ours.eval()
    for shape in [(4, 6, 20, 24), (4, 6, 1, 1)]:  # eval normalizes elementwise, so S = 1 is allowed
        x = make_input(shape, torch.float32, seed=9)
        torch.testing.assert_close(ours(x), reference(x), **TOLERANCES[torch.float32])


class _Doubled(torch.nn.Module):
    def forward(self, weight):
        return 2 * weight


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_gpu)])
def test_parametrized_weight_and_reassigned_buffer_are_the_ones_used(device):
    # The module reads its tensors from nn.Module's dicts (host time per call): a parametrization
    # moves the weight out of them, and a reassigned buffer replaces the entry; both must be what
    # the call normalizes with, as in torch.nn.
    reference, ours = make_pair(torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 4, device=device, affine=True,
                                track_running_stats=True)
    for module in (reference, ours):
        torch.nn.utils.parametrize.register_parametrization(module, "weight", _Doubled())
        module.running_mean = torch.full((4,), 0.25, device=device)
        module.eval()
    x = torch.rand(2, 4, 6, 7, generator=torch.Generator().manual_seed(3)).to(device)
    torch.testing.assert_close(ours(x), reference(x), **TOLERANCES[torch.float32])


@requires_gpu
@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_direct_launch_is_the_functional_op_bit_for_bit(use_input_stats, dtype):
    # Where autograd records nothing, the user-facing op launches the kernels itself and updates the
    # running stats in place (ops.cpp runs_kernels_directly): the same bits as the functional op,
    # and the running stats' version moves as an in-place copy_ moves it.
    x = make_input((4, 8, 33, 35), dtype, data="offset")
    weight, bias = torch.rand(8, device="cuda") + 0.5, torch.rand(8, device="cuda")
    running_mean, running_var = 1000 + torch.rand(8, device="cuda"), torch.rand(8, device="cuda") + 0.5
    stats = running_mean.clone(), running_var.clone()
    version = stats[0]._version
    direct = torch.ops.inorm.instance_norm(x, weight, bias, *stats, use_input_stats, 0.1, 1e-5)
    y, _, _, new_mean, new_var = torch.ops.inorm.instance_norm_forward(x, weight, bias, running_mean, running_var,
                                                                       use_input_stats, 0.1, 1e-5)
    assert torch.equal(direct, y)
    if use_input_stats:
        assert torch.equal(stats[0], new_mean) and torch.equal(stats[1], new_var)
        assert stats[0]._version > version
    else:
        assert torch.equal(stats[0], running_mean) and stats[0]._version == version


@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(4, 8, 32, 32), (2, 3, 17, 19), (2, 8, 6, 10, 12)],
                         ids=["channels_last", "channels_last_odd", "channels_last_3d"])
def test_channels_last_input_runs_natively(shape, dtype):
    # No copy to NCHW (no warning), and the output keeps the input's memory format, as
    # torch.nn.BatchNorm2d's does (torch.nn.InstanceNorm returns NCHW): the one layout difference.
    memory_format = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    x = make_input(shape, dtype, channels_last=True)
    reference, ours = make_pair(*((torch.nn.InstanceNorm2d, inorm.InstanceNorm2d) if len(shape) == 4 else
                                  (torch.nn.InstanceNorm3d, inorm.InstanceNorm3d)), shape[1], affine=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        actual = ours(x)
    assert actual.is_contiguous(memory_format=memory_format) and not actual.is_contiguous()
    torch.testing.assert_close(actual, reference(x), **TOLERANCES[dtype])
    dx = torch.autograd.grad(ours(x.requires_grad_()), x, torch.randn_like(x))[0]
    assert dx.is_contiguous(memory_format=memory_format)


@requires_gpu
def test_non_contiguous_view():
    x = make_input((4, 8, 40, 40), torch.float32)[:, ::2, 3:, :-5]
    reference, ours = make_pair(torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 4, affine=True)
    torch.testing.assert_close(ours(x), reference(x), **TOLERANCES[torch.float32])


@requires_gpu
def test_functional_matches_torch_with_every_argument():
    x = make_input((3, 5, 33, 17), torch.float64, data="offset")
    weight, bias = torch.rand(5, device="cuda", dtype=torch.float64), torch.rand(5, device="cuda", dtype=torch.float64)
    ours_stats = [torch.rand(5, device="cuda", dtype=torch.float64) for _ in range(2)]
    reference_stats = [s.clone() for s in ours_stats]
    y = inorm.instance_norm(x, *ours_stats, weight, bias, True, 0.3, 1e-3)
    expected = F.instance_norm(x, *reference_stats, weight, bias, True, 0.3, 1e-3)
    torch.testing.assert_close(y, expected, **TOLERANCES[torch.float64])
    for ours, reference in zip(ours_stats, reference_stats):
        torch.testing.assert_close(ours, reference, **TOLERANCES[torch.float64])
    y = inorm.instance_norm(x, *ours_stats, weight, bias, False, 0.3, 1e-3)
    expected = F.instance_norm(x, *reference_stats, weight, bias, False, 0.3, 1e-3)
    torch.testing.assert_close(y, expected, **TOLERANCES[torch.float64])


@requires_gpu
def test_mismatched_parameter_dtypes_are_refused():
    x = make_input((2, 3, 8, 8), torch.float32)
    with pytest.raises(RuntimeError, match="must share one dtype"):
        inorm.instance_norm(x, weight=torch.ones(3, device="cuda"), bias=torch.zeros(3, device="cuda", dtype=torch.float16))
