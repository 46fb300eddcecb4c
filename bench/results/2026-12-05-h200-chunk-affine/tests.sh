#!/usr/bin/env bash
# Session 77, call 1: the GPU tests and the four sanitizer tools on both branches' builds:
# a-tests (chunk-affine-backward, 661cb05: the chunk form on split_pipelined) in full, and
# b-tests (chunk-affine-shared: also on shared_resident) in full, side by side.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v && tar xJf .carry/s77/pk.tar.xz -C /tmp/v
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $W/run.log
for b in a b; do
  for i in $(seq 0 7); do
    GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 400 /tmp/v/$b-tests --gtest_brief=1 > $W/$b-tests-$i.log 2>&1 &
  done
done
for b in a b; do
  for tool in memcheck racecheck synccheck initcheck; do
    filter='GpuSanitize.*'
    [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
    timeout 400 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/v/$b-tests --gtest_brief=1 \
      --gtest_filter="$filter" > $W/$b-sanitize-$tool.log 2>&1 &
  done
done
wait
echo "tests and sanitizers $SECONDS s" >> $W/run.log
for b in a b; do
  for i in $(seq 0 7); do echo "$b shard $i: $(grep -E 'PASSED|FAILED' $W/$b-tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
  for tool in memcheck racecheck synccheck initcheck; do
    echo "$b $tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/$b-sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
  done
done
