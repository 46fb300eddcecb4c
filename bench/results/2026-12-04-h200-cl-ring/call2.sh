#!/usr/bin/env bash
# Session 64, call 2: the three kernels' reduction streamed (the planner's stream_parts) against
# the tiles' (cl-stream0), forward, in one process, two rounds; the public suite; ncu on cl-bf16's
# streamed reduction and on the tiles' reduction.
cd "$(dirname "$0")/../../.."
W=/tmp/w/b; mkdir -p $W
gunzip -c .carry/s64b/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-ring
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
for round in 1 2; do
  /tmp/ib --suite $R/cl.json --variants cl-stream0 --markdown $W/stream-r$round.md --json $W/stream-r$round.json > $W/stream-r$round.log 2>&1
done
/tmp/ib --suite bench/suites/public.json --markdown $W/public.md --json $W/public.json > $W/public.log 2>&1
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
timeout 200 ncu --clock-control none -k regex:channels_last --launch-skip 12 --launch-count 3 --metrics $M /tmp/ib --suite $R/cl-bf16.json --repeats 20 --warmup 1 > $W/ncu-stream.txt 2>&1
timeout 200 ncu --clock-control none -k regex:channels_last_reduce --launch-skip 2 --launch-count 1 --metrics $M /tmp/ib --suite $R/cl-bf16.json --variants cl-stream0 --repeats 20 --warmup 1 > $W/ncu-variants.txt 2>&1
cd /tmp/w && tar czf $OUT/b.tgz b
