#!/usr/bin/env bash
# Session 58: Nsight Compute (clocks left alone) on one launch each of the pairs plans: float16 with
# and without a weight and bias, and 4 MiB float32 slices at batch 1 and 4.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/n; mkdir -p $o
d=.carry/s58n; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct,smsp__warp_issue_stalled_sleeping_per_warp_active.pct,launch__registers_per_thread,launch__grid_size
which ncu > $o/which.txt 2>&1
for s in f16a f16 f32 f32n4; do
  timeout 120 ncu --clock-control none --kernel-name regex:shared_resident --launch-skip 8 --launch-count 2 --metrics $m \
    $b --suite $d/$s.json --repeats 20 --warmup 2 --json $o/$s-bench.json > $o/$s.txt 2>&1
  echo "rc=$? $s $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; for s in f16a f16 f32 f32n4; do echo "== $s"; grep -E "^\s+(gpu__|dram__|lts__|smsp__|sm__|launch__)" $o/$s.txt | sort | uniq | head -40; done
cd $OUT && tar czf n.tgz n && rm -rf n
