#!/usr/bin/env bash
# Session 58: slices of 1-4 MiB spanning clusters of two (forced, narrowest and wider groups)
# against the planner's plan at 1c5778b, forward and backward; each set twice.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/a; mkdir -p $o
d=.carry/s58; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 120 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2; do
  step f4-$r --suite $d/f4.json --variants g30c2x15,g32c2x16
  step f3-$r --suite $d/f3.json --variants g20c2x10,g22c2x11,g24c2x12
  step f3s-$r --suite $d/f3s.json --variants g24c2x12,g26c2x13
  step f2-$r --suite $d/f2.json --variants g16c2x8,g18c2x9,g20c2x10
  step b2-$r --backward --suite $d/b2.json --variants g30c2x15,g32c2x16
  step b1-$r --backward --suite $d/b1.json --variants g18c2x9,g20c2x10
done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-170
cd $OUT && tar czf a.tgz a && rm -rf a
