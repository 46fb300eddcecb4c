#!/usr/bin/env bash
# Session 81, second device call: the planner's groups (channel blocks' rows over 2-8 CTAs where the
# cost model says) built on the device; inorm-bench forward and --backward on sweep.json, the
# planner's plans against the plans before them forced in the same process (cl-blocks0g1: a CTA a
# block; cl-kernels: the three kernels, where no CTA held a block), two rounds; every GPU test in
# eight shards, the CPU tests; compute-sanitizer's four tools on the sanitizer tests the new plans
# joined (GpuSanitize ForwardPlans, BackwardPlans, GroupNormPlans).
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r2; mkdir -p $o
pack() { tar czf $OUT/r2.tgz -C $OUT r2; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > $o/build.log 2>&1
timeout 330 cmake --build build-gpu --parallel 16 --target inorm-bench inorm_gpu_tests inorm_cpu_tests >> $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
s=bench/results/2026-12-06-h100-cl-block-groups/sweep.json
for r in 1 2; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 build-gpu/inorm-bench $flag --suite $s --variants cl-blocks0g1,cl-kernels \
      --json $o/$pass-$r.json --markdown $o/$pass-$r.md > $o/$pass-$r.log 2>&1
    echo "rc=$? $pass $r $SECONDS s" >> $o/steps.txt
  done
done
pack
pids=()
for i in $(seq 0 7); do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 200 build-gpu/inorm_gpu_tests --gtest_brief=1 > $o/tests-$i.log 2>&1 &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait $p || rc=1; done
echo "rc=$rc gpu tests $SECONDS s" >> $o/steps.txt
timeout 30 build-gpu/inorm_cpu_tests --gtest_brief=1 > $o/cpu-tests.log 2>&1
echo "rc=$? cpu tests $SECONDS s" >> $o/steps.txt
pack
f='GpuSanitize.GroupNormPlans:GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans'
for tool in memcheck racecheck initcheck synccheck; do
  [ $SECONDS -gt 540 ] && { echo "skipped $tool at $SECONDS s" >> $o/steps.txt; continue; }
  timeout $((585 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 1 build-gpu/inorm_gpu_tests \
    --gtest_brief=1 --gtest_filter=$f > $o/$tool.log 2>&1
  echo "rc=$? $tool $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; cat $o/gpu.txt; grep -h "PASSED\|FAILED" $o/tests-*.log | sort | uniq -c
