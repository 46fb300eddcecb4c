#!/usr/bin/env bash
# Session 57: the planner at cc4e752 on public, layouts, fused (forward) and sweep 3's two float32
# shapes; then the same slices over more rounds of the chip (rounds.json).
cd "$(dirname "$0")/../.."
set -u
o=$OUT/r; mkdir -p $o
d=.carry/s57; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
for s in public layouts fused f15 f23 rounds; do
  timeout 200 $b --suite $d/$s.json --json $o/$s.json --markdown $o/$s.md > $o/$s.log 2>&1; echo "rc=$? $s $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$7,$10,$12,$13}' | cut -c1-150
cd $OUT && tar czf r.tgz r && rm -rf r
