#!/usr/bin/env bash
# Session 64, call 4: the streamed reduction (call 3's build) in forced parts a sample against the
# planner's parts and the tiles' reduction, in one process: where more rounds of parts pay.
cd "$(dirname "$0")/../../.."
W=/tmp/w/d; mkdir -p $W
gunzip -c .carry/s64c/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-ring
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
/tmp/ib --suite $R/cl.json --variants cl-stream0,cl-stream2,cl-stream8,cl-stream16,cl-stream33,cl-stream66 --markdown $W/parts.md --json $W/parts.json > $W/parts.log 2>&1
cd /tmp/w && tar czf $OUT/d.tgz d
