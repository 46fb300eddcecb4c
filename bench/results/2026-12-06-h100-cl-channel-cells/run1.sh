#!/usr/bin/env bash
# Session 82, first device call: channels_last's per-channel coefficients written by a thread each
# (combine_slices, kernels/channels_last.cuh) against the commit before (f082703, shipped as
# .carry/s82/old.tar.gz), both built on the device. inorm-bench forward and --backward on session
# 81's sweep.json (28 channels_last shapes: GroupNorm(32) + SiLU on 640-1280 channels, InstanceNorm
# on 768-2048), fused.json and layouts.json, old then new, two rounds; every GPU test in eight
# shards, the CPU tests; compute-sanitizer's four tools on the sanitizer tests whose plans reach the
# changed combine (GpuSanitize ForwardPlans, BackwardPlans, GroupNormPlans).
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r1; mkdir -p $o
pack() { tar czf $OUT/r1.tgz -C $OUT r1; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
mkdir -p /tmp/old && tar xzf .carry/s82/old.tar.gz -C /tmp/old
( cmake -S /tmp/old -B /tmp/old/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=$(cat .carry/s82/old-commit) &&
  timeout 400 cmake --build /tmp/old/build --parallel 16 --target inorm-bench ) > $o/build-old.log 2>&1 &
old=$!
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=${INORM_COMMIT:-unknown} &&
  timeout 400 cmake --build build-gpu --parallel 16 --target inorm-bench inorm_gpu_tests inorm_cpu_tests ) > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
wait $old; echo "rc=$? build old $SECONDS s" >> $o/steps.txt
R=bench/results/2026-12-06-h100-cl-channel-cells
for r in 1 2; do
  for s in bench/results/2026-12-06-h100-cl-block-groups/sweep.json bench/suites/fused.json bench/suites/layouts.json; do
    n=$(basename $s .json)
    for pass in forward backward; do
      flag=; [ $pass = backward ] && flag=--backward
      for b in old new; do
        bin=build-gpu/inorm-bench; [ $b = old ] && bin=/tmp/old/build/inorm-bench
        timeout 90 $bin $flag --suite $s --json $o/$n-$pass-$b-$r.json --markdown $o/$n-$pass-$b-$r.md > $o/$n-$pass-$b-$r.log 2>&1
        echo "rc=$? $n $pass $b $r $SECONDS s" >> $o/steps.txt
      done
    done
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
  [ $SECONDS -gt 520 ] && { echo "skipped $tool at $SECONDS s" >> $o/steps.txt; continue; }
  timeout $((585 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 1 build-gpu/inorm_gpu_tests \
    --gtest_brief=1 --gtest_filter=$f > $o/$tool.log 2>&1
  echo "rc=$? $tool $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; cat $o/gpu.txt; grep -h "PASSED\|FAILED" $o/tests-*.log | sort | uniq -c
