#!/usr/bin/env bash
# Session 63, fifth call: the package built from a097d58's tree, then python -m inorm.bench on the
# split cases (split.json), forward and --train, against eager PyTorch and torch.compile. Tarred
# after every step, so that a call cut short still brings back what ran.
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/p; mkdir -p $o
SECONDS=0
INORM_BUILD_DIR=build timeout 240 scripts/build-python.sh > $o/build.txt 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
export PYTHONPATH=$PWD/build/python INORM_COMMIT=a097d58
for item in split: split-train:--train; do
  IFS=: read -r name flag <<< "$item"
  mkdir -p $o/$name
  timeout 100 python3 -m inorm.bench --suite bench/results/2026-12-04-h200-split-policy/split.json ${flag:-} --out $o/$name > $o/$name/bench.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $o/steps.txt
  (cd $OUT && tar czf p.tgz p)
done
cat $o/steps.txt
cd $OUT && tar czf p.tgz p && rm -rf p
