#!/usr/bin/env bash
# The ring's data path alone (-probe: no exchange, each CTA's own partial as its slice's
# statistics, so rows are not verified) against the ring and the planner's plans.
cd "$(dirname "$0")/../.."
set -u
SECONDS=0
tag=${1:-q}; o=$OUT/$tag; mkdir -p $o
d=.carry/s54q; b=$d/inorm-bench
gunzip -f $b.gz; chmod +x $b
v=ring6,ring6-probe,ring4-lag1-probe,ring8-lag3-probe,ring3-lag1-probe,ring3-lag1-c1-probe,ring2-lag1-c1-probe,ring5-lag2-c3-probe
for round in 1 2; do
  timeout 120 $b --suite $d/probe.json --variants $v --json $o/f$round.json --markdown $o/f$round.md > $o/f$round.log 2>&1; echo "rc=$? f$round $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; grep -h "^| " $o/f*.md | grep -v "^| id" | awk -F'|' '{print $2,$7,$10,$NF}' | cut -c1-150 | sort -s -k1,1
cd $OUT && tar czf $tag.tgz $tag && rm -rf $tag
