#!/usr/bin/env bash
# Session 99's third call (any GPU; carry .carry/s99b: inorm-bench at INORM_COMMIT, the one-shot
# elementwise grid): layouts.json, both passes, the planner's plans; on an H200 also the seeds against
# main's persistent grid (cl-grid3168), both passes. Into $OUT/c3.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s99b}
seeds=bench/results/2026-12-07-cl-seed-passes/cl-layouts.json
W=/tmp/s99-out3; H=$W/c3; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c3.tgz -C $W c3; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s99/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -dc $CARRY/all.tar.xz | tar xf - -C $bin inorm-bench &&
  chmod +x $bin/*; }
step $? unpack
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 120 $bin/inorm-bench --suite bench/suites/layouts.json $flag \
    --markdown $H/layouts-$pass.md --json $H/layouts-$pass.json > $H/layouts-$pass.log 2>&1
  step $? "layouts $pass"
done
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  python3 -c "import json, sys; d = json.load(open('$seeds'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'].startswith('cl-seed-')]), sys.stdout)" > /tmp/seeds.json
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 100 $bin/inorm-bench --suite /tmp/seeds.json $flag --variants cl-grid3168 \
      --markdown $H/seeds-$pass.md --json $H/seeds-$pass.json > $H/seeds-$pass.log 2>&1
    step $? "seeds $pass"
  done
fi
cat $H/run.log
