#!/usr/bin/env bash
# Session 63, fourth call: inorm-bench of the kept rule's build (.carry/s63b) on every suite, forward
# and backward, and the split cases against the old rule (pipelined-lead2-evict0) in one process.
cd "$(dirname "$0")/../../../.."
W=$OUT/b; mkdir -p $W
gunzip -c .carry/s63b/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-split-policy
for round in 1 2; do
  /tmp/ib --suite $R/split.json --variants pipelined-lead2-evict0 --markdown $W/split-ab-r$round.md --json $W/split-ab-r$round.json > $W/split-ab-r$round.log 2>&1
  /tmp/ib --backward --suite $R/split.json --variants pipelined-lead2-evict0 --markdown $W/split-ab-backward-r$round.md --json $W/split-ab-backward-r$round.json > $W/split-ab-backward-r$round.log 2>&1
done
for s in public train layouts fused; do
  /tmp/ib --suite bench/suites/$s.json --markdown $W/$s.md --json $W/$s.json > $W/$s.log 2>&1
  /tmp/ib --backward --suite bench/suites/$s.json --markdown $W/$s-backward.md --json $W/$s-backward.json > $W/$s-backward.log 2>&1
done
cd $OUT && tar czf b.tgz b && rm -rf b
