#!/usr/bin/env bash
# Session 59, 3fc0916 (the committed head): every suite forward and backward, and the general-op
# shapes (genreg.json); the binary stays in /tmp/s59 for the experiment's call beside it.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/b; mkdir -p $o /tmp/s59
d=.carry/s59b; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
cp $b /tmp/s59/base-bench; cp $d/*.json /tmp/s59/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 150 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for s in public layouts fused genreg; do step $s --suite $d/$s.json; done
for s in train layouts fused; do step $s-bwd --backward --suite $d/$s.json; done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-150
cd $OUT && tar czf b.tgz b && rm -rf b
