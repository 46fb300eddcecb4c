#!/usr/bin/env bash
# Session 76, call 1: main (42feb8e, base) against the store's body loop (where the channel window
# cannot move) unrolled by 2 (u2) and by 4 (u4): the suites both passes in two alternating rounds,
# then ncu on SD VAE mid's GroupNorm backward with and without the affine (base).
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v && tar xJf .carry/s76/pk.tar.xz -C /tmp/v
echo "unpacked $SECONDS s: $(ls /tmp/v)" >> $W/run.log
run_suites() {  # binary-name round
  local B=/tmp/v/$1
  for sp in layouts:forward layouts:backward train:backward fused:forward fused:backward public:forward; do
    suite=${sp%:*}; pass=${sp#*:}; flag=; [ $pass = backward ] && flag=--backward
    timeout 120 $B --suite bench/suites/$suite.json $flag --markdown $W/$1-$suite-$pass-$2.md \
      --json $W/$1-$suite-$pass-$2.json > $W/$1-$suite-$pass-$2.log 2>&1
    echo "rc=$? $1 $suite-$pass $2 $SECONDS s" >> $W/run.log
  done
  pack
}
for r in 1 2; do
  for b in base u2 u4; do run_suites $b $r; done
done
python3 - <<'PY'
import json
d = json.load(open('.carry/exp/affine.json'))
for c in d['cases']:
    json.dump(dict(d, cases=[c]), open('/tmp/case-%s.json' % c['id'], 'w'))
PY
for id in sd-vae-mid-gn-silu-aff sd-vae-mid-gn-silu-noaff; do
  timeout 90 ncu --clock-control none --launch-skip 10 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section InstructionStats \
    -k 'regex:^split_pipelined_kernel$' \
    /tmp/v/base --backward --suite /tmp/case-$id.json --repeats 12 --warmup 2 > $W/ncu-base-$id.txt 2>&1
  echo "rc=$? ncu base $id $SECONDS s" >> $W/run.log
done
