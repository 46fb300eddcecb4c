#!/usr/bin/env bash
# Session 65, call 4: few samples in many parts (few.json): the applying kernel in 16, 32, 64 parts
# (by the rule's partials) and in its most (cl-apply1) against the tiles (cl-apply0), two rounds.
cd "$(dirname "$0")/../../.."
W=/tmp/w/p; mkdir -p $W
gunzip -c .carry/s65c/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-apply
for round in 1 2; do
  /tmp/ib --suite $R/few.json --variants cl-apply0,cl-apply1,cl-stream8,cl-stream16,cl-stream32,cl-stream64 \
    --markdown $W/few-r$round.md --json $W/few-r$round.json > $W/few-r$round.log 2>&1
done
cd /tmp/w && tar czf $OUT/p.tgz p
