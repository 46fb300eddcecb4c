#!/usr/bin/env bash
# main (a980f52's kernels, .carry/landed/pk.tar.xz) against the working tree (.carry/runs/pk.tar.xz;
# the forward's window channel taken again at the window): GPU tests, memcheck and racecheck on
# GpuSanitize.*, then fused.json forward in two alternating rounds and its backward in one.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/old /tmp/new
tar xJf .carry/landed/pk.tar.xz -C /tmp/old; tar xJf .carry/runs/pk.tar.xz -C /tmp/new
for i in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 300 /tmp/new/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/new/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter='GpuSanitize.*' > $W/sanitize-$tool.log 2>&1 &
done
wait
echo "tests and sanitizers $SECONDS s" >> $W/run.log
for i in $(seq 0 11); do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
pack
for sp in fused:forward:1 fused:forward:2 fused:backward:1; do
  IFS=: read suite pass r <<< "$sp"; flag=; [ $pass = backward ] && flag=--backward
  for b in old new; do
    timeout 100 /tmp/$b/inorm-bench --suite bench/suites/$suite.json $flag --markdown $W/$b-$suite-$pass-$r.md \
      --json $W/$b-$suite-$pass-$r.json > $W/$b-$suite-$pass-$r.log 2>&1
    echo "rc=$? $b $suite-$pass $r $SECONDS s" >> $W/run.log
  done
done
