#!/usr/bin/env bash
# Session 70, call 2 (.carry/s70a: inorm-bench and inorm_gpu_tests built at the commit in it, main):
# main's launch refactors (9b54586, 74f0644) had not run on a GPU. Every GPU test in eight shards
# beside compute-sanitizer's four tools on GpuSanitize.*; then, alone on the GPU, the public suite
# forward and the train suite backward (against the README's numbers), and session 67's call 4 (the
# applying kernel's L2 hints, cl-held/hints.json). Packed into $OUT/m.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/m; mkdir -p $W
pack() { tar czf $OUT/m.tgz -C $OUT m; }
trap pack EXIT
tar xJf .carry/s70a/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s70a/commit)
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
timeout 150 /tmp/inorm-bench --suite bench/suites/public.json --markdown $W/public.md --json $W/public.json > $W/public.log 2>&1
echo "rc=$? public $SECONDS s" >> $W/run.log
timeout 150 /tmp/inorm-bench --backward --suite bench/suites/train.json --markdown $W/train.md --json $W/train.json > $W/train.log 2>&1
echo "rc=$? train $SECONDS s" >> $W/run.log
H=bench/results/2026-12-04-h200-cl-held
for pass in forward backward; do
  flag=""; [ $pass = backward ] && flag=--backward
  timeout 60 /tmp/inorm-bench $flag --calls 10 --suite $H/hints.json --variants cl-evict0,cl-evict1 \
    --markdown $W/hints-$pass.md --json $W/hints-$pass.json > $W/hints-$pass.log 2>&1
  echo "rc=$? hints $pass $SECONDS s" >> $W/run.log
done
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
