# session 51: what torch.compile's kernels do on the channels_last cases (durations by the profiler, and their source)
import os, sys, glob, torch, torch.nn.functional as F
out = sys.argv[1]
cases = [("cl-bf16", (64, 64, 128, 128), torch.bfloat16, True), ("cl-seed-fp32", (112, 64, 512, 512), torch.float32, False),
         ("cl-3d-fp16", (2, 32, 64, 64, 64), torch.float16, True)]
for name, shape, dtype, affine in cases:
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    x = (1000 + torch.randn(shape, device="cuda", dtype=dtype)).contiguous(memory_format=fmt)
    C = shape[1]
    w = torch.randn(C, device="cuda", dtype=dtype) if affine else None
    b = torch.randn(C, device="cuda", dtype=dtype) if affine else None
    f = torch.compile(lambda x: F.instance_norm(x, weight=w, bias=b, eps=1e-5))
    for _ in range(5): f(x)
    y = torch.empty_like(x); 
    torch.cuda.synchronize()
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            f(x); y.copy_(x)
        torch.cuda.synchronize()
    with open(f"{out}/{name}-profile.txt", "w") as fh:
        fh.write(prof.key_averages().table(sort_by="cuda_time_total", row_limit=20))
    print(name, "done", flush=True)
