#!/usr/bin/env bash
# shared_resident's groups forced on 1-3 MiB slices, three rounds.
cd "$(dirname "$0")/../.."
set -u
SECONDS=0
tag=${1:-g}; o=$OUT/$tag; mkdir -p $o
d=.carry/s54b; b=$d/inorm-bench
gunzip -f $b.gz; chmod +x $b
v=g9c2,g10c2,g12c2,g16c2,g8c2,regv12,g0c1,g16c1
for round in 1 2 3; do
  timeout 120 $b --suite $d/cl.json --variants $v --json $o/f$round.json --markdown $o/f$round.md > $o/f$round.log 2>&1; echo "rc=$? f$round $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; grep -h "^| " $o/f*.md | grep -v "^| id" | awk -F'|' '{print $2,$7,$10,$NF}' | cut -c1-220 | sort -s -k1,1
cd $OUT && tar czf $tag.tgz $tag && rm -rf $tag
