#!/usr/bin/env bash
# Session 67, call 1 (.carry/s67a: parts held whole in the applying kernel's ring, in rounds; one
# combine a sample by its last CTA): alone on the GPU, inorm-bench on held.json forward and
# backward with the variants, seeds.json and layouts.json by the planner; then every GPU test in
# eight shards beside compute-sanitizer's four tools on GpuSanitize.* (synccheck without the
# many-cluster launch it faults on, as scripts/gpu-check.sh).
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/a; mkdir -p $W
R=bench/results/2026-12-04-h200-cl-held
tar xJf .carry/s67a/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s67a/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
B=/tmp/inorm-bench
timeout 120 $B --suite $R/held.json \
  --variants cl-apply0,cl-apply1-p4,cl-apply1-p26,cl-apply1-p32,cl-apply1-p43,cl-apply1-p64,cl-apply1-p128 \
  --markdown $W/held.md --json $W/held.json > $W/held.log 2>&1
echo "rc=$? held forward $SECONDS s" >> $W/run.log
timeout 120 $B --backward --suite $R/held.json \
  --variants cl-apply0,cl-apply1-p4,cl-apply1-p52,cl-apply1-p64,cl-apply1-p86,cl-apply1-p128,cl-apply1-p256 \
  --markdown $W/held-backward.md --json $W/held-backward.json > $W/held-backward.log 2>&1
echo "rc=$? held backward $SECONDS s" >> $W/run.log
timeout 60 $B --suite $R/seeds.json --markdown $W/seeds.md --json $W/seeds.json > $W/seeds.log 2>&1
echo "rc=$? seeds $SECONDS s" >> $W/run.log
timeout 60 $B --backward --suite $R/seeds.json --markdown $W/seeds-backward.md --json $W/seeds-backward.json \
  > $W/seeds-backward.log 2>&1
echo "rc=$? seeds backward $SECONDS s" >> $W/run.log
timeout 80 $B --suite bench/suites/layouts.json --markdown $W/layouts.md --json $W/layouts.json > $W/layouts.log 2>&1
echo "rc=$? layouts $SECONDS s" >> $W/run.log
timeout 80 $B --backward --suite bench/suites/layouts.json --markdown $W/layouts-backward.md \
  --json $W/layouts-backward.json > $W/layouts-backward.log 2>&1
echo "rc=$? layouts backward $SECONDS s" >> $W/run.log
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 200 /tmp/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
