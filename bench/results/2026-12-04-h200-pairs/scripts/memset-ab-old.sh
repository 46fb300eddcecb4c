#!/usr/bin/env bash
# Session 58: 6ddc179's inorm-bench (two memsets) on the memset sets, and kept in /tmp for the next
# call on this machine (.carry/s58m/run.sh alternates it with the build under test).
cd "$(dirname "$0")/../.."
set -u
o=$OUT/o; mkdir -p $o
d=.carry/s58o; b=/tmp/s58-inorm-bench-6ddc179
[ -f $b ] || { gunzip -c $d/inorm-bench-6ddc179.gz > $b; chmod +x $b; }
SECONDS=0
step() { local name=$1; shift; timeout 120 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
step old-f-0 --suite $d/mf.json
step old-b-0 --backward --suite $d/mb.json
cat $o/steps.txt
cd $OUT && tar czf o.tgz o && rm -rf o
