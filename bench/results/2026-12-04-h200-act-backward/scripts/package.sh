#!/usr/bin/env bash
# Session 61: the package built on the device (scripts/build-python.sh, into the ignored build/,
# kept between two calls on one machine), then python -m inorm.bench (eager PyTorch, torch.compile
# and inorm's modules in one process) on the suites named: "$@" as name:suite[:--train], each
# into its own folder. INORM_COMMIT: the commit the tree is (the device's copy has no .git).
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/p; mkdir -p $o
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
INORM_BUILD_DIR=build timeout 480 scripts/build-python.sh > $o/build.log 2>&1; echo "rc=$? build $SECONDS s" >> $o/steps.txt
export PYTHONPATH=$PWD/build/python INORM_COMMIT=$(cat .carry/s61p/commit)
for item in "$@"; do
  IFS=: read -r name suite flag <<< "$item"
  mkdir -p $o/$name
  timeout 200 python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} --out $o/$name > $o/$name/bench.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt; grep -h "x, " $o/*/bench.log | head -60
cd $OUT && tar czf p.tgz p && rm -rf p
