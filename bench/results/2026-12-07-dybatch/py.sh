#!/usr/bin/env bash
# The package built into build/python from this tree (scripts/build-python.sh), then
# python -m inorm.bench on layouts.json, forward and --train (eager PyTorch, torch.compile and
# inorm's module in one process): the README's layouts table. INORM_COMMIT names the tree's commit
# (the device's copy is no checkout). Packed into $OUT/p.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
SECONDS=0
o=$OUT/p; mkdir -p $o
pack() { tar czf $OUT/p.tgz -C $OUT p; }
step() { echo "rc=$1 $2 $SECONDS s" >> $o/steps.txt; pack; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
INORM_BUILD_DIR=build timeout 300 scripts/build-python.sh > $o/build.log 2>&1
step $? build
export PYTHONPATH=$PWD/build/python
timeout 120 python3 -m inorm.bench --suite bench/suites/layouts.json --out $o > $o/bench.log 2>&1
step $? forward
timeout 170 python3 -m inorm.bench --train --suite bench/suites/layouts.json --out $o > $o/train.log 2>&1
step $? train
cat $o/steps.txt
