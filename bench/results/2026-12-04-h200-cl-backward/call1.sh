#!/usr/bin/env bash
# Session 66, call 1 (.carry/s66a: inorm_gpu_tests and inorm-bench, stripped, in one tar.xz):
# inorm-bench --backward on backward.json against cl-apply0, cl-apply1 and cl-stream0 (alone on the
# GPU); then channels_last's GPU tests in eight shards beside compute-sanitizer's four tools on
# GpuSanitize.BackwardPlans and ForwardPlans.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/a; mkdir -p $W
R=bench/results/2026-12-04-h200-cl-backward
tar xJf .carry/s66a/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s66a/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
timeout 240 /tmp/inorm-bench --backward --suite $R/backward.json --variants cl-apply0,cl-apply1,cl-stream0 \
  --markdown $W/backward.md --json $W/backward.json > $W/backward.log 2>&1
echo "rc=$? backward.json $SECONDS s" >> $W/run.log
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
  echo "$tool: $(grep -E 'PASSED|FAILED|ERROR SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
