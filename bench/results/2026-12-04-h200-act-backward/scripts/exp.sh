#!/usr/bin/env bash
# Session 61 experiment: the backward with an activation on 2-4 MiB slices (split_pipelined today)
# against shared_resident forced without register parts (L2 exchange; clusters), two rounds.
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/e; mkdir -p $o
d=.carry/s61e; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 200 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2; do
  step act-$r --backward --suite $d/act.json --variants g64c3-global,g64c2-global,g48c2-global,g40c2-global,g64c2x8,g64c2x16,g48c2x16,g40c2x8,g32c3-global
  step nnunet-$r --backward --suite $d/nnunet.json --variants g64c1-global,g48c1-global,g40c1-global
done
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$10,$13}' | cut -c1-150
cd $OUT && tar czf e.tgz e && rm -rf e
