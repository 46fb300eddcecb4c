#!/usr/bin/env bash
# Session 66, call 2 (.carry/s66b: the rule by the inputs' bytes, the backward's to 8 GiB): alone on
# the GPU, inorm-bench --backward on few.json (the applying kernel's parts) and backward.json (the
# planner's plans), then layouts.json forward and backward and train.json backward; then every GPU
# test in eight shards.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/b; mkdir -p $W
R=bench/results/2026-12-04-h200-cl-backward
tar xJf .carry/s66b/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s66b/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
B=/tmp/inorm-bench
timeout 100 $B --backward --suite $R/few.json --variants cl-apply0,cl-apply1,cl-apply1-p33,cl-apply1-p66,cl-apply1-p132 \
  --markdown $W/few.md --json $W/few.json > $W/few.log 2>&1
echo "rc=$? few.json $SECONDS s" >> $W/run.log
timeout 100 $B --backward --suite $R/backward.json --markdown $W/backward.md --json $W/backward.json > $W/backward.log 2>&1
echo "rc=$? backward.json $SECONDS s" >> $W/run.log
timeout 100 $B --suite bench/suites/layouts.json --markdown $W/layouts.md --json $W/layouts.json > $W/layouts.log 2>&1
echo "rc=$? layouts $SECONDS s" >> $W/run.log
timeout 100 $B --backward --suite bench/suites/layouts.json --markdown $W/layouts-backward.md \
  --json $W/layouts-backward.json > $W/layouts-backward.log 2>&1
echo "rc=$? layouts backward $SECONDS s" >> $W/run.log
timeout 100 $B --backward --suite bench/suites/train.json --markdown $W/train-backward.md \
  --json $W/train-backward.json > $W/train-backward.log 2>&1
echo "rc=$? train backward $SECONDS s" >> $W/run.log
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 200 /tmp/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
