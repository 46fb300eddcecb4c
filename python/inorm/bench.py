"""python -m inorm.bench: eager PyTorch, torch.compile, inorm and a copy, side by side.

One process, the same input tensor for all four, CUDA events, warm-up, median of --iters timed
samples. Each sample times enough back-to-back calls to cover at least --min-sample-ms of GPU work,
queued behind a GPU sleep that outlasts their queueing: the times are GPU times, as in a model that
keeps the GPU fed, not Python's per-call overhead. Every inorm output is checked against eager
PyTorch (where they differ by more than the dtype's tolerance, both against float64: inorm must be
no further from it than eager). Prints a markdown table; --out DIR also writes torch-bench.{json,md,png} (the PNG is a bar
chart of each implementation's ratio to its floor).

The forward's floor is one copy of x. With --train each implementation runs a training step of the
module (affine, train mode): forward, then the gradients of x, weight and bias against dy ~ N(0, 1)
(torch.autograd.grad: nothing accumulates into .grad); its floor is 2.5 copies (the forward reads x
and writes y, the backward reads x and dy and writes dx). --train writes train-bench.{json,md,png}.

A case with an "activation" (shared/suites/fused.json) runs torch.nn's norm followed by the
activation module (eager and compiled, as networks write it) against inorm's fused module; a
group_norm case (with "groups") runs torch.nn.GroupNorm against inorm.GroupNorm / GroupNormAct. --out
then names the files after the suite (train-bench-fused.*).

--overhead measures what the times above leave out: host time per call (back-to-back calls on a
tiny tensor, wall clock: torch.nn's module, inorm's module, functional and op, and Tensor.copy_),
and each public-suite case through inorm's module called back to back with nothing hiding the host
(as a training loop calls it), next to inorm-bench's kernel time from --kernel-times (its --json).
It writes overhead.{json,md}."""
import argparse
import copy
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import inorm
from inorm._suite import load_suite, parse_data

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
TOLERANCES = {torch.float32: 1e-4, torch.float64: 1e-9, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}
# A training step's gradients against eager's: in half types both round dx to the dtype and eager
# also rounds each sample's weight-gradient term before adding them up, so four ulps (tests/python
# test_backward.py holds both to float64 instead).
TRAIN_TOLERANCES = {**TOLERANCES, torch.float16: 2e-3}
MODULES = {3: (torch.nn.InstanceNorm1d, inorm.InstanceNorm1d),
           4: (torch.nn.InstanceNorm2d, inorm.InstanceNorm2d),
           5: (torch.nn.InstanceNorm3d, inorm.InstanceNorm3d)}
FUSED_MODULES = {3: inorm.InstanceNormAct1d, 4: inorm.InstanceNormAct2d, 5: inorm.InstanceNormAct3d}
# The torch.nn module of each activation name: convert_instance_norm(fuse=True)'s table, inverted.
ACTIVATION_MODULES = {name: module for module, name in inorm.modules._FUSED.items()}
IMPLEMENTATIONS = ("eager", "compile", "inorm")


def default_suite(name="public.json"):
    # The shared suite beside the repository, else the repository's copy of it.
    for path in (f"../shared/suites/{name}", f"bench/suites/{name}"):
        if os.path.exists(path):
            return path
    return None


def make_data(shape, dtype, spec):
    """The suite's data spec (inorm._suite.parse_data): U[0,1) or N(0, 1), plus an offset."""
    offset, kind = parse_data(spec)
    draw = torch.rand if kind == "rand" else torch.randn
    return (offset + draw(shape, device="cuda", dtype=torch.float32)).to(dtype)


