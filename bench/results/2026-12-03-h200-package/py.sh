#!/usr/bin/env bash
# The package built into build/python at HEAD, then python -m inorm.bench on layouts.json (eager
# PyTorch, torch.compile and inorm's module in one process).
cd "$(dirname "$0")/../.."
set -u
SECONDS=0
o=$OUT/p; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
INORM_BUILD_DIR=build timeout 420 scripts/build-python.sh > $o/build.log 2>&1; echo "rc=$? build $SECONDS s" >> $o/steps.txt
export PYTHONPATH=$PWD/build/python
INORM_COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo ec1f291) timeout 200 python3 -m inorm.bench --suite bench/suites/layouts.json --out $o > $o/bench.log 2>&1
echo "rc=$? bench $SECONDS s" >> $o/steps.txt
cat $o/steps.txt; tail -30 $o/bench.log
cd $OUT && tar czf p.tgz p && rm -rf p
