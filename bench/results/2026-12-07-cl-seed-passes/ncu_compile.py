"""torch.compile's forward of channels_last's seeds under ncu: three warm calls, then one inside the
NVTX range "ncu" (call-4.sh profiles that range alone, so the kernels Triton runs while it tunes are
left out). Usage: ncu --nvtx --nvtx-include 'ncu/' ... python3 ncu_compile.py DTYPE"""
import sys

import torch


def main():
    dtype = getattr(torch, sys.argv[1])
    x = (1000 + torch.randn(112, 64, 512, 512, device="cuda", dtype=dtype)).contiguous(
        memory_format=torch.channels_last)
    compiled = torch.compile(torch.nn.InstanceNorm2d(64).cuda(), fullgraph=True)
    for _ in range(3):
        compiled(x)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("ncu")
    compiled(x)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
