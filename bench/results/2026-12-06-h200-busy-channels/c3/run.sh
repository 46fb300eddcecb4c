#!/usr/bin/env bash
# Session 79: c3 (121e430, branch c2-rebased: chunks of whole channels in two rounds at most, of one
# channel first, then fewer rounds, then more CTAs an SM) against main's kernels (b, 9340e87's
# build in .carry/s78): GroupNorm's backward on fused.json, unet3.json and a sweep sample, two
# alternating rounds; then every GPU test of c3 and GroupNormPlans under the four tools.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v && tar xJf .carry/s78/pk.tar.xz -C /tmp/v b-bench && tar xJf .carry/s79/pk.tar.xz -C /tmp/v
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $W/run.log
for r in 1 2; do
  for b in b c3; do
    for suite in fused unet3 sweep; do
      f=bench/suites/$suite.json
      [ $suite = unet3 ] && f=.carry/s78/unet3.json
      [ $suite = sweep ] && f=.carry/s79/sweep.json
      timeout 150 /tmp/v/$b-bench --backward --suite $f --markdown $W/$b-$suite-backward-$r.md \
        --json $W/$b-$suite-backward-$r.json > $W/$b-$suite-backward-$r.log 2>&1
      echo "rc=$? $b $suite-backward $r $SECONDS s" >> $W/run.log
    done
    pack
  done
done
for i in $(seq 0 9); do
  GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 300 /tmp/v/c3-tests --gtest_brief=1 > $W/c3-tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/v/c3-tests --gtest_brief=1 \
    --gtest_filter=GpuSanitize.GroupNormPlans > $W/c3-$tool.log 2>&1 &
done
wait
echo "tests $SECONDS s" >> $W/run.log
for i in $(seq 0 9); do echo "c3 shard $i: $(grep -E 'PASSED|FAILED' $W/c3-tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "c3 $tool: $(grep -E 'PASSED|FAILED|ERROR SUMMARY' $W/c3-$tool.log | tr '\n' ' ')" >> $W/run.log
done
grep -h -B2 -A12 'Failure' $W/c3-tests-*.log | head -80 >> $W/run.log
pack
