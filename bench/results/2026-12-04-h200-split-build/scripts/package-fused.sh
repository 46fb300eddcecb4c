#!/usr/bin/env bash
# Session 62, third call: the package built again on a fresh machine from the tree at d0fa42e
# (the library of 948d2fe), then python -m inorm.bench on fused.json, forward and --train, and
# --overhead against the C++ suite's kernel times of the first calls (inorm-bench/suite.json), so
# that every table of the README comes from one build of the kernels.
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/f; mkdir -p $o
SECONDS=0
INORM_BUILD_DIR=build timeout 300 scripts/build-python.sh > $o/build.txt 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
export PYTHONPATH=$PWD/build/python INORM_COMMIT=d0fa42e
for item in fused:fused fused-train:fused:--train; do
  IFS=: read -r name suite flag <<< "$item"
  mkdir -p $o/$name
  timeout 120 python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} --out $o/$name > $o/$name/bench.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $o/steps.txt
done
mkdir -p $o/overhead
timeout 150 python3 -m inorm.bench --overhead --kernel-times bench/results/2026-12-04-h200-split-build/inorm-bench/suite.json \
  --out $o/overhead > $o/overhead/bench.log 2>&1
echo "rc=$? overhead $SECONDS s" >> $o/steps.txt
cat $o/steps.txt; grep -h "x, " $o/*/bench.log | head -30; cat $o/overhead/overhead.md 2>/dev/null | head -30
cd $OUT && tar czf f.tgz f && rm -rf f