def case_input(case, shape, dtype):
    """The case's input: its data spec, in its layout ("nhwc": channels_last, or channels_last_3d)."""
    x = make_data(shape, dtype, case["data"])
    if case.get("layout", "nchw") == "nhwc":
        x = x.to(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    return x


def shape_label(row):
    """A row's shape as the tables print it, with " nhwc" for channels_last input."""
    return "x".join(map(str, row["shape"])) + (" nhwc" if row.get("layout") == "nhwc" else "")


def sleep_cycles_per_ms():
    """GPU sleep cycles per millisecond at the busy clock: the highest rate of a few timed sleeps
    after a warm-up sleep. An idle GPU runs a slower clock: a rate measured cold made later sleeps
    too short to hide a call's queueing, which then counted as GPU time (70 us on mid-affine)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(50_000_000)
    rates = []
    for _ in range(5):
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        rates.append(1_000_000 / start.elapsed_time(end))
    return max(rates)


def time_ms(function, iters, min_sample_ms, cycles_per_ms=None):
    """Median milliseconds per call over `iters` samples (CUDA events, after warm-up), each sample
    enough back-to-back calls to cover min_sample_ms. With cycles_per_ms each sample is queued
    behind a GPU sleep that outlasts its queueing: GPU time alone. Without, each sample starts on an
    idle GPU, and the host's time per call counts wherever it exceeds the kernel's."""
    for _ in range(3):
        function()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    queued = time.perf_counter()
    start.record()
    function()
    end.record()
    queue_ms = (time.perf_counter() - queued) * 1e3
    end.synchronize()
    calls = max(1, int(min_sample_ms / max(start.elapsed_time(end), 1e-3)))
    sleep_cycles = int(cycles_per_ms * (2 * calls * queue_ms + 0.5)) if cycles_per_ms else 0  # outlasts the queueing
    samples = []
    for _ in range(iters):
        if sleep_cycles:
            torch.cuda._sleep(sleep_cycles)
        else:
            torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            function()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / calls)
    return statistics.median(samples)


def case_modules(case, shape, dtype, affine):
    """The case's PyTorch modules, as networks write them (InstanceNorm or GroupNorm, then its
    activation where the case has one: shared/suites/fused.json), and inorm's (one module, the
    activation fused), with the same random affine parameters."""
    if case.get("op", "instance_norm") == "group_norm":
        arguments = dict(num_groups=case["groups"], num_channels=shape[1])
        torch_cls, inorm_cls, fused_cls = torch.nn.GroupNorm, inorm.GroupNorm, inorm.GroupNormAct
    else:
        arguments = dict(num_features=shape[1])
        (torch_cls, inorm_cls), fused_cls = MODULES[len(shape)], FUSED_MODULES[len(shape)]
    norm = torch_cls(**arguments, affine=affine, device="cuda", dtype=dtype)
    if affine:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    activation = case.get("activation", "none")
    if activation == "none":
        reference, ours = norm, inorm_cls(**arguments, affine=affine, device="cuda", dtype=dtype)
    else:
        slope = {"negative_slope": case["negative_slope"]} if activation == "leaky_relu" else {}
        reference = torch.nn.Sequential(norm, ACTIVATION_MODULES[activation](**slope))
        ours = fused_cls(**arguments, affine=affine, device="cuda", dtype=dtype, activation=activation, **slope)
    ours.load_state_dict(norm.state_dict())
    return reference, ours


# Elements of one piece of a float64 check (a batch range of samples at a time; 512 MiB of
# float64): whole float64 copies of the seed's 7.5 GB float32 tensors do not fit an 80 GB GPU.
CHECK_ELEMENTS = 1 << 26


def batch_ranges(shape):
    """(begin, end) ranges of the batch (dim 0) of about CHECK_ELEMENTS elements each."""
    per_sample = max(1, torch.Size(shape[1:]).numel())
    step = max(1, CHECK_ELEMENTS // per_sample)
    return [(begin, min(begin + step, shape[0])) for begin in range(0, shape[0], step)]


def max_abs_difference(a, b):
    """max |a - b| in float64 (0 for empty tensors), a batch range at a time."""
    return max(((a[begin:end].double() - b[begin:end].double()).abs().max().item()
                for begin, end in batch_ranges(a.shape)), default=0.0) if a.numel() else 0.0


def float64_copy(module):
    return copy.deepcopy(module).to(torch.float64)


def zero_dy_at_kinks(reference, x, dy, band):
    """dy, zero where the input z of a ReLU or LeakyReLU after the norm (reference: the norm, then the
    activation module) lies within `band` of 0 in float64: there the dtype's rounding picks the
    gradient's slope, for torch.nn as for inorm, so a comparison would measure that coin, not the
    kernels (the C++ tests' zero_dy_at_kinks). Other references keep dy. z is computed a batch range
    at a time (instance and group norms see one sample at a time)."""
    if not (isinstance(reference, torch.nn.Sequential) and isinstance(reference[1], (torch.nn.ReLU, torch.nn.LeakyReLU))):
        return dy
    norm = float64_copy(reference[0])
    with torch.no_grad():
        kinks = torch.cat([norm(x[begin:end].detach().double()).abs() < band for begin, end in batch_ranges(x.shape)])
    return dy.masked_fill(kinks, 0)


def verify(actual, expected, float64_parts, tolerance, scales):
    """Whether inorm's results pass: each within `tolerance` of eager's (atol times its scale), else
    each no further from float64 results than eager's, plus that tolerance: eager rounds the norm's
    output to the dtype before the activation, so with SiLU its result can lie an ulp or two from
    inorm's, which rounds once. float64_parts() yields, for successive ranges of the batch, (begin,
    end, results): the float64 results of samples [begin, end) (y or dx), or that range's share of a
    sum over the batch (dweight, dbias: 1-D, added up before they are compared). Returns (verified,
    the largest difference from eager, divided by its scale)."""
    differences = [max_abs_difference(a, e) / s for a, e, s in zip(actual, expected, scales)]
    if all(torch.allclose(a[begin:end], e[begin:end], atol=tolerance * s, rtol=tolerance)
           for a, e, s in zip(actual, expected, scales) for begin, end in batch_ranges(a.shape)):
        return True, max(differences, default=0.0)
    # For each result: inorm's and eager's largest distance from float64, and float64's largest size.
    ours, eager, size = ([0.0] * len(actual) for _ in range(3))
    sums = [None] * len(actual)
    for begin, end, exact in float64_parts():
        for i, (a, e, t) in enumerate(zip(actual, expected, exact)):
            if a.dim() == 1:
                sums[i] = t if sums[i] is None else sums[i] + t
            elif a.numel():
                ours[i] = max(ours[i], max_abs_difference(a[begin:end], t))
                eager[i] = max(eager[i], max_abs_difference(e[begin:end], t))
                size[i] = max(size[i], t.abs().max().item())
    for i, (a, e, t) in enumerate(zip(actual, expected, sums)):
        if t is not None and a.numel():
            ours[i], eager[i], size[i] = max_abs_difference(a, t), max_abs_difference(e, t), t.abs().max().item()
    verified = all(o <= g + tolerance * s * max(z, 1.0) for o, g, s, z in zip(ours, eager, scales, size))
    return verified, max(differences, default=0.0)


def run_case(case, iters, min_sample_ms, cycles_per_ms):
    shape, dtype = tuple(case["shape"]), DTYPES[case["dtype"]]
    x = case_input(case, shape, dtype)
    reference, ours = case_modules(case, shape, dtype, case.get("affine", False))
    torch._dynamo.reset()  # a fresh compile per shape, never the recompile limit's eager fallback
    compiled = torch.compile(reference, fullgraph=True)
    copy_target = torch.empty_like(x)
    functions = {"copy": lambda: copy_target.copy_(x), "eager": lambda: reference(x),
                 "compile": lambda: compiled(x), "inorm": lambda: ours(x)}

    with torch.no_grad():
        exact = float64_copy(reference)

        def float64_parts():
            for begin, end in batch_ranges(shape):
                yield begin, end, (exact(x[begin:end].double()),)
        verified, max_error = verify((ours(x),), (reference(x),), float64_parts, TOLERANCES[dtype], (1.0,))
        times = {name: time_ms(function, iters, min_sample_ms, cycles_per_ms) for name, function in functions.items()}
    gigabytes = 2 * x.numel() * x.element_size() / 1e9  # read x once, write y once
    row = {"id": case["id"], "shape": list(shape), "dtype": case["dtype"], "layout": case.get("layout", "nchw"),
           "affine": case.get("affine", False), "activation": case.get("activation", "none"),
           "verified": bool(verified), "max_abs_error": max_error}
    for name, ms in times.items():
        row[f"{name}_ms"] = ms
        row[f"{name}_x_copy"] = ms / times["copy"]
    row["inorm_gb_per_s"] = gigabytes / (times["inorm"] / 1e3)
    return row


def run_train_case(case, iters, min_sample_ms, cycles_per_ms):
    """A training step (forward, then dx, dweight and dbias against dy) of eager, compiled and inorm
    modules on the same tensors; ratios to 2.5 copies of x. Each module's dy has the memory format
    of its own output, as the layer after it returns the gradient: channels_last for inorm's
    channels_last output, NCHW for torch's norms (which return NCHW)."""
    shape, dtype = tuple(case["shape"]), DTYPES[case["dtype"]]
    x = case_input(case, shape, dtype)
    x.requires_grad_()
    dy = torch.randn(shape, device="cuda", dtype=torch.float32).to(dtype)
    reference, ours = case_modules(case, shape, dtype, True)
    dy = zero_dy_at_kinks(reference, x, dy, 10 * TOLERANCES[dtype])
    torch._dynamo.reset()
    compiled = torch.compile(reference, fullgraph=True)

    def step(module):
        y = module(x)
        grad = dy if y.stride() == dy.stride() else torch.empty_like(y).copy_(dy)  # the output's strides
        del y
        return lambda: torch.autograd.grad(module(x), [x, *module.parameters()], grad)

    steps = {"eager": step(reference), "compile": step(compiled), "inorm": step(ours)}

    def float64_parts():
        module = float64_copy(reference)
        for begin, end in batch_ranges(shape):
            x64 = x[begin:end].detach().double().requires_grad_()
            yield begin, end, torch.autograd.grad(module(x64), [x64, *module.parameters()], dy[begin:end].double())

    # dweight and dbias add up N * S terms: measured against the square root of their count.
    scales = (1.0, (x.numel() / shape[1]) ** 0.5, (x.numel() / shape[1]) ** 0.5)
    verified, max_error = verify(steps["inorm"](), steps["eager"](), float64_parts, TRAIN_TOLERANCES[dtype], scales)
    copy_target = torch.empty_like(x)  # after the check: the seed's float32 step fits an 80 GB GPU with little room
    functions = {"copy": lambda: copy_target.copy_(x), **steps}
    times = {name: time_ms(function, iters, min_sample_ms, cycles_per_ms) for name, function in functions.items()}
    floor_ms = 2.5 * times["copy"]
    row = {"id": case["id"], "shape": list(shape), "dtype": case["dtype"], "layout": case.get("layout", "nchw"),
           "data": case.get("data", "rand"), "activation": case.get("activation", "none"), "floor_ms": floor_ms,
           "verified": bool(verified), "max_abs_error": max_error}
    for name, ms in times.items():
        row[f"{name}_ms"] = ms
        row[f"{name}_x_floor"] = ms / floor_ms
    return row


