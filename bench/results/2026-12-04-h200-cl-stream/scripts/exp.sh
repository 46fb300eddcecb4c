#!/usr/bin/env bash
# Session 62: channels_last's forward reduction streamed (branch cl-stream; INORM_CL_STREAM_ROWS rows
# a part, INORM_CL_STREAM_BATCH runs in flight a thread) against the staged reduction (unset), in
# one process each, alternating, two rounds; then ncu (clocks left alone) on one launch of each
# reduction kernel on cl-bf16. inorm-bench from .carry/s62x.
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/x; mkdir -p $o
b=.carry/s62x/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
s=bench/results/2026-12-04-h200-cl-stream/suites
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
run() {
  local name=$1; shift
  env "$@" timeout 90 $b --suite $s/cl.json --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $o/steps.txt
}
for round in 1 2; do
  run base-$round
  run r2048b4-$round INORM_CL_STREAM_ROWS=2048
  run r2048b8-$round INORM_CL_STREAM_ROWS=2048 INORM_CL_STREAM_BATCH=8
  run r1024b4-$round INORM_CL_STREAM_ROWS=1024
  run r4096b4-$round INORM_CL_STREAM_ROWS=4096
done
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,launch__registers_per_thread,launch__grid_size,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct
for v in base r2048b4; do
  envs=(); [ $v = r2048b4 ] && envs=(INORM_CL_STREAM_ROWS=2048)
  env "${envs[@]}" timeout 100 ncu --clock-control none --kernel-name regex:"channels_last_(stream_)?reduce" --launch-skip 8 \
    --launch-count 1 --metrics $m $b --suite $s/cl-bf16.json --repeats 20 --warmup 2 > $o/ncu-$v.txt 2>&1
  echo "rc=$? ncu-$v $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt
for f in $o/*-1.md $o/*-2.md; do echo "== $f"; cut -d'|' -f2,7,10,13 $f | tail -n +4; done
for v in base r2048b4; do echo "== ncu $v"; grep -E "^\s+(gpu__|dram__|smsp__|launch__)" $o/ncu-$v.txt | head -12; done
cd $OUT && tar czf x.tgz x && rm -rf x
