#!/usr/bin/env bash
# Session 89's device run (README.md here; dev/VARIANTS.md 116):
#  1. the cluster form's GPU tests alone (GpuChannelsLast.ClusterForward, ClusterBackward), first,
#     so that a hang or a failure costs little;
#  2. the planner's plans beside the streamed kernel (cl-kernels), forward; backward beside it and
#     clusters of 12 and 6 CTAs (fewer, larger tiles: more SMs in whole clusters), in one process;
#  3. every GPU test and the sanitizers on the forward's and backward's plans;
#  4. its inorm-bench against main's (session 87's cleanup, ccf92dd: host code since), one round,
#     on the 1-2 MiB samples here and layouts.json, both passes, as time allows.
# The binaries are carried ($CARRY/all.tar.xz). Packed into $OUT/w.tgz after every step; LIMIT
# (default 540) is the seconds the steps may take in all, TEST_T and VARIANTS_T (150 and 90) those
# of the first two.
cd "$(dirname "$0")/../../.." || exit 2
set -u
HERE=bench/results/2026-12-07-cl-cluster
CARRY=${CARRY:-.carry/s89}
W=$OUT/w; mkdir -p $W
bins=/tmp/s89
pack() { tar czf $OUT/w.tgz -C $OUT w; }
step() { echo "rc=$1 $2 $SECONDS s" >> $W/run.log; pack; }
{ git rev-parse --short HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $W/run.log
SECONDS=0
mkdir -p $bins/main $bins/new && xz -dc $CARRY/all.tar.xz | tar xf - -C $bins &&
  mv $bins/main-bench $bins/main/inorm-bench && mv $bins/new-bench $bins/new/inorm-bench &&
  mv $bins/new-gpu-tests $bins/new/inorm_gpu_tests && chmod +x $bins/*/*
step $? unpack
timeout ${TEST_T:-150} $bins/new/inorm_gpu_tests --gtest_filter='GpuChannelsLast.Cluster*' > $W/cluster-test.log 2>&1
step $? "cluster tests"
timeout ${VARIANTS_T:-90} $bins/new/inorm-bench --suite $HERE/shapes.json --variants cl-kernels \
  --markdown $W/variants-forward.md --json $W/variants-forward.json > $W/variants-forward.log 2>&1
step $? "variants forward"
timeout ${VARIANTS_T:-90} $bins/new/inorm-bench --suite $HERE/shapes.json --backward \
  --variants cl-kernels,cl-cluster12,cl-cluster6 \
  --markdown $W/variants-backward.md --json $W/variants-backward.json > $W/variants-backward.log 2>&1
step $? "variants backward"
OUT=$W/tests INORM_PREBUILT=$bins/new INORM_ONLY=tests,sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans' \
  timeout $((${LIMIT:-540} - 90 - SECONDS)) scripts/gpu-check.sh > $W/tests.log 2>&1
step $? tests
AB_OLD_BENCH=$bins/main/inorm-bench AB_OLD_COMMIT=ccf92dd AB_NEW_BENCH=$bins/new/inorm-bench AB_ROUNDS=1 \
  OUT=$W/ab timeout $((${LIMIT:-540} - SECONDS)) scripts/ab-bench.sh $HERE/shapes.json:both \
  bench/suites/layouts.json:both > $W/ab.log 2>&1
step $? ab
cat $W/run.log
