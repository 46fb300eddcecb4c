#!/usr/bin/env bash
# Session 98's second call (any GPU; carry .carry/s98: inorm-bench at INORM_COMMIT): the seeds'
# kernels one at a time under ncu (clocks as they are), to say where channels_last's forward loses
# to torch.compile's when the kernels overlap no more (call 3's CUPTI times overlap: the finish and
# elementwise kernels are programmatic dependents). The forward's three kernels (the streamed
# reduction, the finish, the staged elementwise pass) and the direct pass (cl-direct1) on both
# seeds, the float32 seed's backward, and torch.compile's kernels (ncu_compile.py), within CALL_S
# seconds (default 560). Into $OUT/c4.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s98}
here=bench/results/2026-12-07-cl-seed-passes
W=/tmp/s98-out4; H=$W/c4; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c4.tgz -C $W c4; }
{ echo "tree ${INORM_COMMIT:-?}"; ncu --version | tail -1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
call_s=${CALL_S:-560}
bin=/tmp/s98/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -dc $CARRY/all.tar.xz | tar xf - -C $bin inorm-bench &&
  chmod +x $bin/*; }
step $? unpack
sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy"
sections="$sections --section WarpStateStats --section SchedulerStats"
# name, id, skip, flags: a call's three kernels after `skip` of them (the base's warm-up call is 3,
# its 21 calls 63; the variant's warm-up call follows).
profile() {
  [ $SECONDS -lt $((call_s - 60)) ] || return 0
  python3 -c "import json, sys; d = json.load(open('$here/cl-layouts.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == '$2']), sys.stdout)" > /tmp/$2.json
  timeout $((call_s - SECONDS - 30)) ncu --clock-control none -k 'regex:channels_last_' --launch-skip $3 \
    --launch-count 3 $sections -o /tmp/ncu-$1 $bin/inorm-bench --suite /tmp/$2.json --warmup 1 --repeats 20 $4 \
    > $H/ncu-$1.log 2>&1
  local rc=$?
  ncu -i /tmp/ncu-$1.ncu-rep > $H/ncu-$1.txt 2>&1
  step $rc "ncu $1"
}
profile fp32-forward cl-seed-fp32 3 ""
profile bf16-forward cl-seed-bf16 3 ""
profile fp32-forward-direct cl-seed-fp32 66 "--variants cl-direct1"
profile bf16-forward-direct cl-seed-bf16 66 "--variants cl-direct1"
profile fp32-backward cl-seed-fp32 3 --backward
for dtype in float32 bfloat16; do
  [ $SECONDS -lt $((call_s - 90)) ] || break
  timeout $((call_s - SECONDS - 10)) ncu --clock-control none --nvtx --nvtx-include 'ncu/' $sections \
    -o /tmp/ncu-compile-$dtype python3 $here/ncu_compile.py $dtype > $H/ncu-compile-$dtype.log 2>&1
  rc=$?
  ncu -i /tmp/ncu-compile-$dtype.ncu-rep > $H/ncu-compile-$dtype.txt 2>&1
  step $rc "ncu compile $dtype"
done
cat $H/run.log
