"""Every device torch.nn runs on: inorm's kernels on CUDA, PyTorch's own implementation elsewhere
(the same bits as torch.nn on CPU), meta tensors for shapes, and the errors torch.nn raises for
tensors on different devices. The CPU and meta tests need no GPU."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")

import inorm  # noqa: E402
from helpers import make_pair, module_classes, op_samples, raised, requires_gpu  # noqa: E402

CPU_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", CPU_DTYPES, ids=str)
@pytest.mark.parametrize("rank", [3, 4, 5])
@pytest.mark.parametrize("affine,track_running_stats", [(False, False), (True, False), (False, True), (True, True)])
def test_cpu_is_torch_nn_bit_for_bit(dtype, rank, affine, track_running_stats):
    # Output, every gradient and the running stats after two steps, then eval: identical bits, since
    # both run ATen's batch norm over the same view (offset data: 3 + 2 * randn).
    param_dtype = torch.float64 if dtype == torch.float64 else torch.float32  # torch.nn's rule on CPU
    reference, ours = make_pair(*module_classes(rank), 4, device="cpu", dtype=param_dtype, affine=affine,
                                track_running_stats=track_running_stats)
    generator = torch.Generator().manual_seed(rank)
    shape = [3, 4] + [5, 7, 3][: rank - 2]
    for _ in range(2):
        x = (3 + 2 * torch.randn(shape, generator=generator)).to(dtype)
        x_ref, x_ours = x.clone().requires_grad_(), x.clone().requires_grad_()
        y_ref, y_ours = reference(x_ref), ours(x_ours)
        grad = torch.randn(shape, generator=generator).to(dtype)
        y_ref.backward(grad)
        y_ours.backward(grad)
        assert torch.equal(y_ours, y_ref)
        assert torch.equal(x_ours.grad, x_ref.grad)
        for p_ours, p_ref in zip(ours.parameters(), reference.parameters()):
            assert torch.equal(p_ours.grad, p_ref.grad)
        for b_ours, b_ref in zip(ours.buffers(), reference.buffers()):
            assert torch.equal(b_ours, b_ref)
    reference.eval()
    ours.eval()
    x = (3 + 2 * torch.randn(shape, generator=generator)).to(dtype).requires_grad_()
    y_ours = ours(x)
    assert torch.equal(y_ours, reference(x))
    grad = torch.randn(shape, generator=generator).to(dtype)
    (dx_ours,) = torch.autograd.grad(y_ours, x, grad)
    (dx_ref,) = torch.autograd.grad(reference(x), x, grad)
    assert torch.equal(dx_ours, dx_ref)


@pytest.mark.parametrize("op_name", ["instance_norm", "instance_norm_forward"])
def test_cpu_opcheck(op_name):
    op = getattr(torch.ops.inorm, op_name).default
    for args in op_samples("cpu"):
        torch.library.opcheck(op, args)


def test_cpu_backward_op_matches_autograd_of_torch():
    x = (1 + torch.randn(2, 3, 6, 5, dtype=torch.float64)).requires_grad_()
    weight = torch.rand(3, dtype=torch.float64, requires_grad=True)
    bias = torch.rand(3, dtype=torch.float64, requires_grad=True)
    grad = torch.randn_like(x)
    expected = torch.autograd.grad(torch.nn.functional.instance_norm(x, weight=weight, bias=bias), (x, weight, bias), grad)
    _, mean, rstd, _, _ = torch.ops.inorm.instance_norm_forward(x, weight, bias, None, None, True, 0.1, 1e-5)
    actual = torch.ops.inorm.instance_norm_backward(grad, x, weight, mean, rstd, None, None, True, 1e-5,
                                                    [True, True, True])
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-12, atol=1e-12)


def test_gradcheck_on_cpu():
    x = (1 + torch.randn(2, 3, 4, 5, dtype=torch.float64)).requires_grad_()
    weight = torch.rand(3, dtype=torch.float64, requires_grad=True)
    bias = torch.rand(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda *a: inorm.instance_norm(a[0], weight=a[1], bias=a[2]), (x, weight, bias))


def test_double_backward_raises_rather_than_returning_zeros():
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True)
    (dx,) = torch.autograd.grad(inorm.instance_norm(x).pow(2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        dx.sum().backward()


def test_meta_tensors_give_shapes():
    norm = inorm.InstanceNorm3d(4, affine=True, track_running_stats=True).to("meta")
    y = norm(torch.empty(2, 4, 3, 5, 7, device="meta"))
    assert y.device.type == "meta" and y.shape == (2, 4, 3, 5, 7)


def test_cpu_input_with_meta_parameters_raises_as_torch_does():
    reference, ours = (cls(4, affine=True).to("meta") for cls in module_classes(4))
    x = torch.rand(2, 4, 8, 8)
    expected, actual = raised(lambda: reference(x)), raised(lambda: ours(x))
    assert expected is not None and expected[0] is RuntimeError
    assert actual is not None and actual[0] is RuntimeError


@requires_gpu
@pytest.mark.parametrize("param_device,input_device", [("meta", "cuda"), ("cpu", "cuda"), ("cuda", "cpu")])
def test_mixed_devices_raise_as_torch_does(param_device, input_device):
    reference, ours = (cls(4, affine=True, track_running_stats=True).to(param_device) for cls in module_classes(4))
    x = torch.rand(2, 4, 8, 8, device=input_device)
    expected, actual = raised(lambda: reference(x)), raised(lambda: ours(x))
    assert expected is not None, "torch.nn accepted the input"
    assert actual is not None and actual[0] is expected[0]


@requires_gpu
def test_running_stats_on_another_device_raise():
    running_mean, running_var = torch.zeros(4), torch.ones(4)  # CPU, input on CUDA
    with pytest.raises(RuntimeError, match="same device"):
        inorm.instance_norm(torch.rand(2, 4, 8, 8, device="cuda"), running_mean, running_var)


@requires_gpu
def test_a_model_moves_between_devices():
    norm = inorm.InstanceNorm2d(4, affine=True, track_running_stats=True)
    x = 1 + torch.randn(2, 4, 16, 16)
    y_cpu = norm(x)
    norm.cuda()
    y_cuda = norm(x.cuda())
    torch.testing.assert_close(y_cuda.cpu(), y_cpu, rtol=1e-5, atol=1e-5)
    norm.cpu()
    assert norm.running_mean.device.type == "cpu"


# The op's own checks, called directly (no torch.nn check before them), each in a process of its
# own: on the H200 a message that streamed an integer (a shape) from the extension crashed the
# process instead of raising (6047b3d, e2b9898), so a crash must show as this test's failure, not
# end the run.
OP_ERRORS = {
    "weight of the wrong shape": ("torch.ops.inorm.instance_norm(torch.rand(2, 4, 8, device=D), torch.ones(3, device=D),"
                                  " None, None, None, True, 0.1, 1e-5)", "weight must have shape [4] (the input's "
                                                                         "channels), got [3]"),
    "one dimension": ("torch.ops.inorm.instance_norm(torch.rand(4, device=D), None, None, None, None, True, 0.1, 1e-5)",
                      "at least 2 dimensions (N, C, ...), got 1"),
    "grad_output of another shape": ("torch.ops.inorm.instance_norm_backward(torch.rand(2, 4, 9, device=D), "
                                     "torch.rand(2, 4, 8, device=D), None, None, None, torch.zeros(4, device=D), "
                                     "torch.ones(4, device=D), False, 1e-5, [True, False, False])",
                                     "grad_output has shape [2, 4, 9], input [2, 4, 8]"),
    "unknown activation": ("torch.ops.inorm.instance_norm(torch.rand(2, 4, 8, device=D), None, None, None, None, True, "
                           "0.1, 1e-5, 'tanh')", "unknown activation 'tanh'"),
}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_gpu)])
@pytest.mark.parametrize("error", OP_ERRORS)
def test_op_errors_raise_in_a_process_that_lives_on(device, error):
    import subprocess
    import sys

    call, message = OP_ERRORS[error]
    code = (f"import torch, inorm\nD = {device!r}\ntry:\n    {call}\nexcept RuntimeError as e:\n"
            f"    print('raised:', e, flush=True)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"exit status {result.returncode}: {result.stderr[-2000:]}"
    assert "raised:" in result.stdout and message in result.stdout, result.stdout + result.stderr[-2000:]
