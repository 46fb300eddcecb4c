#!/usr/bin/env bash
# The planner walking back on 8-16 MiB slices (config.h kSplitWalkBackMaxInputBytes), with this
# tree's binaries (carried, built without a GPU): scripts/gpu-check.sh's bench part (every suite
# both passes, the variant sweeps) and tests part (the GPU tests in 8 shards). On an H200 first the
# cluster form's stagger sweep (2026-12-07-cl-cluster's shapes), and last the pybench part (the
# package built on the device, python -m inorm.bench on the suites) while time is left. Each part
# packed into its own .tgz under $OUT after every step (the tool brings back 8 files).
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s95b}
W=/tmp/s95-out; H=$W/h; rm -rf $W; mkdir -p $H
pack() { tar czf $OUT/h.tgz -C $W h; }
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s95b/new
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/inorm-bench $bin/inorm_gpu_tests; }
step $? unpack
h200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && h200=1
if [ $h200 = 1 ]; then
  sweep=stagger0,stagger300,stagger700,stagger1500,stagger2500,stagger3500
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 $bin/inorm-bench --suite bench/results/2026-12-07-cl-cluster/shapes.json $flag --variants $sweep \
      --markdown $H/stagger-$pass.md --json $H/stagger-$pass.json > $H/stagger-$pass.log 2>&1
    step $? "stagger $pass"
  done
fi
check() {  # check PART SECONDS: gpu-check.sh's part, packed into $OUT/PART.tgz
  INORM_PACK=$OUT/$1.tgz OUT=$W/$1 INORM_PREBUILT=$bin INORM_BUILD_DIR=build-gpu INORM_ONLY=$1 \
    timeout $2 scripts/gpu-check.sh > $H/$1.log 2>&1
  step $? "gpu-check.sh $1"
}
check bench 150
check tests $((585 - SECONDS < 300 ? 585 - SECONDS : 300))
[ $h200 = 1 ] && check pybench $((585 - SECONDS))
cat $H/run.log
