#!/usr/bin/env bash
# The backward rows call 1's sweep did not reach (its time limit): slices of up to 8 MiB of each
# input, split_pipelined forced at the planner's short lead and hints, walking forward and back,
# with call 2's binaries (carried). Into $OUT/h.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s95b}
W=/tmp/s95-out; H=$W/h; rm -rf $W; mkdir -p $H
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $H/run.log
SECONDS=0
bin=/tmp/s95b/new
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/inorm-bench; }
echo "rc=$? unpack $SECONDS s" >> $H/run.log
timeout 200 $bin/inorm-bench --backward --suite bench/results/2026-12-07-walk-back/small-shapes.json \
  --variants pipelined-back0,pipelined-back1 --markdown $H/small-backward.md --json $H/small-backward.json \
  > $H/small-backward.log 2>&1
echo "rc=$? small backward $SECONDS s" >> $H/run.log
tar czf $OUT/h.tgz -C $W h
cat $H/run.log
