#!/usr/bin/env bash
# split_pipelined's ring form against the planner's plans on 1-8 MiB slices: forward, every ring
# variant, two rounds; backward with three.
cd "$(dirname "$0")/../.."
set -u
SECONDS=0
tag=${1:-r}; o=$OUT/$tag; mkdir -p $o
d=.carry/s54b; b=$d/inorm-bench
gunzip -f $b.gz; chmod +x $b
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
v=ring6,ring4-lag1,ring8-lag3,ring5-lag2-c3,ring3-lag1-c1,ring2-lag1-c1,ring1-lag0
for round in 1 2; do
  timeout 150 $b --suite $d/ring.json --variants $v --json $o/f$round.json --markdown $o/f$round.md > $o/f$round.log 2>&1; echo "rc=$? f$round $SECONDS s" >> $o/steps.txt
done
timeout 150 $b --backward --suite $d/ring.json --variants ring6,ring4-lag1,ring3-lag1-c1 --json $o/b1.json --markdown $o/b1.md > $o/b1.log 2>&1; echo "rc=$? b1 $SECONDS s" >> $o/steps.txt
echo "total $SECONDS s" >> $o/steps.txt
cat $o/steps.txt; grep -h "^| " $o/f1.md $o/f2.md $o/b1.md | grep -v "^| id" | awk -F'|' '{print $2,$3,$7,$8,$10,$12,$13}' | cut -c1-200
cd $OUT && tar czf $tag.tgz $tag && rm -rf $tag
