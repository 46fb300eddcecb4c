#!/usr/bin/env bash
# Session 61, be77c07's GPU tests with the device time left: initcheck on GpuSanitize.* first (not
# run on session 60's final build), then the GPU tests in eight shards side by side, then memcheck,
# synccheck (without the many-cluster launch it faults on) and racecheck. Logs straight into $OUT,
# so that what finished comes back if the time runs out.
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/t; mkdir -p $o
t=.carry/s61t/inorm_gpu_tests
[ -f $t ] || { gunzip -f $t.gz; chmod +x $t; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
sanitize() {
  local tool=$1 filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 1 $t --gtest_brief=1 --gtest_filter="$filter" > $o/$tool.log 2>&1
  echo "rc=$? $tool $SECONDS s" >> $o/summary.txt
}
sanitize initcheck
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 $t > $o/tests-$i.log 2>&1 &
done
wait; echo "tests $SECONDS s" >> $o/summary.txt
for tool in memcheck synccheck racecheck; do sanitize $tool; done
cat $o/summary.txt; grep -h "tests ran\|PASSED\|FAILED\|ERROR SUMMARY" $o/*.log | sort | uniq -c | head -40
