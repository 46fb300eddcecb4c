#!/usr/bin/env bash
# Session 67, call 2 (.carry/s67b: the one-round applying kernel with L2 hints where
# Plan::evict_first, the variant cl-evict1: the rows beyond a share of 32 MiB of L2 and the ring
# read evict-first, the second read and y too): alone on the GPU, inorm-bench forward and backward on
# session 66's backward.json, the planner's plans against cl-evict1. Everything under $OUT/b packed.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/b; mkdir -p $W
tar xJf .carry/s67b/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s67b/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
B=/tmp/inorm-bench
S=bench/results/2026-12-04-h200-cl-backward/backward.json
timeout 120 $B --suite $S --variants cl-evict1 --markdown $W/hints.md --json $W/hints.json > $W/hints.log 2>&1
echo "rc=$? forward $SECONDS s" >> $W/run.log
timeout 150 $B --backward --suite $S --variants cl-evict1 --markdown $W/hints-backward.md \
  --json $W/hints-backward.json > $W/hints-backward.log 2>&1
echo "rc=$? backward $SECONDS s" >> $W/run.log
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
tar czf $OUT/b.tgz -C $OUT b && rm -rf $W
