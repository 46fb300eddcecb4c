#!/usr/bin/env bash
# Session 97's direct apply (Plan::direct_apply, forced: not the planner's) on any GPU, its
# binaries carried as .carry/s97b (inorm-bench and inorm_gpu_tests at INORM_COMMIT):
# channels_last's GPU tests while the package builds; layouts.json's channels_last cases
# (cl-layouts.json) both passes, the planner's staged pass against the direct one (cl-direct1) and
# channel blocks of 32 (cl-tiles32x256); each kernel's time in the seeds' forward (kernel_times.py:
# inorm's staged pass, torch.compile, a copy); then memcheck and racecheck on the sanitizers'
# forward and backward plans; within CALL_S seconds (default 570). Into $OUT/c3.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s97b}
here=bench/results/2026-12-07-cl-seed-passes
W=/tmp/s97-out3; H=$W/c3; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c3.tgz -C $W c3; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
call_s=${CALL_S:-570}
bin=/tmp/s97b/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/*; }
step $? unpack
( nice -n 10 env INORM_BUILD_DIR=build-gpu scripts/build-python.sh > $H/build-python.log 2>&1
  echo "rc=$? build-python $SECONDS s" >> $H/run.log ) &
build=$!
timeout 240 $bin/inorm_gpu_tests --gtest_brief=1 --gtest_filter='GpuChannelsLast.*' > $H/gpu-tests-cl.log 2>&1
step $? gpu-tests-cl
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 150 $bin/inorm-bench --suite $here/cl-layouts.json $flag --variants cl-direct1,cl-tiles32x256 \
    --markdown $H/layouts-$pass.md --json $H/layouts-$pass.json > $H/layouts-$pass.log 2>&1
  step $? "layouts $pass"
done
wait $build
export PYTHONPATH=$PWD/build-gpu/python
timeout 150 python3 $here/kernel_times.py > $H/kernel-times.md 2> $H/kernel-times.log
step $? kernel-times
for tool in memcheck racecheck; do
  [ $SECONDS -lt $((call_s - 90)) ] || break
  timeout $((call_s - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 1 $bin/inorm_gpu_tests \
    --gtest_brief=1 --gtest_filter='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans' > $H/sanitize-$tool.log 2>&1
  step $? "sanitize-$tool"
done
cat $H/run.log
