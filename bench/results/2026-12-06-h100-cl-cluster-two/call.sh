#!/usr/bin/env bash
# Session 87's device run (README.md here; dev/VARIANTS.md 115):
#  1. dev/cl_cluster_probe.cu's forward and backward at two CTAs an SM with register parts (and
#     at one, with the merge by sums) on channels_last samples of 1-2 MiB;
#  2. the cleanup's GPU tests and sanitizers (new-gpu-tests);
#  3. main's inorm-bench on the probe's shapes (forward and backward);
#  4. the cleanup's inorm-bench against main's on the channels_last sweep and layouts.json, one
#     round (new-bench, main-bench), and the probe again, as time allows.
# The probe is built here with nvcc (seconds); the three binaries are carried
# ($CARRY/all.tar.xz). Packed into $OUT/w.tgz after every step; LIMIT (default 540) is the
# seconds the steps may take in all.
cd "$(dirname "$0")/../../.." || exit 2
set -u
HERE=bench/results/2026-12-06-h100-cl-cluster-two
CARRY=${CARRY:-.carry/s87}
W=$OUT/w; mkdir -p $W
bins=/tmp/s87
pack() { tar czf $OUT/w.tgz -C $OUT w; }
step() { echo "rc=$1 $2 $SECONDS s" >> $W/run.log; pack; }
{ git rev-parse --short HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $W/run.log
SECONDS=0
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v dev/cl_cluster_probe.cu -o /tmp/cl-probe > $W/probe-build.log 2>&1
step $? "probe build"
mkdir -p $bins/main $bins/new && xz -dc $CARRY/all.tar.xz | tar xf - -C $bins &&
  mv $bins/main-bench $bins/main/inorm-bench && mv $bins/new-bench $bins/new/inorm-bench &&
  mv $bins/new-gpu-tests $bins/new/inorm_gpu_tests && chmod +x $bins/*/*
step $? unpack
timeout 120 /tmp/cl-probe > $W/probe-1.log 2>&1
step $? "probe pass 1"
OUT=$W/tests INORM_PREBUILT=$bins/new INORM_ONLY=tests,sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans:GpuSanitize.GroupNormPlans' \
  timeout $((${LIMIT:-540} - 60 - SECONDS)) scripts/gpu-check.sh > $W/tests.log 2>&1
step $? tests
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 60 $bins/main/inorm-bench --suite $HERE/shapes.json $flag --markdown $W/bench-$pass.md \
    --json $W/bench-$pass.json > $W/bench-$pass.log 2>&1
  step $? "bench $pass"
done
AB_OLD_BENCH=$bins/main/inorm-bench AB_OLD_COMMIT=25868ca AB_NEW_BENCH=$bins/new/inorm-bench AB_ROUNDS=1 \
  OUT=$W/ab timeout $((${LIMIT:-540} - 30 - SECONDS)) scripts/ab-bench.sh bench/results/2026-12-06-h100-cl-block-groups/sweep.json:both \
  bench/suites/layouts.json:both > $W/ab.log 2>&1
step $? ab
if [ $SECONDS -lt $((${LIMIT:-540} - 40)) ]; then
  timeout $((${LIMIT:-540} - SECONDS)) /tmp/cl-probe > $W/probe-2.log 2>&1
  step $? "probe pass 2"
fi
cat $W/run.log
