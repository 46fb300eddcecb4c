#!/usr/bin/env bash
# Session 84, first device call: channels_last's vector-path staging by cp.async (branch
# cl-cp-async) against main 99b5f97 (.carry/s84/old.tar.gz), both built on the device. inorm-bench
# forward on session 81's sweep.json, fused.json and layouts.json, old then new, two rounds; the
# backward of the three once; every GPU test in eight shards, the CPU tests; compute-sanitizer's
# four tools on GpuSanitize ForwardPlans, BackwardPlans and GroupNormPlans.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r1; mkdir -p $o
pack() { tar czf $OUT/r1.tgz -C $OUT r1; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
mkdir -p /tmp/old && tar xzf .carry/s84/old.tar.gz -C /tmp/old
( cmake -S /tmp/old -B /tmp/old/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=$(cat .carry/s84/old-commit) &&
  timeout 400 cmake --build /tmp/old/build --parallel 16 --target inorm-bench ) > $o/build-old.log 2>&1 &
old=$!
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=${INORM_COMMIT:-unknown} &&
  timeout 400 cmake --build build-gpu --parallel 16 --target inorm-bench inorm_gpu_tests inorm_cpu_tests ) > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
wait $old; echo "rc=$? build old $SECONDS s" >> $o/steps.txt
bench() {  # suite pass round
  local n=$(basename $1 .json) flag=
  [ $2 = backward ] && flag=--backward
  for b in old new; do
    bin=build-gpu/inorm-bench; [ $b = old ] && bin=/tmp/old/build/inorm-bench
    timeout 90 $bin $flag --suite $1 --json $o/$n-$2-$b-$3.json --markdown $o/$n-$2-$b-$3.md > $o/$n-$2-$b-$3.log 2>&1
    echo "rc=$? $n $2 $b $3 $SECONDS s" >> $o/steps.txt
  done
}
suites="bench/results/2026-12-06-h100-cl-block-groups/sweep.json bench/suites/fused.json bench/suites/layouts.json"
for r in 1 2; do for s in $suites; do bench $s forward $r; done; done
for s in $suites; do bench $s backward 1; done
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
f='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans:GpuSanitize.GroupNormPlans'
for tool in memcheck racecheck initcheck synccheck; do
  [ $SECONDS -gt 540 ] && { echo "skipped $tool at $SECONDS s" >> $o/steps.txt; continue; }
  timeout $((590 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 1 build-gpu/inorm_gpu_tests \
    --gtest_brief=1 --gtest_filter=$f > $o/$tool.log 2>&1
  echo "rc=$? $tool $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; cat $o/gpu.txt; grep -h "PASSED\|FAILED" $o/tests-*.log | sort | uniq -c