def markdown(rows, header, floor="copy"):
    lines = [header, "",
             f"| case | shape | dtype | copy ms | eager ms (x {floor}) | torch.compile ms (x {floor}) | "
             f"inorm ms (x {floor}) | verified |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{r[f'{name}_ms']:.3f} ({r[f'{name}_x_{RATIO_KEYS[floor]}']:.2f})" for name in IMPLEMENTATIONS]
        lines.append(f"| {r['id']} | {shape_label(r)} | "
                     f"{r['dtype']} | {r['copy_ms']:.3f} | {' | '.join(cells)} | "
                     f"{'yes' if r['verified'] else 'NO (max err %.2e)' % r['max_abs_error']} |")
    return "\n".join(lines) + "\n"


# The ratio each table shows: to one copy (forward) or to 2.5 copies (a training step).
RATIO_KEYS = {"copy": "copy", "2.5 copies": "floor"}


def chart(rows, header, path, floor="copy"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(max(8, 1.3 * len(rows)), 5))
    width = 0.27
    colors = {"eager": "#9e9e9e", "compile": "#5c8ac4", "inorm": "#d9822b"}
    labels = {"eager": "eager PyTorch", "compile": "torch.compile", "inorm": "inorm"}
    for i, name in enumerate(IMPLEMENTATIONS):
        positions = [k + (i - 1) * width for k in range(len(rows))]
        values = [r[f"{name}_x_{RATIO_KEYS[floor]}"] for r in rows]
        bars = axes.bar(positions, values, width, label=labels[name], color=colors[name])
        axes.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7, rotation=90, padding=2)
    axes.axhline(1.0, color="black", linewidth=1, linestyle="--", label=f"{floor} (floor)")
    axes.set_yscale("log")
    tallest = max((r[f"{name}_x_{RATIO_KEYS[floor]}"] for r in rows for name in IMPLEMENTATIONS), default=1.0)
    axes.set_ylim(top=3 * tallest)  # room for the tallest bar's label
    axes.set_ylabel(f"time / {floor} of the same tensor (log)")
    axes.set_xticks(range(len(rows)), [f"{r['id']}\n{r['dtype']}" for r in rows], fontsize=8)
    axes.set_title(header, fontsize=9)
    axes.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


