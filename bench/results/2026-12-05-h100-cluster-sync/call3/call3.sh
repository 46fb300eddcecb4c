#!/usr/bin/env bash
# The device run that decides dev/cluster-sync's two patches, nothing built on the device: both
# builds come carried in .carry/cs/pk.tar.xz, built for sm_90 alone with uncompressed fatbins, so
# that xz finds the binaries' kernels alike (19 MB for the three; README.md says how):
# old/inorm-bench (main at f493c24 + experiment.patch: main's kernels, the barriers picked at run
# time), new/inorm-bench and new/inorm_gpu_tests (main with land.patch and staging.patch applied;
# .carry/cs/new-commit says from which commit).
# Correctness first, each step fitting what is left of DEADLINE (seconds, default 300): every GPU
# test and the four sanitizers, the channels_last A/B of the two builds, the barriers' A/B in one
# process (small.json both passes, train.json, public.json), the channels_last A/B again. Packed into
# $OUT/w.tgz after every step.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
{ echo "new build: $(cat .carry/cs/new-commit)"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
DEADLINE=${DEADLINE:-300}
left() { echo $((DEADLINE - SECONDS)); }
mkdir -p /tmp/pk && tar xJf .carry/cs/pk.tar.xz -C /tmp/pk
echo "unpacked $SECONDS s" >> $W/run.log
R=bench/results/2026-12-05-h200-small-source
ab() {  # ab NAME ARGS...
  local name=$1; shift
  timeout 60 /tmp/pk/old/inorm-bench "$@" --variants sync-full,sync-relaxed --markdown $W/$name.md --json $W/$name.json \
    > $W/$name.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $W/run.log
  pack
}
cl_ab() {  # cl_ab RUN SUITE...: main's channels_last kernels (the carried A/B build) against the tree's
  local run=$1; shift
  for bin in old new; do
    exe=/tmp/pk/old/inorm-bench; [ $bin = new ] && exe=/tmp/pk/new/inorm-bench
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
limit=$(( $(left) < 240 ? $(left) - 90 : 150 ))
for i in $(seq 0 12); do
  GTEST_TOTAL_SHARDS=13 GTEST_SHARD_INDEX=$i timeout $limit /tmp/pk/new/inorm_gpu_tests --gtest_brief=1 \
    > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout $limit compute-sanitizer --tool $tool --error-exitcode 1 /tmp/pk/new/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
wait
echo "tests $SECONDS s (limit $limit s)" >> $W/run.log
for i in $(seq 0 12); do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
pack
cl_ab 1 $R/small.json bench/results/2026-12-05-h100-cl-blocks/blocks.json
[ $(left) -gt 12 ] && ab small-fwd-1 --suite $R/small.json
[ $(left) -gt 12 ] && ab small-bwd-1 --suite $R/small.json --backward
[ $(left) -gt 15 ] && ab train --suite bench/suites/train.json --backward
[ $(left) -gt 15 ] && ab public --suite bench/suites/public.json
[ $(left) -gt 30 ] && cl_ab 2 $R/small.json
cat $W/run.log
