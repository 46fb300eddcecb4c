#!/usr/bin/env bash
# Session 59 experiment 3 (built on 8b3b4fe): the forward's general op takes the one-pass float64
# statistics (ForwardOp::kOnePass) in its register-part instances; genreg.json and fused.json, three rounds.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/o; mkdir -p $o
d=.carry/s59o; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 100 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2 3; do for s in genreg fused; do step $s-$r --suite $d/$s.json; done; done
cat $o/steps.txt; grep -h "^| " $o/*-1.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-120
cd $OUT && tar czf o.tgz o && rm -rf o
