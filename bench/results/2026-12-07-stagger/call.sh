#!/usr/bin/env bash
# Session 92's device run (README.md here), the most wanted first:
#  1. the stagger sweep: shapes.json of 2026-12-07-cl-cluster, both passes, the planner's plan of
#     this build (channels_last's cluster form with its first round staggered, config.h
#     kChannelsLastClusterStaggerCycles) beside the same plan at other spreads (inorm-bench's
#     staggerK) in one process; the backward also with the 16-bit cluster form forced, staggered;
#  2. this build's GPU tests (scripts/gpu-check.sh tests, sharded; the CPU tests run without a GPU);
#  3. main's inorm-bench against this build's, one round: public.json forward (the folded apply in
#     every forward kernel: nothing slower), layouts.json both passes (scripts/ab-bench.sh);
#  4. compute-sanitizer on the smallest plans of every family (GpuSanitize.*);
#  5. ncu on cl-bf16's forward cluster kernel, staggered (session 91's, at once: DRAM 60% of peak).
# Binaries carried ($CARRY/all.tar.xz: main-bench, new-bench and new-gpu-tests in one xz stream); INORM_COMMIT names this build, MAIN_COMMIT main's (the device's copy of the tree is no
# checkout). Packed into $OUT/w.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
HERE=bench/results/2026-12-07-stagger
SHAPES=bench/results/2026-12-07-cl-cluster/shapes.json
CARRY=${CARRY:-.carry/s92}
W=$OUT/w; mkdir -p $W
bins=/tmp/s92
pack() { tar czf $OUT/w.tgz -C $OUT w; }
step() { echo "rc=$1 $2 $SECONDS s" >> $W/run.log; pack; }
{ echo "build ${INORM_COMMIT:-?} main ${MAIN_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $W/run.log
SECONDS=0
mkdir -p $bins/main $bins/new && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bins &&
  mv $bins/main-bench $bins/main/inorm-bench && mv $bins/new-bench $bins/new/inorm-bench &&
  mv $bins/new-gpu-tests $bins/new/inorm_gpu_tests &&
  chmod +x $bins/*/*
step $? unpack
sweep=stagger0,stagger300,stagger1200,stagger2400,stagger3600
for pass in forward backward; do
  flag= variants=$sweep
  # the backward: also the 16-bit instances' cluster form forced (the planner's rule leaves them to
  # the streamed kernel, cl-kernels), staggered
  [ $pass = backward ] && flag=--backward &&
    variants=$sweep,cl-kernels,cl-cluster0-stagger0,cl-cluster0,cl-cluster0-stagger1200,cl-cluster0-stagger2400
  timeout 150 $bins/new/inorm-bench --suite $SHAPES $flag --variants $variants \
    --markdown $W/stagger-$pass.md --json $W/stagger-$pass.json > $W/stagger-$pass.log 2>&1
  step $? "stagger $pass"
done
OUT=$W/tests INORM_PREBUILT=$bins/new INORM_ONLY=tests timeout 200 scripts/gpu-check.sh > $W/tests.log 2>&1
step $? tests
AB_OLD_BENCH=$bins/main/inorm-bench AB_OLD_COMMIT=${MAIN_COMMIT:-main} AB_NEW_BENCH=$bins/new/inorm-bench AB_ROUNDS=1 \
  OUT=$W/ab timeout 200 scripts/ab-bench.sh bench/suites/public.json:forward bench/suites/layouts.json:both \
  > $W/ab.log 2>&1
step $? ab
OUT=$W/sanitize INORM_PREBUILT=$bins/new INORM_ONLY=sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans' \
  timeout 150 scripts/gpu-check.sh > $W/sanitize.log 2>&1
step $? sanitize
python3 -c "import json, sys; d = json.load(open('$SHAPES'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == 'cl-bf16']), sys.stdout)" > /tmp/cl-bf16.json
timeout 90 ncu --clock-control none --launch-skip 3 --launch-count 1 --set full \
  -k 'regex:channels_last_cluster_kernel' -o /tmp/ncu-cl-bf16 $bins/new/inorm-bench --suite /tmp/cl-bf16.json \
  --repeats 20 --warmup 1 > $W/ncu.log 2>&1
rc=$?
[ -f /tmp/ncu-cl-bf16.ncu-rep ] && ncu -i /tmp/ncu-cl-bf16.ncu-rep --page details > $W/ncu-cl-bf16.txt 2>&1
step $rc "ncu cl-bf16 forward (staggered)"
cat $W/run.log