OVERHEAD_SHAPE = (2, 8, 8, 8)
OVERHEAD_CALLS = 5000


def host_us_per_call(function, calls=OVERHEAD_CALLS):
    """Wall-clock microseconds per call of `calls` back-to-back calls (after a warm-up), the GPU
    synchronized before and after: a tiny tensor makes each call's host time the bottleneck."""
    for _ in range(200):
        function()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        function()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def run_overhead(cases, iters, kernel_times):
    x = torch.rand(OVERHEAD_SHAPE, device="cuda")
    copy_target = torch.empty_like(x)
    reference, ours = torch.nn.InstanceNorm2d(8).cuda(), inorm.InstanceNorm2d(8).cuda()
    functional_op, user_op = torch.ops.inorm.instance_norm_forward, torch.ops.inorm.instance_norm
    affine_ref = torch.nn.InstanceNorm2d(8, affine=True).cuda()
    affine_ours = inorm.InstanceNorm2d(8, affine=True).cuda()
    x_grad = x.clone().requires_grad_()
    dy = torch.randn_like(x)

    def step(module):
        return lambda: torch.autograd.grad(module(x_grad), (x_grad, *module.parameters()), dy)

    calls = {"torch.nn.InstanceNorm2d (module)": lambda: reference(x),
             "inorm.InstanceNorm2d (module)": lambda: ours(x),
             "inorm.instance_norm (functional)": lambda: inorm.instance_norm(x),
             "torch.ops.inorm.instance_norm (op)": lambda: user_op(x, None, None, None, None, True, 0.1, 1e-5),
             "torch.ops.inorm.instance_norm_forward (functional op: 5 outputs)":
                 lambda: functional_op(x, None, None, None, None, True, 0.1, 1e-5),
             "Tensor.copy_": lambda: copy_target.copy_(x),
             "torch.nn training step (affine, forward + backward)": step(affine_ref),
             "inorm training step (affine, forward + backward)": step(affine_ours)}
    host = [{"call": name, "us_per_call": host_us_per_call(function)} for name, function in calls.items()]

    suite = []
    for case in cases:
        shape, dtype = tuple(case["shape"]), DTYPES[case["dtype"]]
        data = case_input(case, shape, dtype)
        module = MODULES[len(shape)][1](shape[1], affine=case.get("affine", False), device="cuda", dtype=dtype)
        with torch.no_grad():
            module_ms = time_ms(lambda: module(data), iters, min_sample_ms=2.0)
        kernel_ms = kernel_times.get(case["id"])
        suite.append({"id": case["id"], "shape": list(shape), "dtype": case["dtype"],
                      "layout": case.get("layout", "nchw"), "module_ms": module_ms,
                      "kernel_ms": kernel_ms, "module_x_kernel": module_ms / kernel_ms if kernel_ms else None})
        del data
    return host, suite


