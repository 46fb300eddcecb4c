#!/usr/bin/env bash
# On an H200 only (any other GPU: nothing run), session 95's binaries (fabf6af, carried as
# .carry/s95c): layouts.json's slowest H200 rows on the planner's alternatives, both passes, and
# channels_last's seeds on the channels_last kernels' alternatives, while the package builds beside
# them; then python -m inorm.bench on fused.json, forward and --train (call 1's refresh ran out of
# time before them), within CALL_S seconds (default 560). Into $OUT/h2.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { nvidia-smi -L; exit 0; }
CARRY=${CARRY:-.carry/s95c}
here=bench/results/2026-12-07-general-resident
W=/tmp/s96-out2; H=$W/h2; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/h2.tgz -C $W h2; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s95c/new
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/inorm-bench; }
step $? unpack
( nice -n 10 env INORM_BUILD_DIR=build-gpu scripts/build-python.sh > $H/build-python.log 2>&1
  echo "rc=$? build-python $SECONDS s" >> $H/run.log ) &
build=$!
variants=pipelined,pipelined-back0,pipelined-lead2-evict0-back0,pipelined-lead0.5-evict1-back1
variants=$variants,pipelined-lead0-evict1-back1,pipelined-resident0,stagger0
sweep() {  # name, suite, flags, variants, seconds
  timeout $5 $bin/inorm-bench --suite $here/$2 $3 --variants $4 --markdown $H/$1.md --json $H/$1.json \
    > $H/$1.log 2>&1
  step $? "$1"
}
sweep h200-forward h200-shapes.json "" $variants 120
sweep cl-forward cl-shapes.json "" \
  cl-evict1,cl-apply1,cl-grid396,cl-grid528,cl-tiles0x128,cl-tiles0x512,cl-stream14,cl-stream4 90
sweep h200-backward h200-shapes.json --backward $variants 200
wait $build
export PYTHONPATH=$PWD/build-gpu/python
call_s=${CALL_S:-560}
timeout $((call_s - SECONDS)) python3 -m inorm.bench --suite bench/suites/fused.json --out $H/package \
  > $H/torch-bench-fused.log 2>&1
step $? "torch-bench fused"
timeout $((call_s - SECONDS)) python3 -m inorm.bench --train --suite bench/suites/fused.json --out $H/package \
  > $H/train-bench-fused.log 2>&1
step $? "train-bench fused"
cat $H/run.log
