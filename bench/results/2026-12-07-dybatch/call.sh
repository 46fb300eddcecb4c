#!/usr/bin/env bash
# Session 91's device run (README.md here): the channels_last cluster backward with four of dy's
# 16-byte runs in flight a thread in the 16-bit types (config.h kChannelsLastClusterDyBatch; eight
# took 128 registers and spilled), then the suites at this build's plans, which are main's (the
# planner leaves the 16-bit backward to the streamed kernel), for the README's tables:
#  1. the cluster form's GPU tests;
#  2. shapes.json of 2026-12-07-cl-cluster, backward: the planner's plan, the streamed kernel
#     (cl-kernels) and the cluster form forced (cl-cluster0) in one process; then the forward;
#  3. public.json forward, train.json backward, layouts.json both passes;
#  4. compute-sanitizer's memcheck, racecheck and synccheck on the cluster backward's tests;
#  5. ncu on cl-bf16's forward cluster kernel (session 90's ncu step asked inorm-bench for 3 repeats,
#     which it refuses under 20).
# Binaries carried ($CARRY/all.tar.xz: new-bench, new-gpu-tests) or, without it, built here;
# INORM_COMMIT names their build
# (the device's copy of the tree is no checkout). Packed into $OUT/w.tgz after every step.
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
if [ -f $CARRY/all.tar.xz ]; then
  mkdir -p $bins && xz -dc $CARRY/all.tar.xz | tar xf - -C $bins &&
    mv $bins/new-bench $bins/inorm-bench && mv $bins/new-gpu-tests $bins/inorm_gpu_tests && chmod +x $bins/*
  step $? unpack
else
  bins=build-gpu
  { cmake -S . -B $bins -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real &&
    timeout 300 cmake --build $bins --parallel "$(nproc)" --target inorm-bench inorm_gpu_tests; } > $W/build.log 2>&1
  step $? build
fi
timeout 120 $bins/inorm_gpu_tests --gtest_filter='GpuChannelsLast.Cluster*' > $W/cluster-test.log 2>&1
step $? "cluster tests"
timeout 90 $bins/inorm-bench --suite $SHAPES --backward --variants cl-kernels,cl-cluster0 \
  --markdown $W/variants-backward.md --json $W/variants-backward.json > $W/variants-backward.log 2>&1
step $? "variants backward"
timeout 90 $bins/inorm-bench --suite $SHAPES --variants cl-kernels \
  --markdown $W/variants-forward.md --json $W/variants-forward.json > $W/variants-forward.log 2>&1
step $? "variants forward"
for run in "public.json suite" "train.json backward --backward" "layouts.json layouts" \
           "layouts.json layouts-backward --backward"; do
  set -- $run
  timeout 150 $bins/inorm-bench --suite bench/suites/$1 ${3:-} --markdown $W/$2.md --json $W/$2.json > $W/$2.log 2>&1
  step $? "$2"
done
for tool in memcheck racecheck synccheck; do
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
