#!/usr/bin/env bash
# Session 59, fda4837 (the forward's general op with register parts): every suite forward and
# backward, and the general-op shapes (genreg.json); fused.json and genreg.json forward twice more.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/h; mkdir -p $o
d=.carry/s59h; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 150 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for s in public layouts fused genreg; do step $s --suite $d/$s.json; done
for s in train layouts fused; do step $s-bwd --backward --suite $d/$s.json; done
for r in 2 3; do for s in fused genreg; do step $s-$r --suite $d/$s.json; done; done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-150
cd $OUT && tar czf h.tgz h && rm -rf h
