#!/usr/bin/env bash
# Session 81, first device call: build on the device (inorm-bench, inorm_gpu_tests, inorm_cpu_tests),
# then inorm-bench forward and --backward on sweep.json with each channel block's rows over groups
# of CTAs forced (cl-blocks0gG: the planner's block for that group; cG c1: the wide CTA alone on its
# SM) beside the planner's plans, then every GPU test in eight shards and the CPU tests.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r1; mkdir -p $o
pack() { tar czf $OUT/r1.tgz -C $OUT r1; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=${INORM_COMMIT:-unknown} > $o/build.log 2>&1
timeout 330 cmake --build build-gpu --parallel 16 --target inorm-bench inorm_gpu_tests inorm_cpu_tests >> $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
s=bench/results/2026-12-06-h100-cl-block-groups/sweep.json
V=cl-blocks0g2,cl-blocks0g3,cl-blocks0g4,cl-blocks0g6,cl-blocks0g8,cl-blocks0g2c1,cl-blocks0g4c1
timeout 100 build-gpu/inorm-bench --suite $s --variants $V --json $o/forward.json --markdown $o/forward.md > $o/forward.log 2>&1
echo "rc=$? forward $SECONDS s" >> $o/steps.txt
timeout 100 build-gpu/inorm-bench --backward --suite $s --variants $V --json $o/backward.json --markdown $o/backward.md > $o/backward.log 2>&1
echo "rc=$? backward $SECONDS s" >> $o/steps.txt
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
cat $o/steps.txt; cat $o/gpu.txt; grep -h "PASSED\|FAILED" $o/tests-*.log | sort | uniq -c
