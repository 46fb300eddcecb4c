#!/usr/bin/env bash
# The package built from this tree into build-gpu (scripts/build-python.sh; a warm machine keeps
# it), then python -m inorm.bench (eager PyTorch, torch.compile and inorm's module in one process),
# forward and --train, on the suites named in SUITES (default: layouts, then public/train, then
# fused): the README's tables. INORM_COMMIT names the tree's commit (the device's copy is no
# checkout). Packed into $OUT/p.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
SECONDS=0
o=$OUT/p; mkdir -p $o
pack() { tar czf $OUT/p.tgz -C $OUT p; }
step() { echo "rc=$1 $2 $SECONDS s" >> $o/steps.txt; pack; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
INORM_BUILD_DIR=build-gpu timeout 400 scripts/build-python.sh > $o/build.log 2>&1
step $? build
export PYTHONPATH=$PWD/build-gpu/python
for suite in ${SUITES:-layouts public fused}; do
  train=$suite; [ $suite = public ] && train=train
  mkdir -p $o/$suite
  timeout 200 python3 -m inorm.bench --suite bench/suites/$suite.json --out $o/$suite > $o/$suite/bench.log 2>&1
  step $? "$suite forward"
  timeout 300 python3 -m inorm.bench --train --suite bench/suites/$train.json --out $o/$suite > $o/$suite/train.log 2>&1
  step $? "$train train"
done
cat $o/steps.txt
