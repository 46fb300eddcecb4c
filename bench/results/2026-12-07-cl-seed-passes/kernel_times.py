"""Each kernel's GPU time (CUPTI, torch.profiler) in the forward of channels_last's seeds: inorm's
module, torch.compile's and a copy of x, to say which of the two reads of x loses where
torch.compile's forward runs ahead (cl-seed-fp32 on the H200). Averages of --reps calls after
three warm-ups (a diagnosis, not a benchmark: python -m inorm.bench gives the medians).
Usage: PYTHONPATH=build-gpu/python python3 kernel_times.py [--reps 10] [--dtypes float32,bfloat16]"""
import argparse

import torch
from torch.profiler import ProfilerActivity, profile

import inorm


def kernel_times(function, reps):
    for _ in range(3):
        function()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            function()
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        total = getattr(event, "self_device_time_total", None)
        if total is None:
            total = event.self_cuda_time_total
        if total > 0:
            rows.append((event.key, event.count / reps, total / reps))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name in args.dtypes.split(","):
        dtype = getattr(torch, name)
        x = (1000 + torch.randn(112, 64, 512, 512, device="cuda", dtype=dtype)).contiguous(
            memory_format=torch.channels_last)
        reference = torch.nn.InstanceNorm2d(64).cuda()
        compiled = torch.compile(reference, fullgraph=True)
        ours = inorm.InstanceNorm2d(64).cuda()
        target = torch.empty_like(x)
        functions = {"inorm": lambda: ours(x), "compile": lambda: compiled(x),
                     "copy": lambda: target.copy_(x)}
        print(f"\n## 112x64x512x512 {name} channels_last ({x.numel() * x.element_size() / 2**30:.2f} GiB)")
        print("| implementation | kernel | launches a call | us a call |\n|---|---|---|---|")
        for label, function in functions.items():
            total = 0.0
            for kernel, launches, us in kernel_times(function, args.reps):
                total += us
                print(f"| {label} | {kernel[:110]} | {launches:g} | {us:.1f} |")
            print(f"| {label} | all | | **{total:.1f}** |")
        del x, target, compiled
        torch._dynamo.reset()
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
