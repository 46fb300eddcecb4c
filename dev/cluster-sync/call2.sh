#!/usr/bin/env bash
# The device run that decides dev/cluster-sync, with session 72's planner change and session 73's
# channels_last change beside it: this tree is main with land.patch and staging.patch applied.
# .carry/cs/inorm-bench-experiment.xz: inorm-bench built from 08767ac + experiment.patch
# (Plan::dev_cluster_sync picks the barriers at run time).
# - While this tree builds (nice'd, 16 cores): the A/B in one process, the planner's plan (land's
#   barriers) against `sync-full` (both cluster.sync() as on main) and `sync-relaxed`, on
#   small.json both passes twice and ten calls back to back, public.json, train.json.
# - Then the channels_last A/B (the carried build against this tree's: below), every GPU test in
#   13 shards and compute-sanitizer's four tools on GpuSanitize.* of this tree's build.
# `call2.sh --ab-only`: the A/B alone, nothing built (about 2 min, where too little device time is
# left for the tests). Packed into $OUT/w.tgz after every step. DEADLINE (seconds, default 560): the
# steps past the build fit it.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
xz -dc .carry/cs/inorm-bench-experiment.xz > /tmp/exp-bench && chmod +x /tmp/exp-bench
ab_only=false; [ "${1:-}" = --ab-only ] && ab_only=true
if ! $ab_only; then
  (nice -n 19 cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > $W/build.log 2>&1 &&
   nice -n 19 cmake --build build --target inorm_gpu_tests inorm-bench >> $W/build.log 2>&1
   echo "rc=$? build $SECONDS s" >> $W/run.log) &
  builder=$!
fi
R=bench/results/2026-12-05-h200-small-source
ab() {  # ab NAME ARGS...
  local name=$1; shift
  timeout 90 /tmp/exp-bench "$@" --variants sync-full,sync-relaxed --markdown $W/$name.md --json $W/$name.json \
    > $W/$name.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $W/run.log
  pack  # what a call cut short still brings back
}
for run in 1 2; do
  ab small-fwd-$run --suite $R/small.json
  ab small-bwd-$run --suite $R/small.json --backward
done
ab small-fwd-calls10 --suite $R/small.json --calls 10
ab public --suite bench/suites/public.json
ab train --suite bench/suites/train.json --backward
$ab_only && { cat $W/run.log; exit 0; }
wait $builder
# Past the build, each step fits what is left of DEADLINE (seconds from the start; the device's
# limit less a margin), correctness first.
DEADLINE=${DEADLINE:-560}
left() { echo $((DEADLINE - SECONDS)); }
# channels_last's staging without a division a unit and GroupNorm's backward rows without a check
# a row (dev/VARIANTS.md 102): the carried build (main's channels_last kernels) against this tree's,
# in turn: small.json (sd-unet-cl) and the channel-block cases, then small.json again after the tests.
cl_ab() {  # cl_ab RUN SUITE...
  local run=$1; shift
  for bin in old new; do
    exe=/tmp/exp-bench; [ $bin = new ] && exe=build/inorm-bench
    for pass in forward backward; do
      flag=; [ $pass = backward ] && flag=--backward
      for suite in "$@"; do
        name=cl-$bin-$(basename $suite .json)-$pass-$run
        timeout 60 $exe --suite $suite $flag --markdown $W/$name.md --json $W/$name.json > $W/$name.log 2>&1
        echo "rc=$? $name $SECONDS s" >> $W/run.log
      done
    done
  done
  pack
}
cl_ab 1 $R/small.json bench/results/2026-12-05-h100-cl-blocks/blocks.json
limit=$(( $(left) < 200 ? $(left) - 15 : 200 ))
for i in $(seq 0 12); do
  GTEST_TOTAL_SHARDS=13 GTEST_SHARD_INDEX=$i timeout $limit build/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout $limit compute-sanitizer --tool $tool --error-exitcode 1 build/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
wait
echo "tests $SECONDS s (limit $limit s)" >> $W/run.log
for i in $(seq 0 12); do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
pack
[ $(left) -gt 40 ] && cl_ab 2 $R/small.json
cat $W/run.log
