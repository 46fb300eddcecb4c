#!/usr/bin/env bash
# Session 64, call 9: the elementwise pass on the streamed reduction's ring (ring-apply.patch's
# INORM_EXPERIMENT_RING_APPLY, one process a mode, alternating, two rounds) against the tiles'
# elementwise pass after the streamed reduction (bf6ce7f's plan); cl-stream0 beside each.
cd "$(dirname "$0")/../../.."
W=/tmp/w/g; mkdir -p $W
gunzip -c .carry/s64g/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-ring
for round in 1 2; do
  /tmp/ib --suite $R/cl.json --variants cl-stream0 --markdown $W/tiles-apply-r$round.md --json $W/tiles-apply-r$round.json > $W/tiles-apply-r$round.log 2>&1
  INORM_EXPERIMENT_RING_APPLY=1 /tmp/ib --suite $R/cl.json --variants cl-stream0 --markdown $W/ring-apply-r$round.md --json $W/ring-apply-r$round.json > $W/ring-apply-r$round.log 2>&1
done
cd /tmp/w && tar czf $OUT/g.tgz g
