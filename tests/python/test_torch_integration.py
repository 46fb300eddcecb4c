"""inorm inside PyTorch's machinery: opcheck, torch.compile, CUDA graphs, streams, devices, autograd."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
import torch.nn.functional as F  # noqa: E402

import inorm  # noqa: E402
from helpers import TOLERANCES, make_input, make_pair, op_samples, requires_gpu  # noqa: E402

pytestmark = requires_gpu


@pytest.mark.parametrize("op_name", ["instance_norm", "instance_norm_forward"])
def test_opcheck(op_name):
    op = getattr(torch.ops.inorm, op_name).default
    for args in op_samples("cuda"):
        torch.library.opcheck(op, args)


@pytest.mark.parametrize("track_running_stats", [False, True])
def test_compile_fullgraph_matches_eager(track_running_stats):
    torch._dynamo.reset()
    reference, ours = make_pair(torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 8, affine=True,
                                track_running_stats=track_running_stats)
    compiled = torch.compile(ours, fullgraph=True)
    for step in range(2):
        x = make_input((4, 8, 64, 48), torch.float32, seed=step)
        torch.testing.assert_close(compiled(x), reference(x), **TOLERANCES[torch.float32])
    if track_running_stats:  # the in-place update of the buffers survives compilation
        torch.testing.assert_close(ours.running_mean, reference.running_mean, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(ours.running_var, reference.running_var, atol=1e-6, rtol=1e-6)
        reference.eval(), ours.eval()
        x = make_input((4, 8, 64, 48), torch.float32, seed=7)
        torch.testing.assert_close(compiled(x), reference(x), **TOLERANCES[torch.float32])


def test_compile_fullgraph_backward():
    torch._dynamo.reset()
    reference, ours = make_pair(torch.nn.InstanceNorm2d, inorm.InstanceNorm2d, 4, affine=True)
    compiled = torch.compile(lambda t: ours(t).square().sum(), fullgraph=True)
    x = make_input((2, 4, 16, 16), torch.float32).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    compiled(x).backward()
    reference(x_ref).square().sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ours.weight.grad, reference.weight.grad, atol=1e-4, rtol=1e-4)


# 8x16x96x96: one CTA (or a lane group) per slice; 4x8x512x512: CTAs share a slice under a
# cooperative launch, with arrival counters reset in the captured stream.
@pytest.mark.parametrize("shape", [(8, 16, 96, 96), (4, 8, 512, 512)], ids=["small_slices", "shared_slices"])
def test_cuda_graph_capture_and_replay(shape):
    norm = inorm.InstanceNorm2d(shape[1], affine=True).cuda()
    static_x = make_input(shape, torch.float32)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch's docs advise
        norm(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = norm(static_x)
    for seed in (1, 2):
        static_x.copy_(make_input(static_x.shape, torch.float32, seed=seed))
        graph.replay()
        torch.testing.assert_close(static_y, F.instance_norm(static_x, weight=norm.weight, bias=norm.bias),
                                   **TOLERANCES[torch.float32])


def test_two_streams_in_flight():
    # 1 MiB slices: CTAs share each slice through workspace counters, one workspace per call.
    norm = inorm.InstanceNorm2d(16).cuda()
    inputs = [make_input((8, 16, 512, 512), torch.float32, seed=s) for s in range(2)]
    streams = [torch.cuda.Stream() for _ in inputs]
    outputs = [None, None]
    for repeat in range(5):
        for i, (x, stream) in enumerate(zip(inputs, streams)):
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                outputs[i] = norm(x)
                x.record_stream(stream)
        for stream, y in zip(streams, outputs):
            torch.cuda.current_stream().wait_stream(stream)
            y.record_stream(torch.cuda.current_stream())
        for x, y in zip(inputs, outputs):
            torch.testing.assert_close(y, F.instance_norm(x), **TOLERANCES[torch.float32])


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU: the cuda:1 test needs a second")
def test_second_device():
    norm = inorm.InstanceNorm2d(8, affine=True, track_running_stats=True).to("cuda:1")
    reference = torch.nn.InstanceNorm2d(8, affine=True, track_running_stats=True).to("cuda:1")
    reference.load_state_dict(norm.state_dict())
    x = make_input((4, 8, 50, 50), torch.float32).to("cuda:1")
    with torch.cuda.device(0):  # the current device is not the tensor's: the op must guard it
        y = norm(x)
    assert y.device == x.device
    torch.testing.assert_close(y, reference(x), **TOLERANCES[torch.float32])
    torch.testing.assert_close(norm.running_var, reference.running_var, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("use_input_stats", [True, False], ids=["instance_stats", "running_stats"])
@pytest.mark.parametrize("affine", [True, False])
def test_gradcheck_float64(use_input_stats, affine):
    x = make_input((2, 3, 5, 4), torch.float64).requires_grad_()
    weight = torch.rand(3, device="cuda", dtype=torch.float64, requires_grad=True) if affine else None
    bias = torch.rand(3, device="cuda", dtype=torch.float64, requires_grad=True) if affine else None
    running = (torch.rand(3, device="cuda", dtype=torch.float64), torch.rand(3, device="cuda", dtype=torch.float64) + 0.5)
    inputs = (x, weight, bias) if affine else (x,)

    def function(x, weight=None, bias=None):
        stats = (None, None) if use_input_stats else running
        return inorm.instance_norm(x, *stats, weight, bias, use_input_stats, 0.1, 1e-5)

    assert torch.autograd.gradcheck(function, inputs)


def test_backward_matches_torch_in_float32():
    reference, ours = make_pair(torch.nn.InstanceNorm3d, inorm.InstanceNorm3d, 5, affine=True)
    x = make_input((2, 5, 6, 7, 8), torch.float32).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    grad = torch.randn_like(x)
    ours(x).backward(grad)
    reference(x_ref).backward(grad)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ours.weight.grad, reference.weight.grad, atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(ours.bias.grad, reference.bias.grad, atol=1e-3, rtol=1e-4)
