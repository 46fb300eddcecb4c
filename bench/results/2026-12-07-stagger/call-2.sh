#!/usr/bin/env bash
# Session 92's second device run, on the tree with the planner's stagger rule (config.h
# kChannelsLastClusterStaggerSpreadCycles: 30,000 cycles over the clusters), the most wanted first:
#  1. the stagger sweep again with the rule's plan (the rows without a variant) beside fixed
#     spacings, both passes, shapes.json of 2026-12-07-cl-cluster;
#  2. inorm-bench on layouts.json both passes, public.json, train.json --backward, fused.json both
#     passes (the README's inorm-bench columns);
#  3. the package built on the device (scripts/build-python.sh), then python -m inorm.bench forward
#     and --train on layouts.json, public.json (train.json) and fused.json, while time is left.
# inorm-bench built without a GPU and carried ($CARRY/new-bench.xz); INORM_COMMIT names this tree.
# Packed into $OUT/v.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
SHAPES=bench/results/2026-12-07-cl-cluster/shapes.json
CARRY=${CARRY:-.carry/s92b}
o=$OUT/v; mkdir -p $o/suites
pack() { tar czf $OUT/v.tgz -C $OUT v; }
step() { echo "rc=$1 $2 $SECONDS s" >> $o/steps.txt; pack; }
SECONDS=0
{ echo "tree ${INORM_COMMIT:-?}"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } \
  > $o/gpu.txt
bench=/tmp/s92b/inorm-bench
mkdir -p /tmp/s92b && xz -dc $CARRY/new-bench.xz > $bench && chmod +x $bench
step $? unpack
sweep=stagger0,stagger700,stagger1500,stagger2500,stagger3500
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 100 $bench --suite $SHAPES $flag --variants $sweep \
    --markdown $o/stagger-$pass.md --json $o/stagger-$pass.json > $o/stagger-$pass.log 2>&1
  step $? "stagger $pass"
done
for run in "layouts layouts" "layouts layouts-backward --backward" "public public" "train train-backward --backward" \
  "fused fused" "fused fused-backward --backward"; do
  set -- $run
  timeout 100 $bench --suite bench/suites/$1.json ${3:-} --markdown $o/suites/$2.md --json $o/suites/$2.json \
    > $o/suites/$2.log 2>&1
  step $? "inorm-bench $2"
done
INORM_BUILD_DIR=build-gpu timeout 300 scripts/build-python.sh > $o/build.log 2>&1
step $? build-python
export PYTHONPATH=$PWD/build-gpu/python
for item in layouts:layouts layouts-train:layouts:--train public:public train:train:--train fused:fused \
  fused-train:fused:--train; do
  IFS=: read -r name suite flag <<< "$item"
  left=$((585 - SECONDS))
  [ $left -gt 20 ] || { echo "skipped $name: no time left" >> $o/steps.txt; continue; }
  mkdir -p $o/$name
  timeout $((left < 120 ? left : 120)) python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} --out $o/$name \
    > $o/$name/bench.log 2>&1
  step $? "package $name"
done
cat $o/steps.txt
