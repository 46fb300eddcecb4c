#!/usr/bin/env bash
# Session 58: the planner with plan_spanning_pairs against the plans it replaced (split_pipelined
# or groups through L2), forward and backward, each set twice; then every suite forward and backward.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/b; mkdir -p $o
d=.carry/s58b; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 150 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2; do
  step fsplit-$r --suite $d/fsplit.json --variants pipelined
  step fbelow-$r --suite $d/fbelow.json --variants g30c2x15
  step bsplit-$r --backward --suite $d/bsplit.json --variants pipelined
  step bbelow-$r --backward --suite $d/bbelow.json --variants g30c2x15
  step bglobal-$r --backward --suite $d/bglobal.json --variants g36c3-global,g40c3-global
  step bgn-$r --backward --suite $d/bgn.json --variants g16c2x8,g30c2x15
done
for s in public layouts fused; do step $s --suite .carry/s58b/$s.json; done
for s in train layouts fused; do step $s-bwd --backward --suite .carry/s58b/$s.json; done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-150
cd $OUT && tar czf b.tgz b && rm -rf b
