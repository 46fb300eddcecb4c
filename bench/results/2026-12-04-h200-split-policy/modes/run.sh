#!/bin/bash
# Session 63's split_pipelined L2-hint experiment (branch split-l2-policy): INORM_SPLIT_POLICY bits
# 1 a part read again loads evict-last in its reduction, 2 a resident part's load evict-first, 4 the
# second read evict-first, 8 y stored evict-first; every mode in its own process, alternating, two rounds.
set -u
R=bench/results/2026-12-04-h200-split-policy
W=$OUT/w; mkdir -p $W
gunzip -c .carry/pol/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt
for round in 1 2; do
  for mode in 0 8 14 15 1 6; do
    INORM_SPLIT_POLICY=$mode /tmp/ib --suite $R/split.json --markdown $W/fwd-m$mode-r$round.md --json $W/fwd-m$mode-r$round.json > $W/fwd-m$mode-r$round.log 2>&1
    INORM_SPLIT_POLICY=$mode /tmp/ib --backward --suite $R/split.json --markdown $W/bwd-m$mode-r$round.md --json $W/bwd-m$mode-r$round.json > $W/bwd-m$mode-r$round.log 2>&1
  done
done
for mode in 0 15; do
  INORM_SPLIT_POLICY=$mode /tmp/ib --suite $R/split.json --variants pipelined-lead1,pipelined-lead0.5,pipelined-lead4 --markdown $W/fwd-lead-m$mode.md --json $W/fwd-lead-m$mode.json > $W/fwd-lead-m$mode.log 2>&1
done
python3 - <<'PY' > $W/few.json
import json
d=json.load(open("bench/results/2026-12-04-h200-split-policy/split.json"))
d["cases"]=[c for c in d["cases"] if c["id"] in ("few-huge",)]
print(json.dumps(d))
PY
for mode in 0 15 14; do
  INORM_SPLIT_POLICY=$mode timeout 300 ncu --clock-control none -k regex:split_pipelined --launch-skip 3 --launch-count 1 \
    --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,lts__t_sector_op_read_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
    /tmp/ib --suite $W/few.json --repeats 20 --warmup 1 --json /tmp/n.json > $W/ncu-few-huge-m$mode.txt 2>&1
done
tar czf $OUT/results.tgz -C $OUT w
