#!/usr/bin/env bash
# Session 64, call 5: the streamed reduction with each part's shift from its first row and two
# barriers a part (.carry/s64d), in forced parts a sample against the planner's and the tiles', in
# one process; then the planner's against the tiles' alone, a second round.
cd "$(dirname "$0")/../../.."
W=/tmp/w/e; mkdir -p $W
gunzip -c .carry/s64d/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-ring
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
/tmp/ib --suite $R/cl.json --variants cl-stream0,cl-stream2,cl-stream4,cl-stream8,cl-stream16,cl-stream33 --markdown $W/parts.md --json $W/parts.json > $W/parts.log 2>&1
/tmp/ib --suite $R/cl.json --variants cl-stream0 --markdown $W/ab.md --json $W/ab.json > $W/ab.log 2>&1
cd /tmp/w && tar czf $OUT/e.tgz e
