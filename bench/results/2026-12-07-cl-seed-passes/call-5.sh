#!/usr/bin/env bash
# Session 98's third call (any GPU; carry .carry/s98: inorm-bench at INORM_COMMIT): call 4's ncu put
# the seeds' staged elementwise kernel at 87% of DRAM's peak, torch.compile's at 89-90%, with 3 CTAs
# an SM each waiting for its one 64 KiB tile. The seeds on the tiles' sizes (cl-tiles0xR: more CTAs
# an SM at fewer rows), the grid and the evict-first hint, both passes, then ncu on the float32
# seed's elementwise kernel at 128 and 64 rows; within CALL_S seconds (default 240). Into $OUT/c5.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s98}
here=bench/results/2026-12-07-cl-seed-passes
W=/tmp/s98-out5; H=$W/c5; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c5.tgz -C $W c5; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
call_s=${CALL_S:-240}
bin=/tmp/s98/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -dc $CARRY/all.tar.xz | tar xf - -C $bin inorm-bench &&
  chmod +x $bin/*; }
step $? unpack
python3 -c "import json, sys; d = json.load(open('$here/cl-layouts.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'].startswith('cl-seed-')]), sys.stdout)" > /tmp/seeds.json
tiles=cl-tiles0x64,cl-tiles0x128,cl-tiles0x512,cl-grid396,cl-grid528,cl-grid6336,cl-evict1
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 90 $bin/inorm-bench --suite /tmp/seeds.json $flag --variants $tiles \
    --markdown $H/seeds-$pass.md --json $H/seeds-$pass.json > $H/seeds-$pass.log 2>&1
  step $? "seeds $pass"
done
python3 -c "import json, sys; d = json.load(open('/tmp/seeds.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == 'cl-seed-fp32']), sys.stdout)" > /tmp/fp32.json
for rows in 128 64; do  # the variant's second call's elementwise kernel: after the base's 21 and one
  [ $SECONDS -lt $((call_s - 40)) ] || break
  timeout $((call_s - SECONDS - 10)) ncu --clock-control none -k 'regex:channels_last_apply' --launch-skip 22 \
    --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
    --section Occupancy --section WarpStateStats --section SchedulerStats -o /tmp/ncu-apply$rows \
    $bin/inorm-bench --suite /tmp/fp32.json --warmup 1 --repeats 20 --variants cl-tiles0x$rows \
    > $H/ncu-apply$rows.log 2>&1
  rc=$?
  ncu -i /tmp/ncu-apply$rows.ncu-rep > $H/ncu-apply$rows.txt 2>&1
  step $rc "ncu apply $rows rows"
done
cat $H/run.log