def overhead_markdown(host, suite, header):
    lines = [header, "", f"Host time per call, {OVERHEAD_CALLS} back-to-back calls on "
             f"{'x'.join(map(str, OVERHEAD_SHAPE))} float32 (wall clock):", "", "| call | us per call |", "|---|---|"]
    lines += [f"| {r['call']} | {r['us_per_call']:.1f} |" for r in host]
    if suite:
        lines += ["", "The public suite through inorm's module, called back to back (host time included), against "
                  "inorm-bench's kernel time:", "", "| case | shape | dtype | module ms | inorm-bench ms | x kernel |",
                  "|---|---|---|---|---|---|"]
    for r in suite:
        kernel = f"{r['kernel_ms']:.4f}" if r["kernel_ms"] else "-"
        ratio = f"{r['module_x_kernel']:.3f}" if r["module_x_kernel"] else "-"
        lines.append(f"| {r['id']} | {shape_label(r)} | {r['dtype']} | {r['module_ms']:.4f} | "
                     f"{kernel} | {ratio} |")
    return "\n".join(lines) + "\n"


def commit():
    if os.environ.get("INORM_COMMIT"):
        return os.environ["INORM_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m inorm.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--suite", help="suite JSON (default: ../shared/suites/public.json, else bench/suites/public.json; "
                                        "with --train, train.json)")
    parser.add_argument("--train", action="store_true", help="time a training step (forward + backward)")
    parser.add_argument("--overhead", action="store_true",
                        help="host time per call, and the public suite through the module back to back")
    parser.add_argument("--kernel-times", help="with --overhead: inorm-bench's --json output, for its kernel times")
    parser.add_argument("--cases", help="comma-separated case ids to run (default: all)")
    parser.add_argument("--iters", type=int, default=30, help="timed samples per measurement (at least 20)")
    parser.add_argument("--min-sample-ms", type=float, default=1.0, help="GPU time each sample covers at least")
    parser.add_argument("--out", help="directory for torch-bench.json, torch-bench.md and torch-bench.png")
    args = parser.parse_args(argv)
    if args.suite is None:
        args.suite = default_suite("train.json" if args.train else "public.json")
    # --overhead's host times need no suite: only its table of the suite through the module does.
    if (args.suite is None and not args.overhead) or (args.suite is not None and not os.path.exists(args.suite)):
        parser.error(f"no suite file: {args.suite!r} (pass --suite PATH)")
    if args.iters < 20:
        parser.error("--iters must be at least 20")
    if not torch.cuda.is_available():
        print("inorm.bench: no CUDA device; nothing to measure", file=sys.stderr)
        return 2
    cases = []
    if args.suite is not None:
        try:
            cases = load_suite(args.suite)
        except ValueError as error:
            parser.error(str(error))
    if args.cases:
        wanted = args.cases.split(",")
        cases = [c for c in cases if c["id"] in wanted]

    if args.overhead:
        kernel_times = {}
        if args.kernel_times:
            with open(args.kernel_times) as f:
                kernel_times = {row["id"]: row["inorm_ms"] for row in json.load(f) if row.get("pass") == "forward"}
        header = (f"{torch.cuda.get_device_name()}, {datetime.date.today()}, inorm {inorm.__version__} at {commit()}, "
                  f"torch {torch.__version__}, suite {os.path.basename(args.suite or 'none')}: per-call overhead")
        host, suite = run_overhead(cases, args.iters, kernel_times)
        table = overhead_markdown(host, suite, header)
        print(table)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "overhead.json"), "w") as f:
                json.dump({"header": header, "host": host, "suite": suite}, f, indent=1)
            with open(os.path.join(args.out, "overhead.md"), "w") as f:
                f.write(table)
        return 0

    what = "training step (forward + backward)" if args.train else "forward"
    header = (f"{torch.cuda.get_device_name()}, {datetime.date.today()}, inorm {inorm.__version__} at {commit()}, "
              f"torch {torch.__version__}, suite {os.path.basename(args.suite)}, {what}: median of {args.iters} samples")
    print(header, flush=True)
    rows = []
    cycles_per_ms = sleep_cycles_per_ms()
    floor = "2.5 copies" if args.train else "copy"
    for case in cases:
        run = run_train_case if args.train else run_case
        rows.append(run(case, args.iters, args.min_sample_ms, cycles_per_ms))
        r = rows[-1]
        print(f"  {r['id']}: copy {r['copy_ms']:.3f} ms, " + ", ".join(
            f"{name} {r[f'{name}_x_{RATIO_KEYS[floor]}']:.2f}x" for name in IMPLEMENTATIONS), flush=True)
    table = markdown(rows, header, floor)
    print(table)
    if args.out:
        stem = "train-bench" if args.train else "torch-bench"
        suite_name = os.path.splitext(os.path.basename(args.suite))[0]
        if suite_name not in ("public", "train"):  # another suite's results beside the default ones
            stem += f"-{suite_name}"
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{stem}.json"), "w") as f:
            json.dump({"header": header, "cases": rows}, f, indent=1)
        with open(os.path.join(args.out, f"{stem}.md"), "w") as f:
            f.write(table)
        chart(rows, header, os.path.join(args.out, f"{stem}.png"), floor)
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
