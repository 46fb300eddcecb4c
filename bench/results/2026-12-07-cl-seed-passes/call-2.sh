#!/usr/bin/env bash
# Session 97's second call, on an H200 only (any other GPU: nothing run), call 1's binaries and
# package (built again where the machine is fresh): session 96's slowest layouts.json rows on the
# planner's alternatives (backward), then the package's training step on layouts.json (the README's
# step columns are from 2026-12-04), within CALL_S seconds (default 570). Into $OUT/c2.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { nvidia-smi -L; exit 0; }
CARRY=${CARRY:-.carry/s97}
s96=bench/results/2026-12-07-general-resident
W=/tmp/s97-out2; H=$W/c2; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c2.tgz -C $W c2; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s97/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/*; }
step $? unpack
( nice -n 10 env INORM_BUILD_DIR=build-gpu scripts/build-python.sh > $H/build-python.log 2>&1
  echo "rc=$? build-python $SECONDS s" >> $H/run.log ) &
build=$!
variants=pipelined,pipelined-back0,pipelined-lead2-evict0-back0,pipelined-lead0.5-evict1-back1
variants=$variants,pipelined-lead0-evict1-back1,pipelined-resident0,stagger0
timeout 200 $bin/inorm-bench --suite $s96/h200-shapes.json --backward --variants $variants \
  --markdown $H/h200-backward.md --json $H/h200-backward.json > $H/h200-backward.log 2>&1
step $? h200-backward
wait $build
export PYTHONPATH=$PWD/build-gpu/python
timeout $((${CALL_S:-570} - SECONDS)) python3 -m inorm.bench --train --suite bench/suites/layouts.json \
  --out $H/package > $H/train-bench-layouts.log 2>&1
step $? "train-bench layouts"
cat $H/run.log
