#!/usr/bin/env bash
# split_pipelined's elementwise items walking each slice's parts back (Plan::walk_back), with this
# tree's inorm-bench (carried, built without a GPU): the sweep below on shapes.json, both passes,
# then the split GPU tests (GpuForward/GpuBackward.SplitPipelinedOrder, both walks). On an H200
# also the cluster form's stagger sweep (2026-12-07-cl-cluster's shapes) and scripts/gpu-check.sh's
# bench and pybench parts (every suite both passes, the variant sweeps, the package built on the
# device and python -m inorm.bench on the suites) while time is left: the README's tables, last
# measured on an H200 in session 90's tree. Packed into $OUT/h.tgz (and gpu-check.sh's into
# $OUT/check.tgz) after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s95}
here=bench/results/2026-12-07-walk-back
H=/tmp/s95-out/h; rm -rf $H; mkdir -p $H  # only the packed .tgz under $OUT: the tool brings back 8 files
pack() { tar czf $OUT/h.tgz -C /tmp/s95-out h; }
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s95/new
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/inorm-bench $bin/inorm_gpu_tests; }
step $? unpack
walks=pipelined,pipelined-back1,pipelined-back1-evict1,pipelined-back1-lead1-evict1,pipelined-back1-lead0.5-evict1
walks=$walks,pipelined-back1-lead0.5-evict1-resident0,pipelined-lead1-evict1,pipelined-lead0.5-evict1
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 150 $bin/inorm-bench --suite $here/shapes.json $flag --variants $walks \
    --markdown $H/walk-$pass.md --json $H/walk-$pass.json > $H/walk-$pass.log 2>&1
  step $? "walk $pass"
done
timeout 120 $bin/inorm_gpu_tests --gtest_filter='*SplitPipelinedOrder*' > $H/split-tests.log 2>&1
step $? "split tests"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  sweep=stagger0,stagger300,stagger700,stagger1500,stagger2500,stagger3500
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 $bin/inorm-bench --suite bench/results/2026-12-07-cl-cluster/shapes.json $flag --variants $sweep \
      --markdown $H/stagger-$pass.md --json $H/stagger-$pass.json > $H/stagger-$pass.log 2>&1
    step $? "stagger $pass"
  done
  INORM_PACK=$OUT/check.tgz OUT=/tmp/s95-out/check INORM_PREBUILT=$bin INORM_BUILD_DIR=build-gpu \
    INORM_ONLY=bench,pybench timeout $((585 - SECONDS)) scripts/gpu-check.sh > $H/check.log 2>&1
  step $? "gpu-check.sh bench,pybench"
fi
cat $H/run.log
