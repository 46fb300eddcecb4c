"""Shared pieces of the inorm pytest suite (imported by the test modules after torch is found)."""
import json
import os

import pytest
import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Output tolerances against torch.nn in the same dtype. float32: the seed harness's atol = rtol = 1e-4.
# Half types: both sides compute statistics in float32 and round the output once; the bounds allow a
# one-ulp difference in that rounding (2^-11 relative for float16, 2^-8 for bfloat16).
TOLERANCES = {
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.float64: dict(atol=1e-9, rtol=1e-9),
    torch.float16: dict(atol=1e-3, rtol=1e-3),
    torch.bfloat16: dict(atol=1e-2, rtol=1.6e-2),
}
DTYPES = list(TOLERANCES)
# Against a float64 computation on the same input values (the C++ tests' oracle tolerances,
# testing/compare.h): inorm's own accuracy, which on offset data is tighter than torch.nn's.
ORACLE_TOLERANCES = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.float64: dict(atol=1e-10, rtol=1e-10),
    torch.float16: dict(atol=2e-3, rtol=2e-3),
    torch.bfloat16: dict(atol=1e-2, rtol=1e-2),
}
DTYPE_NAMES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}


def _gpu_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA device: inorm's GPU tests are skipped"
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        return f"the GPU is sm_{major}{minor}; inorm is built for sm_90"
    return None


requires_gpu = pytest.mark.skipif(_gpu_skip_reason() is not None, reason=_gpu_skip_reason() or "")


def public_suite_cases():
    """The public suite: ../shared/suites/public.json beside the repo, else the repo's copy."""
    for path in (os.path.join(REPO, "..", "shared", "suites", "public.json"),
                 os.path.join(REPO, "bench", "suites", "public.json")):
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)["cases"]
    raise FileNotFoundError("public.json: neither ../shared/suites nor bench/suites has it")


def make_input(shape, dtype, data="uniform", channels_last=False, seed=0):
    """Fresh random CUDA data: U[0,1) (the suite's data) or 1000 + randn (offset, for numerics)."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    if data == "uniform":
        x = torch.rand(shape, generator=generator, device="cuda", dtype=torch.float32)
    elif data == "offset":
        x = 1000 + torch.randn(shape, generator=generator, device="cuda", dtype=torch.float32)
    else:
        raise ValueError(data)
    x = x.to(dtype)
    if channels_last:
        x = x.to(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    return x


def poison_next_allocation(like):
    """Fill a freed block of `like`'s size with 0xFF bytes (NaN in every float dtype): the caching
    allocator hands it to the next allocation of that size, so output that the kernel does not write
    stays NaN and fails the comparison. Returns the poisoned block's address."""
    block = torch.empty(like.numel() * like.element_size(), dtype=torch.uint8, device=like.device)
    block.fill_(0xFF)
    address = block.data_ptr()
    del block
    return address


def op_samples(device):
    """Arguments for torch.ops.inorm.instance_norm(_forward) on `device`: every combination of
    affine, running stats and mode, in float32 (x needs a gradient) and bfloat16, offset data; the
    bfloat16 input channels_last (its outputs keep that memory format)."""
    samples = []
    for dtype in (torch.float32, torch.bfloat16):
        for affine in (False, True):
            for running, use_input_stats in ((False, True), (True, True), (True, False)):
                x = (1 + torch.randn(3, 4, 9, 11, device=device)).to(dtype).requires_grad_(dtype == torch.float32)
                if dtype == torch.bfloat16:
                    x = x.to(memory_format=torch.channels_last)
                weight = torch.rand(4, device=device, requires_grad=True) if affine else None
                bias = torch.rand(4, device=device, requires_grad=True) if affine else None
                stats = (torch.rand(4, device=device), torch.rand(4, device=device) + 0.5) if running else (None, None)
                samples.append((x, weight, bias, *stats, use_input_stats, 0.1, 1e-5))
    return samples


def outputs_and_gradients(module, x, dy):
    """module(x) and the gradients of x and of the parameters against dy (nothing accumulates)."""
    x = x.detach().requires_grad_()
    y = module(x)
    return (y, *torch.autograd.grad(y, [x, *module.parameters()], dy))


def expect_compiled_step_matches_eager(module, shape):
    """A training step of torch.compile(module, fullgraph=True) (output and gradients) equals the
    step run eagerly."""
    torch._dynamo.reset()
    x = make_input(shape, torch.float32)
    dy = torch.randn_like(x)
    compiled = torch.compile(module, fullgraph=True)
    for got, want in zip(outputs_and_gradients(compiled, x, dy), outputs_and_gradients(module, x, dy)):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)


def expect_graph_replay_matches_eager(module, shape):
    """A training step of `module` (output and gradients) captured in a CUDA graph, replayed on new
    input, equals the step run eagerly on it."""
    x = make_input(shape, torch.float32).requires_grad_()
    dy = torch.randn_like(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up: plans made and cached outside the capture
        outputs_and_gradients(module, x, dy)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = outputs_and_gradients(module, x, dy)
    with torch.no_grad():
        x.copy_(make_input(shape, torch.float32, seed=9))
    graph.replay()
    torch.cuda.synchronize()
    for got, want in zip(captured, outputs_and_gradients(module, x, dy)):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)


def raised(call):
    """(type, message) of what `call` raises, or None."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error), str(error)
    return None


def module_classes(rank):
    """(torch.nn class, inorm class) of InstanceNorm for batched input of `rank` dimensions."""
    import inorm  # the test modules import it too; helpers stays importable before it is built

    return {3: (torch.nn.InstanceNorm1d, inorm.InstanceNorm1d),
            4: (torch.nn.InstanceNorm2d, inorm.InstanceNorm2d),
            5: (torch.nn.InstanceNorm3d, inorm.InstanceNorm3d)}[rank]


def make_pair(torch_cls, inorm_cls, num_features, device="cuda", **kwargs):
    """A torch.nn module and an inorm one on `device` with the same (random) affine parameters; the
    other keyword arguments go to both constructors."""
    reference = torch_cls(num_features, device=device, **kwargs)
    ours = inorm_cls(num_features, device=device, **kwargs)
    with torch.no_grad():
        if reference.weight is not None:
            reference.weight.uniform_(0.5, 1.5)
            reference.bias.uniform_(-0.5, 0.5)
    ours.load_state_dict(reference.state_dict())
    return reference, ours
