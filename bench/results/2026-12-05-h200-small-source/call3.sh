#!/usr/bin/env bash
# Session 70, call 5 (.carry/s70b/pk.tar.xz: new/ holds
# inorm-bench and inorm_gpu_tests built at `commit` (main), with the forward's
# context issuing its three loads (the slice's first element, the channel's weight and bias) before
# converting any (call 4's SASS: three round trips one after the other at every chunk's start, 163
# of 1204 stall samples; common.cuh channel_affine). The build before it does not travel too (the
# two would pass the device's 64 MiB): its times are this session's calls 2 and 3 (main-check's
# public.json, ncu-full's forward.json). Every GPU test of the new build in 13 shards beside
# compute-sanitizer's memcheck, synccheck and initcheck on GpuSanitize.* (racecheck, 130 s, left out:
# the change moves no shared memory access), after, alone on the GPU first (the session's device
# time is short): small.json forward twice, the public suite once, and a sweep of forced CTAs
# a slice on small.json (more warps a scheduler?); then call 4's Python check. Packed into $OUT/w.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
R=bench/results/2026-12-05-h200-small-source
tar xJf .carry/s70b/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s70b/commit)
{ echo "commit $(cat .carry/s70b/commit)"
  nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
for run in 1 2; do
  for suite in $R/small.json $([ $run = 1 ] && echo bench/suites/public.json); do
    name=$(basename $suite .json)-$run
    timeout 60 /tmp/new/inorm-bench --suite $suite --markdown $W/$name.md --json $W/$name.json \
      > $W/$name.log 2>&1
    echo "rc=$? $name $SECONDS s" >> $W/run.log
  done
done
timeout 60 /tmp/new/inorm-bench --suite $R/small.json --variants g2,g4,g8,g10,g16,g20x2,g40x4,g8c4,g16c4 \
  --markdown $W/sweep.md --json $W/sweep.json > $W/sweep.log 2>&1
echo "rc=$? sweep $SECONDS s" >> $W/run.log
for i in $(seq 0 12); do
  GTEST_TOTAL_SHARDS=13 GTEST_SHARD_INDEX=$i timeout 150 /tmp/new/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/new/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
wait
echo "tests $SECONDS s" >> $W/run.log
for i in $(seq 0 12); do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
OUT=$W bash $R/call1.sh python > /dev/null 2>&1
echo "python: $(tail -1 $W/q/python.log 2>/dev/null)" >> $W/run.log
cat $W/run.log
