#!/usr/bin/env bash
# Session 64, call 1: the channels_last three kernels' elementwise pass with evict-first L2 hints
# (cl-evict1) against the planner's plan without them, in one process, two rounds, forward and
# backward; split_pipelined's short lead forced on the fused cases (pipelined-lead0.5-evict1).
cd "$(dirname "$0")/../../.."
W=/tmp/w/a; mkdir -p $W
gunzip -c .carry/s64a/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-ring
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
for round in 1 2; do
  /tmp/ib --suite $R/cl.json --variants cl-evict1 --markdown $W/cl-r$round.md --json $W/cl-r$round.json > $W/cl-r$round.log 2>&1
  /tmp/ib --backward --suite $R/cl.json --variants cl-evict1 --markdown $W/cl-backward-r$round.md --json $W/cl-backward-r$round.json > $W/cl-backward-r$round.log 2>&1
  /tmp/ib --suite $R/fused4.json --variants cl-evict1,pipelined-lead0.5-evict1 --markdown $W/fused-r$round.md --json $W/fused-r$round.json > $W/fused-r$round.log 2>&1
done
cd /tmp/w && tar czf $OUT/a.tgz a
