#!/usr/bin/env bash
# Session 66, call 7 (.carry/s66f, the review's build: one helper for the input bytes, the stage rows
# passed to the applying pass): GpuChannelsLast.* in eight shards beside compute-sanitizer's four
# tools on GpuSanitize.ForwardPlans and BackwardPlans; then backward.json by the planner, alone.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/g; mkdir -p $W
tar xJf .carry/s66f/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s66f/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 220 /tmp/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter='GpuChannelsLast.*' > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  timeout 220 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter='GpuSanitize.BackwardPlans:GpuSanitize.ForwardPlans' > $W/sanitize-$tool.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
timeout 80 /tmp/inorm-bench --backward --suite bench/results/2026-12-04-h200-cl-backward/backward.json \
  --markdown $W/backward.md --json $W/backward.json > $W/backward.log 2>&1
echo "rc=$? backward.json $SECONDS s" >> $W/run.log
cat $W/run.log
