#!/usr/bin/env bash
# Session 93's first device run: channels_last's applying streamed kernel in rounds of the grid
# (a few samples at a time over every CTA, each part's rows past its ring read again from L2), the
# most wanted first:
#  1. its GPU tests (GpuChannelsLast.Streamed*, GpuSanitize's stream plans), under a time limit (a
#     CTA waiting for parts no one takes would hang);
#  2. the sweep: shapes.json both passes, the planner's plan against cl-apply1-pK in K parts a sample
#     (264 CTAs: K = 264 a sample a round, 132 two, 88 three, 66 four, 33 eight) and cl-apply1
#     (the planner's parts of one round, where it applies);
#  3. every GPU test, sharded (scripts/gpu-check.sh tests);
#  4. compute-sanitizer on GpuSanitize's plans.
# Binaries carried ($CARRY/bins.tar.xz: inorm-bench and inorm_gpu_tests); INORM_COMMIT names this
# build. Packed into $OUT/r.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
HERE=bench/results/2026-12-07-rounds
CARRY=${CARRY:-.carry/s93}
R=$OUT/r; mkdir -p $R
bins=/tmp/s93
pack() { tar czf $OUT/r.tgz -C $OUT r; }
step() { echo "rc=$1 $2 $SECONDS s" >> $R/run.log; pack; }
{ echo "build ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $R/run.log
SECONDS=0
mkdir -p $bins && xz -T0 -dc $CARRY/bins.tar.xz | tar xf - -C $bins && chmod +x $bins/*
step $? unpack
timeout 150 $bins/inorm_gpu_tests --gtest_filter='GpuChannelsLast.Streamed*' --gtest_brief=1 > $R/streamed-tests.log 2>&1
step $? "GpuChannelsLast.Streamed*"
sweep=cl-apply1,cl-apply1-p264,cl-apply1-p132,cl-apply1-p88,cl-apply1-p66,cl-apply1-p33
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 150 $bins/inorm-bench --suite $HERE/shapes.json $flag --variants $sweep \
    --markdown $R/rounds-$pass.md --json $R/rounds-$pass.json > $R/rounds-$pass.log 2>&1
  step $? "rounds $pass"
done
OUT=$R/tests INORM_PREBUILT=$bins INORM_ONLY=tests timeout 200 scripts/gpu-check.sh > $R/tests.log 2>&1
step $? tests
OUT=$R/sanitize INORM_PREBUILT=$bins INORM_ONLY=sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans' \
  timeout 120 scripts/gpu-check.sh > $R/sanitize.log 2>&1
step $? sanitize
cat $R/run.log
