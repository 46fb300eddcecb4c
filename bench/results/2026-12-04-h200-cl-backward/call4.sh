#!/usr/bin/env bash
# Session 66, call 4 (.carry/s66c: a CTA an SM where the partials cap leaves half the SMs idle):
# alone on the GPU, inorm-bench on few.json forward (session 65's) and backward (this folder's)
# against the tiles (cl-apply0), and backward.json by the planner; channels_last's GPU tests in
# eight shards; then the package built from the same tree, its channels_last tests, and
# python -m inorm.bench --train on layouts.json (a training step against eager PyTorch and
# torch.compile).
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/d; mkdir -p $W
R=bench/results/2026-12-04-h200-cl-backward
tar xJf .carry/s66c/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s66c/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
B=/tmp/inorm-bench
timeout 60 $B --suite bench/results/2026-12-04-h200-cl-apply/few.json --variants cl-apply0 \
  --markdown $W/few-forward.md --json $W/few-forward.json > $W/few-forward.log 2>&1
echo "rc=$? few forward $SECONDS s" >> $W/run.log
timeout 60 $B --backward --suite $R/few.json --variants cl-apply0 \
  --markdown $W/few-backward.md --json $W/few-backward.json > $W/few-backward.log 2>&1
echo "rc=$? few backward $SECONDS s" >> $W/run.log
timeout 80 $B --backward --suite $R/backward.json --markdown $W/backward.md --json $W/backward.json > $W/backward.log 2>&1
echo "rc=$? backward.json $SECONDS s" >> $W/run.log
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 150 /tmp/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter='GpuChannelsLast.*' > $W/tests-$i.log 2>&1 &
done
INORM_BUILD_DIR=build timeout 240 scripts/build-python.sh > $W/build.txt 2>&1
echo "rc=$? package build $SECONDS s" >> $W/run.log
wait
for i in 0 1 2 3 4 5 6 7; do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
export PYTHONPATH=$PWD/build/python
timeout 100 python3 -m pytest tests/python -q -rs -p no:cacheprovider -k "channels_last or layout" > $W/pytest-cl.txt 2>&1
echo "rc=$? pytest channels_last $SECONDS s ($(tail -1 $W/pytest-cl.txt))" >> $W/run.log
mkdir -p $W/layouts-train
timeout 150 python3 -m inorm.bench --train --suite bench/suites/layouts.json --out $W/layouts-train > $W/layouts-train/bench.log 2>&1
echo "rc=$? layouts train $SECONDS s" >> $W/run.log
cat $W/run.log
