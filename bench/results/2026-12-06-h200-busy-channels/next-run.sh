#!/usr/bin/env bash
# Session 79, not run: c4 (aa1d20a's planner, built as b893bfc before its rebase: slices under 4096
# values take chunks of whole channels in one round only) against c3 (121e430) and main's kernels
# (b) on the 16 swept shapes it changes and four controls, two alternating rounds; then c4's
# GroupNorm, activation, random and backward GPU tests, and GroupNormPlans under memcheck and
# racecheck. It runs as .carry/s79b/run.sh (carry .carry/s79 and .carry/s79b).
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v
[ -x /tmp/v/b-bench ] || [ ! -f .carry/s78/pk.tar.xz ] || tar xJf .carry/s78/pk.tar.xz -C /tmp/v b-bench
[ -x /tmp/v/c3-bench ] || tar xJf .carry/s79/pk.tar.xz -C /tmp/v c3-bench
tar xJf .carry/s79b/pk.tar.xz -C /tmp/v
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $W/run.log
for r in 1 2; do
  for b in b c3 c4; do
    [ -x /tmp/v/$b-bench ] || continue
    timeout 100 /tmp/v/$b-bench --backward --suite .carry/s79/small.json --markdown $W/$b-small-backward-$r.md \
      --json $W/$b-small-backward-$r.json > $W/$b-small-backward-$r.log 2>&1
    echo "rc=$? $b small-backward $r $SECONDS s" >> $W/run.log
  done
  pack
done
for i in $(seq 0 9); do
  GTEST_TOTAL_SHARDS=10 GTEST_SHARD_INDEX=$i timeout 100 /tmp/v/c4-tests --gtest_brief=1 \
    --gtest_filter='GpuGroupNorm.*:GpuActivation.*:GpuRandom.*:GpuBackward.*' > $W/c4-tests-$i.log 2>&1 &
done
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/v/c4-tests --gtest_brief=1 \
    --gtest_filter=GpuSanitize.GroupNormPlans > $W/c4-$tool.log 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "c4 $tool: $(grep -E 'PASSED|FAILED|ERROR SUMMARY' $W/c4-$tool.log | tr '\n' ' ')" >> $W/run.log
done
echo "tests $SECONDS s" >> $W/run.log
for i in $(seq 0 9); do echo "c4 shard $i: $(grep -E 'PASSED|FAILED' $W/c4-tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
grep -h -B2 -A12 'Failure' $W/c4-tests-*.log | head -80 >> $W/run.log
pack
