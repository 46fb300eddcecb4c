#!/usr/bin/env bash
# Session 90's second call (README.md here): the cluster form with one 16-byte shared load a row run
# (the first call's build read float32 a word and the 16-bit types a byte at a time), built at the
# commit named in run.log: the cluster tests, the plans beside the streamed kernel (variants), the
# A/B against main's inorm-bench, ncu's full set on the cluster kernel of cl-bf16 and cl-c32-fp32
# (NCU_IDS), both passes, then the sanitizers on the forward's and backward's plans: the most wanted
# first, each step packed, so that a call cut short by its timeout still brings its results back.
# Binaries as call.sh's; INORM_COMMIT names the build (the device's copy of the tree is no checkout
# of it).
cd "$(dirname "$0")/../../.." || exit 2
set -u
HERE=bench/results/2026-12-07-cl-cluster
CARRY=${CARRY:-.carry/s89}
W=$OUT/w; mkdir -p $W
bins=/tmp/s89
pack() { tar czf $OUT/w.tgz -C $OUT w; }
step() { echo "rc=$1 $2 $SECONDS s" >> $W/run.log; pack; }
{ echo "build ${INORM_COMMIT:-?}"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } \
  > $W/run.log
SECONDS=0
mkdir -p $bins/main $bins/new && xz -dc $CARRY/all.tar.xz | tar xf - -C $bins &&
  mv $bins/main-bench $bins/main/inorm-bench && mv $bins/new-bench $bins/new/inorm-bench &&
  mv $bins/new-gpu-tests $bins/new/inorm_gpu_tests && chmod +x $bins/*/*
step $? unpack
timeout 120 $bins/new/inorm_gpu_tests --gtest_filter='GpuChannelsLast.Cluster*' > $W/cluster-test.log 2>&1
step $? "cluster tests"
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 90 $bins/new/inorm-bench --suite $HERE/shapes.json $flag --variants cl-kernels \
    --markdown $W/variants-$pass.md --json $W/variants-$pass.json > $W/variants-$pass.log 2>&1
  step $? "variants $pass"
done
AB_OLD_BENCH=$bins/main/inorm-bench AB_OLD_COMMIT=ccf92dd AB_NEW_BENCH=$bins/new/inorm-bench AB_ROUNDS=1 \
  OUT=$W/ab timeout 150 scripts/ab-bench.sh $HERE/shapes.json:both \
  bench/suites/layouts.json:both > $W/ab.log 2>&1
step $? ab
for id in ${NCU_IDS:-cl-bf16 cl-c32-fp32}; do
  python3 -c "import json, sys; d = json.load(open('$HERE/shapes.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == '$id']), sys.stdout)" > /tmp/$id.json
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 ncu --clock-control none --launch-skip 3 --launch-count 1 --set full \
      -k 'regex:channels_last_cluster_kernel' -o /tmp/ncu-$id-$pass $bins/new/inorm-bench $flag --suite /tmp/$id.json \
      --repeats 3 --warmup 1 > /tmp/ncu-$id-$pass.log 2>&1
    rc=$?
    ncu -i /tmp/ncu-$id-$pass.ncu-rep > $W/ncu-$id-$pass.txt 2>&1
    step $rc "ncu $id $pass"
  done
done
OUT=$W/tests INORM_PREBUILT=$bins/new INORM_ONLY=sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans' \
  timeout 150 scripts/gpu-check.sh > $W/tests.log 2>&1
step $? sanitize
cat $W/run.log
