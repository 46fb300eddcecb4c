#!/usr/bin/env bash
# split_pipelined's streamed form against the planner's plans on 1-64 MiB slices.
cd "$(dirname "$0")/../.."
set -u
SECONDS=0
tag=${1:-s}; v=${2:-pipelined-stages4-part16-c1,pipelined-stages6-part16-c1,pipelined-stages4-part32-c1,pipelined-stages2-part32-c2,pipelined-stages3-part16-c2,pipelined-stages4-part16-c1-lead1,pipelined-stages8-part8-c1}
rounds=${3:-1}; back=${4:-}
o=$OUT/$tag; mkdir -p $o
d=.carry/s55; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
for round in $(seq 1 $rounds); do
  timeout 200 $b --suite $d/mid.json --variants $v --json $o/f$round.json --markdown $o/f$round.md > $o/f$round.log 2>&1; echo "rc=$? f$round $SECONDS s" >> $o/steps.txt
done
if [ -n "$back" ]; then
  timeout 200 $b --backward --suite $d/mid.json --variants $back --json $o/b1.json --markdown $o/b1.md > $o/b1.log 2>&1; echo "rc=$? b1 $SECONDS s" >> $o/steps.txt
fi
echo "total $SECONDS s" >> $o/steps.txt
cat $o/steps.txt; tail -3 $o/f1.log; grep -h "^| " $o/f*.md $o/b*.md 2>/dev/null | grep -v "^| id" | awk -F'|' '{print $2,$3,$7,$8,$10,$12,$13}' | cut -c1-200
cd $OUT && tar czf $tag.tgz $tag && rm -rf $tag
