#!/usr/bin/env bash
# Session 57, the committed build: every suite forward (public, layouts, fused, and the rounds and
# stagger sets), then the backward (train, layouts, fused, the stagger set's backward); then mid
# slices forced over clusters against the planner's, two rounds.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/f; mkdir -p $o
d=.carry/s57; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
for s in public layouts fused rounds stag2; do
  timeout 150 $b --suite $d/$s.json --json $o/$s.json --markdown $o/$s.md > $o/$s.log 2>&1; echo "rc=$? $s $SECONDS s" >> $o/steps.txt
done
for s in train layouts fused bwd; do
  timeout 150 $b --backward --suite $d/$s.json --json $o/$s-bwd.json --markdown $o/$s-bwd.md > $o/$s-bwd.log 2>&1; echo "rc=$? $s-bwd $SECONDS s" >> $o/steps.txt
done
for r in 1 2; do
  timeout 150 $b --suite $d/mid2.json --variants g24c2x12,g32c2x16,g48c2x12,g64c2x16 --json $o/mid2-$r.json --markdown $o/mid2-$r.md > $o/mid2-$r.log 2>&1; echo "rc=$? mid2-$r $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-170
cd $OUT && tar czf f.tgz f && rm -rf f
