#!/usr/bin/env bash
# Session 80, second device run: (1) main's inorm-bench (7ef805e) against the branch
# two-rounds-min-slice's (planner only: slices under 4,096 values take GroupNorm's backward in one
# round) on the 16 swept shapes it changes and four controls, two alternating rounds, every row
# checked against the float64 oracle; binaries built without a GPU and carried in .carry/s80
# (main-bench, branch-bench). (2) The package built again with the benchmark's float64 check a
# batch range at a time, its test, and the forward and --train runs that ran out of the H100's
# memory in the first call (train.json, layouts.json; on an H200 every run of the first call).
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/s; mkdir -p $o/ab
pack() { tar czf $OUT/s.tgz -C $OUT s; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
mkdir -p /tmp/v && tar xJf .carry/s80/pk.tar.xz -C /tmp/v && chmod +x /tmp/v/*
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $o/steps.txt
for r in 1 2; do
  for b in main branch; do
    timeout 100 /tmp/v/$b-bench --backward --suite bench/results/2026-12-06-h200-busy-channels/small.json \
      --markdown $o/ab/$b-small-backward-$r.md --json $o/ab/$b-small-backward-$r.json > $o/ab/$b-$r.log 2>&1
    echo "rc=$? $b small-backward $r $SECONDS s" >> $o/steps.txt
  done
done
pack
INORM_BUILD_DIR=build timeout 400 scripts/build-python.sh > $o/build.txt 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
export PYTHONPATH=$PWD/build/python INORM_COMMIT=${INORM_COMMIT:-unknown}
timeout 120 python3 -m pytest tests/python/test_bench.py tests/python/test_group_norm.py -q -rs -p no:cacheprovider \
  > $o/pytest.log 2>&1
echo "rc=$? pytest $SECONDS s" >> $o/steps.txt
pack
# On an H200 (the README's tables) every run of the first call again, else the three that failed.
items="train:train:--train layouts:layouts layouts-train:layouts:--train"
grep -q H200 $o/gpu.txt && items="public:public $items fused:fused fused-train:fused:--train"
for item in $items; do
  IFS=: read -r name suite flag <<< "$item"
  left=$((585 - SECONDS))
  [ $left -gt 20 ] || { echo "skipped $name: no time left" >> $o/steps.txt; continue; }
  mkdir -p $o/$name
  timeout $((left < 110 ? left : 110)) python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} --out $o/$name > $o/$name/bench.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $o/steps.txt
  pack
done
cat $o/steps.txt; tail -2 $o/pytest.log
