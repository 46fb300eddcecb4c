#!/usr/bin/env bash
# Session 60 experiment: slices spanning up to 32 clusters of two (the planner's new plans, against
# split_pipelined forced and 32 pairs forced, in one process), two rounds; then every suite once.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/b; mkdir -p $o
d=.carry/s60b; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 150 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2; do
  step span-$r --suite $d/span.json --variants pipelined,g64c2x32
  step spanb-$r --backward --suite $d/spanb.json --variants pipelined,g64c2x32
done
for s in public layouts fused; do step $s --suite bench/suites/$s.json; done
for s in train layouts fused; do step $s-bwd --backward --suite bench/suites/$s.json; done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-150
cd $OUT && tar czf b.tgz b && rm -rf b
