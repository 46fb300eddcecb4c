"""torch.compile's view of the ops, on meta tensors: the fake kernel and the autograd formula are
traced without running a kernel, so this runs wherever PyTorch is installed, GPU or not."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: inorm's Python tests need it")
import torch._dynamo.testing  # noqa: E402

import inorm  # noqa: E402


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("use_input_stats", [True, False])
def test_fake_kernel_shapes(dtype, use_input_stats):
    x = torch.empty(2, 3, 5, 7, device="meta", dtype=dtype).to(memory_format=torch.channels_last)
    running = (torch.zeros(3, device="meta"), torch.ones(3, device="meta"))
    out, mean, rstd, new_mean, new_var = torch.ops.inorm.instance_norm_forward(x, None, None, *running, use_input_stats, 0.1, 1e-5)
    stats_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    assert out.shape == x.shape and out.dtype == dtype
    assert out.is_contiguous(memory_format=torch.channels_last)  # the input's memory format, as the kernels give
    assert mean.shape == rstd.shape == ((2, 3) if use_input_stats else (0,))
    assert mean.dtype == rstd.dtype == stats_dtype
    assert new_mean.shape == new_var.shape == ((3,) if use_input_stats else (0,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("mask", [(True, True, True), (True, False, False), (False, True, True)], ids=str)
def test_backward_fake_kernel_shapes(dtype, mask):
    x = torch.empty(2, 3, 5, 7, device="meta", dtype=dtype)
    if mask[1]:  # channels_last x: dx in its memory format
        x = x.to(memory_format=torch.channels_last)
    weight = torch.empty(3, device="meta", dtype=dtype)
    stats = torch.empty(2, 3, device="meta", dtype=torch.float64 if dtype == torch.float64 else torch.float32)
    dx, dweight, dbias = torch.ops.inorm.instance_norm_backward(x, x, weight, stats, stats, None, None, True, 1e-5,
                                                                list(mask))
    assert dx.shape == (x.shape if mask[0] else (0,)) and dx.dtype == dtype
    assert not mask[0] or dx.stride() == x.stride()
    assert dweight.shape == ((3,) if mask[1] else (0,)) and dweight.dtype == dtype
    assert dbias.shape == ((3,) if mask[2] else (0,)) and dbias.dtype == dtype


@pytest.mark.parametrize("track_running_stats", [False, True])
def test_compile_fullgraph_traces_one_graph_with_backward(track_running_stats):
    torch._dynamo.reset()
    norm = inorm.InstanceNorm2d(3, affine=True, track_running_stats=track_running_stats).to("meta")
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(norm, fullgraph=True, backend=counter)
    x = torch.empty(2, 3, 8, 8, device="meta", requires_grad=True)
    compiled(x).sum().backward()
    assert x.grad.shape == x.shape and norm.weight.grad.shape == (3,)
    assert counter.frame_count == 1  # one graph, forward and backward (fullgraph: no break)
    norm.eval()  # a new graph: eval normalizes with the running stats when it has them
    assert compiled(x.detach()).shape == x.shape
