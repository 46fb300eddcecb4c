#!/usr/bin/env bash
# Session 66, call 5 (.carry/s66d: inorm_gpu_tests of the head, with one sample in 132 parts among
# GpuChannelsLast.StreamedApply's shapes): every GPU test in eight shards beside compute-sanitizer's
# four tools on GpuSanitize.*.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/e; mkdir -p $W
tar xJf .carry/s66d/pk.tar.xz -C /tmp
{ echo "commit $(cat .carry/s66d/commit)"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 /tmp/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter='GpuSanitize.*' > $W/sanitize-$tool.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
