#!/usr/bin/env bash
# Session 68 wrote this call (the device was not lent in session 68; .carry/s69a: inorm-bench
# built at the commit in it, whose plans for these cases are main's): fused.json's small tensors
# (small.json), forward and backward: inorm-bench's times, then ncu's full set (clocks left alone)
# on four launches of inorm's kernels of each case after warm-up, so every kernel of a call.
# Packed into $OUT/s.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/s; mkdir -p $W
pack() { tar czf $OUT/s.tgz -C $OUT s; }
trap pack EXIT
R=bench/results/2026-12-04-h200-small-ncu
tar xJf .carry/s69a/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s69a/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
python3 - "$R/small.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d['cases']:
    one = dict(d, cases=[c])
    json.dump(one, open('/tmp/small-%s.json' % c['id'], 'w'))
PY
for pass in forward backward; do
  flag=""; [ $pass = backward ] && flag=--backward
  timeout 60 /tmp/inorm-bench $flag --suite $R/small.json --markdown $W/$pass.md --json $W/$pass.json \
    > $W/$pass.log 2>&1
  echo "rc=$? $pass $SECONDS s" >> $W/run.log
  # inorm's kernels only (not the copy's nor the sleep queued before each sample): after the
  # first 20, four of them, every kernel of a call (plans launch one to four).
  for id in sd-unet-gn-silu sd-unet-cl-gn-silu cyclegan-in-relu nnunet-deep-lrelu; do
    timeout 60 ncu --clock-control none --launch-skip 20 --launch-count 4 --set full \
      -k 'regex:^(channel_reduce|channels_last_[a-z]*|eval_forward|group_registers|shared_resident|split_pipelined)_kernel$' \
      /tmp/inorm-bench $flag --suite /tmp/small-$id.json --repeats 20 --warmup 2 > $W/ncu-$pass-$id.txt 2>&1
    echo "rc=$? ncu $pass $id $SECONDS s" >> $W/run.log
  done
done
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
