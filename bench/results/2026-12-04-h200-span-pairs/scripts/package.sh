#!/usr/bin/env bash
# Session 60: the package built on the device at HEAD (scripts/build-python.sh), then python -m
# inorm.bench (eager PyTorch, torch.compile and inorm's modules in one process): fused.json forward
# and training step, layouts.json forward and train.json's training step.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/p; mkdir -p $o
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
INORM_BUILD_DIR=build timeout 300 scripts/build-python.sh > $o/build.log 2>&1; echo "rc=$? build $SECONDS s" >> $o/steps.txt
export PYTHONPATH=$PWD/build/python INORM_COMMIT=$(cat .carry/s60p/commit)
run() { local name=$1; shift; timeout 110 python3 -m inorm.bench "$@" --out $o > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
run fused --suite bench/suites/fused.json
run fused-train --suite bench/suites/fused.json --train
run layouts --suite bench/suites/layouts.json
run train --suite bench/suites/train.json --train
cat $o/steps.txt; grep -h "x, " $o/*.log | head -60
cd $OUT && tar czf p.tgz p && rm -rf p
