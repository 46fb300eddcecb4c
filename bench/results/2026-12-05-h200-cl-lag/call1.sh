#!/usr/bin/env bash
# Session 68 wrote this call; the device was not lent in session 68, so it runs in a later one
# (.carry/s69a: inorm-bench and inorm_gpu_tests built at the commit in it, branch cl-lag).
# channels_last's applying streamed kernel in rounds (Plan::stream_lag, dev/VARIANTS.md 98): every
# GPU test in eight shards beside compute-sanitizer's four tools on GpuSanitize.* (synccheck
# without the many-cluster launch, as scripts/gpu-check.sh); then, alone on the GPU, inorm-bench's
# forward on lag.json, the planner's plan against the lag variants. Packed into $OUT/a.tgz (the
# device returns eight files).
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/a; mkdir -p $W
pack() { tar czf $OUT/a.tgz -C $OUT a; }
trap pack EXIT
R=bench/results/2026-12-04-h200-cl-lag
tar xJf .carry/s69a/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s69a/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 240 /tmp/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
wait
echo "tests $SECONDS s" >> $W/run.log
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
timeout $((580 - SECONDS)) /tmp/inorm-bench --suite $R/lag.json \
  --variants cl-lag1,cl-lag2,cl-lag3,cl-lag1-p32,cl-lag2-p32,cl-lag2-p128,cl-lag2-g132,cl-lag2-evict0,cl-lag1-cb32,cl-lag1-cb16 \
  --markdown $W/forward.md --json $W/forward.json > $W/forward.log 2>&1
echo "rc=$? forward $SECONDS s" >> $W/run.log
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
