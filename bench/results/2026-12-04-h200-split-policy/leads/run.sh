#!/bin/bash
# Second call: the lead's slack per CTA (0 to 1) under each hint mode, forward and backward, one process a mode.
set -u
R=bench/results/2026-12-04-h200-split-policy
W=/tmp/w2; mkdir -p $W
gunzip -c .carry/pol/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
V=pipelined-lead0,pipelined-lead0.25,pipelined-lead0.5,pipelined-lead1
for mode in 0 14 15; do
  INORM_SPLIT_POLICY=$mode /tmp/ib --suite $R/split.json --variants $V --markdown $W/fwd-lead-m$mode.md --json $W/fwd-lead-m$mode.json > $W/fwd-lead-m$mode.log 2>&1
  INORM_SPLIT_POLICY=$mode /tmp/ib --backward --suite $R/split.json --variants $V --markdown $W/bwd-lead-m$mode.md --json $W/bwd-lead-m$mode.json > $W/bwd-lead-m$mode.log 2>&1
done
tar czf $OUT/results2.tgz -C /tmp w2
