#!/usr/bin/env bash
# Session 98's fourth call, for the next device (any GPU; carry .carry/s98b: inorm-bench at
# INORM_COMMIT, from the tree that parses -gridK after a channels_last variant): call 5 put the seeds'
# elementwise kernel level at every tile size (87% of DRAM's peak under ncu) and 0.6% faster at twice
# the grid, and torch.compile's pointwise kernel (90%) is a one-shot grid of 16 KiB CTAs. The seeds
# (from cl-layouts.json) on the grid up to a CTA a tile (cl-grid100000000), also at 128 and 64 rows
# a tile (cl-tiles0xR-grid100000000: 64 rows of float32 are compile's 16 KiB), both passes, two
# rounds. The seeds alone: the grid's edit would also reshape the others' cluster form.
# Into $OUT/c6.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s98b}
here=bench/results/2026-12-07-cl-seed-passes
W=/tmp/s98-out6; H=$W/c6; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/c6.tgz -C $W c6; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s98/bin
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -dc $CARRY/all.tar.xz | tar xf - -C $bin inorm-bench &&
  chmod +x $bin/*; }
step $? unpack
python3 -c "import json, sys; d = json.load(open('$here/cl-layouts.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'].startswith('cl-seed-')]), sys.stdout)" > /tmp/seeds.json
grids=cl-grid6336,cl-grid12672,cl-grid100000000,cl-tiles0x128-grid100000000,cl-tiles0x64-grid100000000
for round in 1 2; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 100 $bin/inorm-bench --suite /tmp/seeds.json $flag --variants $grids,cl-grid3168 \
      --markdown $H/grid-$pass-$round.md --json $H/grid-$pass-$round.json > $H/grid-$pass-$round.log 2>&1
    step $? "grid $pass round $round"
  done
done
cat $H/run.log
