#!/usr/bin/env bash
# Session 84, third device call (the last ~470 s of device time): what run2 did not reach at the head
# (f82e708's kernels). inorm_gpu_tests alone built; compute-sanitizer's initcheck and synccheck on
# GpuSanitize BackwardPlans and GroupNormPlans (run1 ran memcheck and racecheck on the same backward
# kernels, SASS-identical); then the two GPU test shards run2's time limit cut off.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r3; mkdir -p $o
pack() { tar czf $OUT/r3.tgz -C $OUT r3; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=${INORM_COMMIT:-unknown} &&
  timeout 300 cmake --build build-gpu --parallel 16 --target inorm_gpu_tests ) > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
f='GpuSanitize.BackwardPlans:GpuSanitize.GroupNormPlans'
for tool in initcheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 1 build-gpu/inorm_gpu_tests \
    --gtest_brief=1 --gtest_filter=$f > $o/$tool.log 2>&1
  echo "rc=$? $tool $SECONDS s" >> $o/steps.txt
done
pack
pids=()
for i in 3 6; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout $((360 - SECONDS)) build-gpu/inorm_gpu_tests --gtest_brief=1 > $o/tests-$i.log 2>&1 &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait $p || rc=1; done
echo "rc=$rc gpu tests 3 and 6 $SECONDS s" >> $o/steps.txt
cat $o/steps.txt; grep -h "PASSED\|FAILED" $o/tests-*.log
