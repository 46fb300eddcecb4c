#!/usr/bin/env bash
# Session 67, call 3 (.carry/s67c: the applying streamed kernel's L2 hints by the planner, up to 128
# MiB of inputs): alone on the GPU, inorm-bench forward and backward on layouts.json and session
# 66's backward.json; then every GPU test in eight shards beside compute-sanitizer's four tools on
# GpuSanitize.* (synccheck without the many-cluster launch, as scripts/gpu-check.sh) and the
# package's build; then python -m inorm.bench on layouts.json, the forward and --train. Everything
# under $OUT/c packed into $OUT/c.tgz (the device returns eight files).
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/c; mkdir -p $W
pack() { tar czf $OUT/c.tgz -C $OUT c; }
trap pack EXIT
tar xJf .carry/s67c/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s67c/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
B=/tmp/inorm-bench
S=bench/results/2026-12-04-h200-cl-backward/backward.json
timeout 60 $B --suite bench/suites/layouts.json --markdown $W/layouts.md --json $W/layouts.json > $W/layouts.log 2>&1
echo "rc=$? layouts $SECONDS s" >> $W/run.log
timeout 60 $B --backward --suite bench/suites/layouts.json --markdown $W/layouts-backward.md \
  --json $W/layouts-backward.json > $W/layouts-backward.log 2>&1
echo "rc=$? layouts backward $SECONDS s" >> $W/run.log
timeout 60 $B --suite $S --markdown $W/backward-json-forward.md --json $W/backward-json-forward.json \
  > $W/backward-json-forward.log 2>&1
echo "rc=$? backward.json forward $SECONDS s" >> $W/run.log
timeout 60 $B --backward --suite $S --markdown $W/backward-json.md --json $W/backward-json.json \
  > $W/backward-json.log 2>&1
echo "rc=$? backward.json backward $SECONDS s" >> $W/run.log
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 220 /tmp/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 220 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
INORM_BUILD_DIR=build timeout 240 scripts/build-python.sh > $W/build.txt 2>&1
echo "rc=$? package build $SECONDS s" >> $W/run.log
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
export PYTHONPATH=$PWD/build/python
mkdir -p $W/layouts-package $W/layouts-train
timeout $((560 - SECONDS > 60 ? (560 - SECONDS) / 2 : 30)) python3 -m inorm.bench --suite bench/suites/layouts.json \
  --out $W/layouts-package > $W/layouts-package/bench.log 2>&1
echo "rc=$? layouts package $SECONDS s" >> $W/run.log
timeout $((570 - SECONDS > 30 ? 570 - SECONDS : 10)) python3 -m inorm.bench --train --suite bench/suites/layouts.json \
  --out $W/layouts-train > $W/layouts-train/bench.log 2>&1
echo "rc=$? layouts train $SECONDS s" >> $W/run.log
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
