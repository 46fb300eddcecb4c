#!/usr/bin/env bash
# On an H200 only (any other GPU: nothing run): call-5's binaries (this tree's, carried) for the
# README's tables, last measured on an H200 in session 90's tree: the cluster form's stagger sweep
# (2026-12-07-cl-cluster's shapes), scripts/gpu-check.sh's bench part (every suite both passes, the
# variant sweeps), then its pybench part (the package built on the device, python -m inorm.bench on
# the suites) while time is left (CALL_S seconds in all, default 570). The GPU tests passed on an
# H100 in calls 2 and 5.
cd "$(dirname "$0")/../../.." || exit 2
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { nvidia-smi -L; exit 0; }
CARRY=${CARRY:-.carry/s95c}
W=/tmp/s95-out; H=$W/h; rm -rf $W; mkdir -p $H
pack() { tar czf $OUT/h.tgz -C $W h; }
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s95c/new
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/inorm-bench $bin/inorm_gpu_tests; }
step $? unpack
sweep=stagger0,stagger300,stagger700,stagger1500,stagger2500,stagger3500
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 60 $bin/inorm-bench --suite bench/results/2026-12-07-cl-cluster/shapes.json $flag --variants $sweep \
    --markdown $H/stagger-$pass.md --json $H/stagger-$pass.json > $H/stagger-$pass.log 2>&1
  step $? "stagger $pass"
done
for part in bench pybench; do
  INORM_PACK=$OUT/$part.tgz OUT=$W/$part INORM_PREBUILT=$bin INORM_BUILD_DIR=build-gpu INORM_ONLY=$part \
    timeout $((${CALL_S:-570} - SECONDS)) scripts/gpu-check.sh > $H/$part.log 2>&1
  step $? "gpu-check.sh $part"
done
cat $H/run.log
