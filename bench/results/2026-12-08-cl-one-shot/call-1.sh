#!/usr/bin/env bash
# Session 99's first call (any GPU; carry .carry/s99b: inorm-bench and inorm_gpu_tests at
# INORM_COMMIT, the tree whose planner gives the elementwise kernel beside a streamed reduction a
# CTA a tile). The channels_last GPU tests; the seeds (cl-layouts.json's), both passes, two rounds:
# the planner's one-shot grid against main's persistent grid (cl-grid3168), twice it, and tiles of
# 128 and 64 rows; the sanitizers' plans under memcheck and racecheck; layouts.json, both passes, on
# an H200. Into $OUT/c1.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s99b}
seeds=bench/results/2026-12-07-cl-seed-passes/cl-layouts.json
W=/tmp/s99-out1; H=$W/c1; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c1.tgz -C $W c1; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s99/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -dc $CARRY/all.tar.xz | tar xf - -C $bin && chmod +x $bin/*; }
step $? unpack
timeout 150 $bin/inorm_gpu_tests --gtest_brief=1 --gtest_filter='GpuChannelsLast.*' > $H/gpu-tests-cl.log 2>&1
step $? gpu-tests-cl
python3 -c "import json, sys; d = json.load(open('$seeds'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'].startswith('cl-seed-')]), sys.stdout)" > /tmp/seeds.json
variants=cl-grid3168,cl-grid6336,cl-tiles0x128,cl-tiles0x64
for round in 1 2; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 100 $bin/inorm-bench --suite /tmp/seeds.json $flag --variants $variants \
      --markdown $H/seeds-$pass-$round.md --json $H/seeds-$pass-$round.json > $H/seeds-$pass-$round.log 2>&1
    step $? "seeds $pass round $round"
  done
done
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 1 $bin/inorm_gpu_tests \
    --gtest_brief=1 --gtest_filter='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans' > $H/sanitize-$tool.log 2>&1
  step $? "sanitize-$tool"
done
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 120 $bin/inorm-bench --suite bench/suites/layouts.json $flag \
      --markdown $H/layouts-$pass.md --json $H/layouts-$pass.json > $H/layouts-$pass.log 2>&1
    step $? "layouts $pass"
  done
fi
cat $H/run.log
