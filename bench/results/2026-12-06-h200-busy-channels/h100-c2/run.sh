#!/usr/bin/env bash
# Session 78: the planner's chunks of whole channels in a cluster for GroupNorm's backward in two
# rounds (c2, branch one-channel-chunks) against main's 9340e87 (b), whose kernels it shares: the
# backward of fused.json and unet3.json (SD UNet-like shapes and VARIANTS 70's small-chunk shapes;
# also forced g2c6 and g10c6) in two alternating rounds, b's forward of unet3.json against six
# CTAs an SM forced, then c2's GPU tests of GroupNorm, activations and random cases, and
# GpuSanitize.GroupNormPlans (with its two plans at six CTAs an SM) under the four tools.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v && tar xJf .carry/s78/pk.tar.xz -C /tmp/v
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $W/run.log
for r in 1 2; do
  for b in b c2; do
    for suite in fused unet3; do
      f=bench/suites/$suite.json; variants=
      [ $suite = unet3 ] && f=.carry/s78/unet3.json && variants="--variants g2c6,g10c6"
      timeout 120 /tmp/v/$b-bench --backward --suite $f $variants --markdown $W/$b-$suite-backward-$r.md \
        --json $W/$b-$suite-backward-$r.json > $W/$b-$suite-backward-$r.log 2>&1
      echo "rc=$? $b $suite-backward $r $SECONDS s" >> $W/run.log
    done
    pack
  done
done
# The forward (c2's planner does not change it): the planner's against six CTAs an SM forced.
for r in 1 2; do
  timeout 120 /tmp/v/b-bench --suite .carry/s78/unet3.json --variants g2c6,g5c6,g10c6 --markdown $W/b-unet3-forward-$r.md \
    --json $W/b-unet3-forward-$r.json > $W/b-unet3-forward-$r.log 2>&1
  echo "rc=$? b unet3-forward $r $SECONDS s" >> $W/run.log
done
for i in $(seq 0 9); do
  GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 180 /tmp/v/c2-tests --gtest_brief=1 \
    --gtest_filter='GpuGroupNorm.*:GpuActivation.*:GpuRandom.*' > $W/c2-tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  timeout 180 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/v/c2-tests --gtest_brief=1 \
    --gtest_filter=GpuSanitize.GroupNormPlans > $W/c2-$tool.log 2>&1 &
done
wait
echo "tests $SECONDS s" >> $W/run.log
for i in $(seq 0 9); do echo "c2 shard $i: $(grep -E 'PASSED|FAILED' $W/c2-tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "c2 $tool: $(grep -E 'PASSED|FAILED|ERROR SUMMARY' $W/c2-$tool.log | tr '\n' ' ')" >> $W/run.log
done
grep -h -B2 -A12 'Failure' $W/c2-tests-*.log | head -80 >> $W/run.log
pack
