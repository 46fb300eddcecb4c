#!/usr/bin/env bash
# Session 59: Nsight Compute (clocks left alone) on one launch each of the forward's general op
# (InstanceNorm + LeakyReLU) against the plain op (no activation) on the same float16 shapes: 1 MiB
# slices (eight CTAs a slice with register parts) and nnU-Net's 4 MiB slices (15 pairs).
cd "$(dirname "$0")/../.."
set -u
o=$OUT/n; mkdir -p $o
d=.carry/s59n; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,smsp__warps_active.avg.per_cycle_active,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_not_selected_per_warp_active.pct,smsp__warp_issue_stalled_selected_per_warp_active.pct,smsp__warp_issue_stalled_no_instruction_per_warp_active.pct,smsp__warp_issue_stalled_sleeping_per_warp_active.pct,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,launch__registers_per_thread,launch__grid_size
for s in g1m p1m gnn pnn; do
  timeout 100 ncu --clock-control none --kernel-name regex:shared_resident --launch-skip 8 --launch-count 1 --metrics $m \
    $b --suite $d/$s.json --repeats 20 --warmup 2 --json $o/$s-bench.json > $o/$s.txt 2>&1
  echo "rc=$? $s $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; for s in g1m p1m gnn pnn; do echo "== $s"; grep -E "^\s+(gpu__|dram__|lts__|smsp__|sm__|l1tex__|launch__)" $o/$s.txt | sort | uniq | head -40; done
cd $OUT && tar czf n.tgz n && rm -rf n
