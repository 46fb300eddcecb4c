#!/usr/bin/env bash
# The device run that decides dev/cluster-sync (README.md there says how to build what it carries).
# .carry/cs/pk.tar.xz: new/inorm-bench built with experiment.patch (`bench-commit`: Plan::dev_cluster_sync
# picks the barriers at run time) and new/inorm_gpu_tests built with land.patch (`tests-commit`, the
# change without the switch; this tree is that commit, and the package is built from it).
# shared_resident's cluster kernels without the exit's cluster barrier and with the start's barrier
# split: the planner's plan against both barriers as on main (`sync-full`) and the split start with
# a relaxed exit barrier (`sync-relaxed`), each A/B in one process, alone on the GPU: small.json
# both passes twice and ten calls back to back, public.json, train.json, fused.json both passes.
# Then every GPU test in 13 shards and compute-sanitizer's four tools on GpuSanitize.*, beside the
# package's build; then python -m inorm.bench on fused.json, forward and --train, alone on the GPU.
# Packed into $OUT/w.tgz.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
R=bench/results/2026-12-05-h200-small-source
tar xJf .carry/cs/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/cs/bench-commit)
{ echo "inorm-bench $(cat .carry/cs/bench-commit), inorm_gpu_tests and package $(cat .carry/cs/tests-commit)"
  nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
bench() {  # bench NAME ARGS...
  local name=$1; shift
  timeout 60 /tmp/new/inorm-bench "$@" --variants sync-full,sync-relaxed --markdown $W/$name.md --json $W/$name.json \
    > $W/$name.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $W/run.log
}
for run in 1 2; do
  bench small-fwd-$run --suite $R/small.json
  bench small-bwd-$run --suite $R/small.json --backward
done
bench small-fwd-calls10 --suite $R/small.json --calls 10
bench public --suite bench/suites/public.json
bench train --suite bench/suites/train.json --backward
bench fused-fwd --suite bench/suites/fused.json
bench fused-bwd --suite bench/suites/fused.json --backward
(INORM_BUILD_DIR=build timeout 300 scripts/build-python.sh > $W/package-build.log 2>&1
 echo "rc=$? package build $SECONDS s" >> $W/run.log) &
for i in $(seq 0 12); do
  GTEST_TOTAL_SHARDS=13 GTEST_SHARD_INDEX=$i timeout 240 /tmp/new/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/new/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
wait
echo "tests $SECONDS s" >> $W/run.log
for i in $(seq 0 12); do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
export PYTHONPATH=$PWD/build/python INORM_COMMIT=$(cat .carry/cs/tests-commit)
for item in fused:fused fused-train:fused:--train; do
  IFS=: read -r name suite flag <<< "$item"
  [ $SECONDS -lt 470 ] || { echo "skipped $name: $SECONDS s" >> $W/run.log; continue; }
  mkdir -p $W/$name
  timeout $((560 - SECONDS)) python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} --out $W/$name \
    > $W/$name/bench.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $W/run.log
done
cat $W/run.log
