#!/usr/bin/env bash
# Session 91's device run (README.md here), the most wanted first:
#  1. the cluster form's GPU tests (the channels_last cluster backward with four of dy's 16-byte
#     runs in flight a thread in the 16-bit types, config.h kChannelsLastClusterDyBatch: eight took
#     128 registers and spilled);
#  2. shapes.json of 2026-12-07-cl-cluster, backward: the planner's plan, the streamed kernel
#     (cl-kernels) and the cluster form forced (cl-cluster0) in one process; then the forward;
#  3. where the archive holds it (fold-bench), branch s91-fold's inorm-bench (the forward's apply with the mean's
#     low part folded into the shift: one subtraction an element fewer) against this build, one
#     round, forward, on shapes.json and layouts.json (scripts/ab-bench.sh);
#  4. layouts.json both passes at this build's plans, which are main's (the planner leaves the
#     16-bit backward to the streamed kernel);
#  5. compute-sanitizer's memcheck and racecheck on the cluster backward's tests;
#  6. ncu on cl-bf16's forward cluster kernel (session 90's ncu step asked inorm-bench for 3 repeats,
#     which it refuses under 20).
# Binaries carried ($CARRY/all.tar.xz: new-bench, new-gpu-tests and fold-bench, in one xz stream);
# INORM_COMMIT names this build (the device's copy of the tree is no checkout). Packed into
# $OUT/w.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
SHAPES=bench/results/2026-12-07-cl-cluster/shapes.json
CARRY=${CARRY:-.carry/s91}
W=$OUT/w; mkdir -p $W
bins=/tmp/s91
pack() { tar czf $OUT/w.tgz -C $OUT w; }
step() { echo "rc=$1 $2 $SECONDS s" >> $W/run.log; pack; }
{ echo "build ${INORM_COMMIT:-?}"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } \
  > $W/run.log
SECONDS=0
mkdir -p $bins && xz -dc $CARRY/all.tar.xz | tar xf - -C $bins &&
  mv $bins/new-bench $bins/inorm-bench && mv $bins/new-gpu-tests $bins/inorm_gpu_tests && chmod +x $bins/*
step $? unpack
timeout 120 $bins/inorm_gpu_tests --gtest_filter='GpuChannelsLast.Cluster*' > $W/cluster-test.log 2>&1
step $? "cluster tests"
timeout 90 $bins/inorm-bench --suite $SHAPES --backward --variants cl-kernels,cl-cluster0 \
  --markdown $W/variants-backward.md --json $W/variants-backward.json > $W/variants-backward.log 2>&1
step $? "variants backward"
timeout 90 $bins/inorm-bench --suite $SHAPES --variants cl-kernels \
  --markdown $W/variants-forward.md --json $W/variants-forward.json > $W/variants-forward.log 2>&1
step $? "variants forward"
if [ -f $bins/fold-bench ]; then
  AB_OLD_BENCH=$bins/inorm-bench AB_OLD_COMMIT=${INORM_COMMIT:-?} AB_NEW_BENCH=$bins/fold-bench AB_ROUNDS=1 \
    INORM_COMMIT=${FOLD_COMMIT:-fold} OUT=$W/ab timeout 150 scripts/ab-bench.sh $SHAPES:forward \
    bench/suites/layouts.json:forward > $W/ab.log 2>&1
  step $? "fold a/b"
fi
for run in "layouts layouts" "layouts layouts-backward --backward"; do
  set -- $run
  timeout 120 $bins/inorm-bench --suite bench/suites/$1.json ${3:-} --markdown $W/$2.md --json $W/$2.json \
    > $W/$2.log 2>&1
  step $? "$2"
done
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 1 $bins/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter='GpuChannelsLast.ClusterBackward*' > $W/sanitize-$tool.log 2>&1
  step $? "sanitize $tool (cluster backward)"
done
python3 -c "import json, sys; d = json.load(open('$SHAPES'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == 'cl-bf16']), sys.stdout)" > /tmp/cl-bf16.json
timeout 90 ncu --clock-control none --launch-skip 3 --launch-count 1 --set full \
  -k 'regex:channels_last_cluster_kernel' -o /tmp/ncu-cl-bf16 $bins/inorm-bench --suite /tmp/cl-bf16.json \
  --repeats 20 --warmup 1 > $W/ncu.log 2>&1
rc=$?
[ -f /tmp/ncu-cl-bf16.ncu-rep ] && ncu -i /tmp/ncu-cl-bf16.ncu-rep --page details > $W/ncu-cl-bf16.txt 2>&1
step $rc "ncu cl-bf16 forward"
cat $W/run.log
