#!/usr/bin/env bash
# Slices over several clusters (forced g<CTAs>c2x<clusters>) against the planner's plans.
cd "$(dirname "$0")/../.."
set -u
SECONDS=0
tag=${1:-s}; rounds=${2:-1}; back=${3:-}
o=$OUT/$tag; mkdir -p $o
d=.carry/s56; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
while read -r k v; do
  for round in $(seq 1 $rounds); do
    timeout 150 $b --suite $d/$k.json --variants $v --json $o/$k-f$round.json --markdown $o/$k-f$round.md > $o/$k-f$round.log 2>&1; echo "rc=$? $k f$round $SECONDS s" >> $o/steps.txt
  done
  if [ -n "$back" ]; then
    timeout 150 $b --backward --suite $d/$k.json --variants $v --json $o/$k-b1.json --markdown $o/$k-b1.md > $o/$k-b1.log 2>&1; echo "rc=$? $k b1 $SECONDS s" >> $o/steps.txt
  fi
done < $d/groups.txt
echo "total $SECONDS s" >> $o/steps.txt
cat $o/steps.txt; grep -h "^| " $o/*.md 2>/dev/null | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$8,$10,$12,$13}' | cut -c1-220
cd $OUT && tar czf $tag.tgz $tag && rm -rf $tag
