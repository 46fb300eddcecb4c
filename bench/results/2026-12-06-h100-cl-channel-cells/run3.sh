#!/usr/bin/env bash
# Session 82, third device call: the landed form (call 2's `after`: the per-channel cells by a
# thread each, each slice's context taken after its combine as before) built on the device; every
# GPU test in eight shards; compute-sanitizer's memcheck, synccheck and initcheck on GpuSanitize
# ForwardPlans, BackwardPlans and GroupNormPlans (racecheck ran on the same code in call 2).
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r3; mkdir -p $o
pack() { tar czf $OUT/r3.tgz -C $OUT r3; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release &&
  timeout 300 cmake --build build-gpu --parallel 16 --target inorm_gpu_tests ) > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
pids=()
for i in $(seq 0 7); do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 180 build-gpu/inorm_gpu_tests --gtest_brief=1 > $o/tests-$i.log 2>&1 &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait $p || rc=1; done
echo "rc=$rc gpu tests $SECONDS s" >> $o/steps.txt
pack
f='GpuSanitize.GroupNormPlans:GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans'
for tool in memcheck synccheck initcheck; do
  [ $SECONDS -gt 420 ] && { echo "skipped $tool at $SECONDS s" >> $o/steps.txt; continue; }
  timeout $((450 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 1 build-gpu/inorm_gpu_tests \
    --gtest_brief=1 --gtest_filter=$f > $o/$tool.log 2>&1
  echo "rc=$? $tool $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; cat $o/gpu.txt; grep -h "PASSED\|FAILED" $o/tests-*.log | sort | uniq -c; grep -h "ERROR SUMMARY" $o/*check.log
