#!/usr/bin/env bash
# Session 97's first call, with main's inorm-bench at 3496692 (carried as .carry/s97): on any GPU,
# channels_last's seeds on the channels_last kernels' alternatives (channel blocks of 32 among
# them: the elementwise pass straight from global memory) while the package builds, then
# each kernel's time in their forward (inorm, torch.compile, a copy: kernel_times.py); on an H200
# also session 96's slowest layouts.json rows on the planner's alternatives (forward) and the
# package's fused.json forward and training step, within CALL_S seconds (default 570).
# Into $OUT/c1.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s97}
here=bench/results/2026-12-07-cl-seed-passes
s96=bench/results/2026-12-07-general-resident
W=/tmp/s97-out; H=$W/c1; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c1.tgz -C $W c1; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
h200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && h200=1
bin=/tmp/s97/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/*; }
step $? unpack
( nice -n 10 env INORM_BUILD_DIR=build-gpu scripts/build-python.sh > $H/build-python.log 2>&1
  echo "rc=$? build-python $SECONDS s" >> $H/run.log ) &
build=$!
sweep() {  # name, suite, flags, variants, seconds
  timeout $5 $bin/inorm-bench --suite $2 $3 --variants $4 --markdown $H/$1.md --json $H/$1.json \
    > $H/$1.log 2>&1
  step $? "$1"
}
cl=cl-evict1,cl-apply1,cl-grid396,cl-grid528,cl-tiles0x128,cl-tiles0x512,cl-tiles32x256,cl-tiles32x512
sweep cl-forward $s96/cl-shapes.json "" $cl,cl-stream0,cl-stream14,cl-stream4 130
if [ $h200 = 1 ]; then
  variants=pipelined,pipelined-back0,pipelined-lead2-evict0-back0,pipelined-lead0.5-evict1-back1
  variants=$variants,pipelined-lead0-evict1-back1,pipelined-resident0,stagger0
  sweep h200-forward $s96/h200-shapes.json "" $variants 120
fi
wait $build
export PYTHONPATH=$PWD/build-gpu/python
timeout 150 python3 $here/kernel_times.py > $H/kernel-times.md 2> $H/kernel-times.log
step $? kernel-times
if [ $h200 = 1 ]; then
  call_s=${CALL_S:-570}
  timeout $((call_s - SECONDS)) python3 -m inorm.bench --suite bench/suites/fused.json --out $H/package \
    > $H/torch-bench-fused.log 2>&1
  step $? "torch-bench fused"
  timeout $((call_s - SECONDS)) python3 -m inorm.bench --train --suite bench/suites/fused.json \
    --out $H/package > $H/train-bench-fused.log 2>&1
  step $? "train-bench fused"
fi
cat $H/run.log
