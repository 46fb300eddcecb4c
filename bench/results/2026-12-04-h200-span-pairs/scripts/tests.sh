#!/usr/bin/env bash
# The GPU tests in eight shards side by side (as ctest runs them); then, unless "tests" only is
# asked, every compute-sanitizer tool on GpuSanitize.* (synccheck without the many-cluster launch
# it faults on, as scripts/gpu-check.sh runs them).
cd "$(dirname "$0")/../.."
set -u
only=${1:-all}
o=$OUT/t; mkdir -p $o
t=.carry/s60t/inorm_gpu_tests
[ -f $t ] || { gunzip -f $t.gz; chmod +x $t; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 400 $t > $o/tests-$i.log 2>&1 &
done
wait; echo "tests $SECONDS s" >> $o/summary.txt
if [ "$only" = all ]; then
  for tool in memcheck racecheck initcheck synccheck; do
    filter='GpuSanitize.*'
    [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 1 $t --gtest_brief=1 --gtest_filter="$filter" > $o/$tool.log 2>&1
    echo "rc=$? $tool $SECONDS s" >> $o/summary.txt
  done
fi
cat $o/summary.txt; grep -h "tests ran\|PASSED\|FAILED\|ERROR SUMMARY" $o/*.log | sort | uniq -c | head -40
cd $OUT && tar czf t.tgz t && rm -rf t
