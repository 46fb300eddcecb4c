#!/usr/bin/env bash
# Session 59 experiment 2: the forward's general op with narrow register parts, always in the
# spanning instance (the one-cluster instance spilled), no wide parts; the suites twice, then forced plans.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/f; mkdir -p $o
d=.carry/s59f; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 150 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2; do for s in genreg fused; do step $s-$r --suite $d/$s.json; done; done
step forced --suite $d/forced.json --variants pipelined,g8c2,g16c3,g16c2x8,g5c2,g9c3
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-150
cd $OUT && tar czf f.tgz f && rm -rf f
