#!/usr/bin/env bash
# Session 93's second device run: why the rounds lost (call-1: cl-seed-bf16 forward 1.91x a copy in
# a sample a round against 1.53): ncu's DRAM bytes, L2 hit rate and duration of the applying
# streamed kernel on cl-seed-bf16's forward in 264 parts a sample (a sample a round: each part's
# rows past its ring meant to come back from L2) and in 66 (four samples a round, no reuse meant);
# and call-1's one failed test case again at its seed (GpuChannelsLast.StreamedReduction, forward,
# channels_last_3d in 7429 parts, the non-applying kernel this change left alone), twice.
# Binaries carried as call-1's. Packed into $OUT/n.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s93}
N=$OUT/n; mkdir -p $N
bins=/tmp/s93
pack() { tar czf $OUT/n.tgz -C $OUT n; }
step() { echo "rc=$1 $2 $SECONDS s" >> $N/run.log; pack; }
{ echo "build ${INORM_COMMIT:-?}"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $N/run.log
SECONDS=0
if [ ! -x $bins/inorm-bench ]; then mkdir -p $bins && xz -T0 -dc $CARRY/bins.tar.xz | tar xf - -C $bins && chmod +x $bins/*; fi
step $? unpack
python3 -c "import json, sys; d = json.load(open('bench/results/2026-12-07-rounds/shapes.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == 'cl-seed-bf16']), sys.stdout)" > /tmp/seed.json
metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum
for parts in 264 66; do
  timeout 120 ncu --clock-control none --kernel-name-base mangled -k 'regex:stream_kernel.*Lb1EEEv' \
    --launch-skip 2 --launch-count 1 --metrics $metrics $bins/inorm-bench --suite /tmp/seed.json \
    --variants cl-apply1-p$parts --repeats 20 --warmup 1 --json /tmp/ncu.json > $N/ncu-p$parts.txt 2>&1
  step $? "ncu p$parts"
done
# The seeds' forward sweep of call-1 again on this machine (it may be another GPU than call-1's).
timeout 60 $bins/inorm-bench --suite /tmp/seed.json --variants cl-apply1,cl-apply1-p264,cl-apply1-p132,cl-apply1-p66,cl-apply1-p33 \
  --markdown $N/rounds-forward.md --json $N/rounds-forward.json > $N/rounds-forward.log 2>&1
step $? "rounds forward, cl-seed-bf16"
for run in 1 2; do
  INORM_CASE_SEED=2186139186 timeout 100 $bins/inorm_gpu_tests --gtest_filter='GpuChannelsLast.StreamedReduction' \
    --gtest_brief=1 > $N/seed-$run.log 2>&1
  step $? "StreamedReduction at seed 2186139186, run $run"
done
cat $N/run.log
