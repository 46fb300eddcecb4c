#!/usr/bin/env bash
# Session 77, call 3: the planner's chunks of one channel for GroupNorm's backward in one or two
# rounds (branch one-channel-chunks, c) against main's 9340e87 (b, whose kernels c shares): c's GPU
# tests in full, then the backward of fused.json and unet2.json (SD UNet-like shapes; also forced
# g10c5 and g10c6) in two alternating rounds.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v && tar xJf .carry/s77c/pk.tar.xz -C /tmp/v && tar xJf .carry/s77/pk.tar.xz -C /tmp/v b-bench
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $W/run.log
for i in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 300 /tmp/v/c-tests --gtest_brief=1 > $W/c-tests-$i.log 2>&1 &
done
wait
echo "tests $SECONDS s" >> $W/run.log
for i in $(seq 0 11); do echo "c shard $i: $(grep -E 'PASSED|FAILED' $W/c-tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
grep -h -B2 -A12 'Failure' $W/c-tests-*.log | head -80 >> $W/run.log
pack
for r in 1 2; do
  for b in b c; do
    for suite in fused unet2; do
      f=bench/suites/$suite.json; variants=
      [ $suite = unet2 ] && f=.carry/exp/unet2.json && variants="--variants g10c5,g10c6"
      timeout 90 /tmp/v/$b-bench --backward --suite $f $variants --markdown $W/$b-$suite-backward-$r.md \
        --json $W/$b-$suite-backward-$r.json > $W/$b-$suite-backward-$r.log 2>&1
      echo "rc=$? $b $suite-backward $r $SECONDS s" >> $W/run.log
    done
    pack
  done
done
