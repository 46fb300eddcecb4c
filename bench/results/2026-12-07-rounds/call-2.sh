#!/usr/bin/env bash
# Session 93's second device run, the most wanted first:
#  1. this tree's GPU tests, sharded (scripts/gpu-check.sh tests): the forward's combined mean now
#     split around the whole mean (forward_op.cuh from_split; call-1's one failed case, a first part
#     far from its slice's mean), GpuChannelsLast.StreamedReduction's new case of it among them;
#     then call-1's failed seed again;
#  2. why the rounds lost (call-1 on an H100: cl-seed-bf16 forward 1.91x a copy in a sample a round
#     against 1.53): ncu's DRAM bytes, L2 hit rate and duration of the applying streamed kernel on
#     cl-seed-bf16's forward in 264 parts a sample (a sample a round: each part's rows past its ring
#     meant to come back from L2) and in 66 (four samples a round, no reuse meant), the rounds'
#     build (4640509);
#  3. on an H200 only (the README's tables; session 92 ran them on an H100): inorm-bench on every
#     suite, both passes where the README shows them, and the stagger sweep of 2026-12-07-cl-cluster
#     (config.h's spread of 30,000 cycles measured on an H100 only); the package built on the device
#     (scripts/build-python.sh), then python -m inorm.bench forward and --train on layouts.json,
#     public.json (train.json) and fused.json, while time is left.
# Binaries built without a GPU, carried in one xz stream ($CARRY/all.tar.xz: new-bench and
# new-gpu-tests of this tree, rounds-bench); INORM_COMMIT names this tree. Packed into $OUT/h.tgz
# after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s93y}
H=$OUT/h; mkdir -p $H/suites
pack() { tar czf $OUT/h.tgz -C $OUT h; }
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}, rounds build 4640509"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bins=/tmp/s93
mkdir -p $bins/new && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bins && chmod +x $bins/*-* &&
  mv $bins/new-bench $bins/new/inorm-bench && mv $bins/new-gpu-tests $bins/new/inorm_gpu_tests
step $? unpack
new=$bins/new/inorm-bench
OUT=$H/tests INORM_PREBUILT=$bins/new INORM_ONLY=tests timeout 200 scripts/gpu-check.sh > $H/tests.log 2>&1
step $? tests
INORM_CASE_SEED=2186139186 timeout 80 $bins/new/inorm_gpu_tests --gtest_filter='GpuChannelsLast.StreamedReduction' \
  --gtest_brief=1 > $H/seed.log 2>&1
step $? "StreamedReduction at call-1's seed 2186139186"
python3 -c "import json, sys; d = json.load(open('bench/results/2026-12-07-rounds/shapes.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == 'cl-seed-bf16']), sys.stdout)" > /tmp/seed.json
metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum
for parts in 264 66; do
  timeout 90 ncu --clock-control none --kernel-name-base mangled -k 'regex:stream_kernel.*Lb1EEEv' \
    --launch-skip 2 --launch-count 1 --metrics $metrics $bins/rounds-bench --suite /tmp/seed.json \
    --variants cl-apply1-p$parts --repeats 20 --warmup 1 --json /tmp/ncu.json > $H/ncu-p$parts.txt 2>&1
  step $? "ncu p$parts"
done
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for run in "layouts layouts" "layouts layouts-backward --backward" "public public" \
    "train train-backward --backward" "fused fused" "fused fused-backward --backward"; do
    set -- $run
    timeout 100 $new --suite bench/suites/$1.json ${3:-} --markdown $H/suites/$2.md --json $H/suites/$2.json \
      > $H/suites/$2.log 2>&1
    step $? "inorm-bench $2"
  done
  sweep=stagger0,stagger300,stagger700,stagger1500,stagger2500,stagger3500
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 $new --suite bench/results/2026-12-07-cl-cluster/shapes.json $flag --variants $sweep \
      --markdown $H/stagger-$pass.md --json $H/stagger-$pass.json > $H/stagger-$pass.log 2>&1
    step $? "stagger $pass"
  done
  INORM_BUILD_DIR=build-gpu timeout 300 scripts/build-python.sh > $H/build.log 2>&1
  step $? build-python
  export PYTHONPATH=$PWD/build-gpu/python
  for item in layouts:layouts layouts-train:layouts:--train public:public train:train:--train fused:fused \
    fused-train:fused:--train; do
    IFS=: read -r name suite flag <<< "$item"
    left=$((585 - SECONDS))
    [ $left -gt 20 ] || { echo "skipped $name: no time left" >> $H/run.log; continue; }
    mkdir -p $H/$name
    timeout $((left < 120 ? left : 120)) python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} \
      --out $H/$name > $H/$name/bench.log 2>&1
    step $? "package $name"
  done
fi
cat $H/run.log
