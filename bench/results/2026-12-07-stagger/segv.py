"""Session 92: python -m inorm.bench died of a segmentation fault on fused.json's sd-unet-cl-gn-silu
(GroupNorm(32) + SiLU, 8x640x32x32 bfloat16 channels_last), forward and --train, where inorm-bench
ran the case. Each part of the benchmark's case, alone: python3 -X faulthandler segv.py PART, PART
one of eager, compile, inorm, float64, inorm-backward, case (the benchmark's run_case), train
(run_train_case); a case id after it (default sd-unet-cl-gn-silu)."""
import sys

import torch

import inorm.bench as bench
from inorm._suite import load_suite

wanted = sys.argv[2] if len(sys.argv) > 2 else "sd-unet-cl-gn-silu"
case = next(c for c in load_suite("bench/suites/fused.json") if c["id"] == wanted)
shape, dtype = tuple(case["shape"]), bench.DTYPES[case["dtype"]]
x = bench.case_input(case, shape, dtype)
part = sys.argv[1]
print(part, case["id"], flush=True)
if part in ("case", "train"):
    run = bench.run_case if part == "case" else bench.run_train_case
    print(run(case, 5, 0.1, None), flush=True)
    sys.exit(0)
reference, ours = bench.case_modules(case, shape, dtype, part == "inorm-backward" or case.get("affine", False))
with torch.no_grad():
    if part == "eager":
        y = reference(x)
    elif part == "compile":
        y = torch.compile(reference, fullgraph=True)(x)
    elif part == "inorm":
        y = ours(x)
    elif part == "float64":
        y = bench.float64_copy(reference)(x.double())
if part == "inorm-backward":
    x.requires_grad_()
    y = ours(x)
    y.backward(torch.randn_like(y))
    y = x.grad
torch.cuda.synchronize()
print(part, "ok", tuple(y.shape), y.stride(), y.float().abs().max().item(), flush=True)
