#!/usr/bin/env bash
# Session 60, d582b6f and d45c153 (slices span up to 26 pairs forward, 32 backward): the span suites against
# split_pipelined forced, every suite forward and backward, fused.json forward twice more.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/f; mkdir -p $o
d=.carry/s60f; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 150 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
step span --suite $d/span.json --variants pipelined
step spanb --backward --suite $d/spanb.json --variants pipelined
for s in public layouts fused; do step $s --suite bench/suites/$s.json; done
for s in train layouts fused; do step $s-bwd --backward --suite bench/suites/$s.json; done
for r in 2 3; do step fused-$r --suite bench/suites/fused.json; done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12}' | cut -c1-110
cd $OUT && tar czf f.tgz f && rm -rf f
