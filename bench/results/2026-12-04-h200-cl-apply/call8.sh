#!/usr/bin/env bash
# Session 65, call 8: the one kernel's combine over 4 to 32 lanes a slice (as many as the slices
# leave) on aab47c3's tree: few.json and cl-bf16 with the planner's parts, forced parts past the
# 2048-partial cap (cl-apply1-pK) and the elementwise kernel (cl-apply0), two rounds.
cd "$(dirname "$0")/../../.."
W=/tmp/w/l; mkdir -p $W
gunzip -c .carry/s65g/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-apply
for round in 1 2; do
  /tmp/ib --suite $R/few.json --variants cl-apply0,cl-apply1-p132,cl-apply1-p66 \
    --markdown $W/lanes-r$round.md --json $W/lanes-r$round.json > $W/lanes-r$round.log 2>&1
done
cd /tmp/w && tar czf $OUT/l.tgz l
