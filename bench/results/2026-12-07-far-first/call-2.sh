#!/usr/bin/env bash
# The README's tables on an H200 (sessions 91-94 got H100s): this tree's inorm-bench (call-1's
# new-bench) on every suite, both passes where the README shows them, and the stagger sweep of
# 2026-12-07-cl-cluster (config.h's spread of 30,000 cycles, measured on an H100 only); then the
# package built on the device (scripts/build-python.sh) and python -m inorm.bench forward and
# --train on layouts.json, public.json (train.json) and fused.json while time is left. On another
# GPU, the package built the same way and pytest on the merged tree instead. Packed into
# $OUT/h.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s94}
H=/tmp/s94-out/h; rm -rf $H; mkdir -p $H/suites  # only the packed .tgz under $OUT: the tool brings back 8 files
pack() { tar czf $OUT/h.tgz -C /tmp/s94-out h; }
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  INORM_BUILD_DIR=build-gpu timeout 240 scripts/build-python.sh > $H/build.log 2>&1
  step $? build-python
  PYTHONPATH=$PWD/build-gpu/python timeout $((585 - SECONDS)) python3 -m pytest tests/python -q -rs \
    -p no:cacheprovider > $H/pytest.log 2>&1
  step $? pytest
  cat $H/run.log
  exit 0
fi
new=/tmp/s94/new/inorm-bench
[ -x $new ] || { mkdir -p /tmp/s94/new && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C /tmp/s94 new-bench &&
  mv /tmp/s94/new-bench $new && chmod +x $new; }
step $? unpack
for run in "layouts layouts" "layouts layouts-backward --backward" "public public" \
  "train train-backward --backward" "fused fused" "fused fused-backward --backward"; do
  set -- $run
  timeout 100 $new --suite bench/suites/$1.json ${3:-} --markdown $H/suites/$2.md --json $H/suites/$2.json \
    > $H/suites/$2.log 2>&1
  step $? "inorm-bench $2"
done
sweep=stagger0,stagger300,stagger700,stagger1500,stagger2500,stagger3500
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 60 $new --suite bench/results/2026-12-07-cl-cluster/shapes.json $flag --variants $sweep \
    --markdown $H/stagger-$pass.md --json $H/stagger-$pass.json > $H/stagger-$pass.log 2>&1
  step $? "stagger $pass"
done
INORM_BUILD_DIR=build-gpu timeout 240 scripts/build-python.sh > $H/build.log 2>&1
step $? build-python
export PYTHONPATH=$PWD/build-gpu/python
for item in layouts:layouts public:public fused:fused layouts-train:layouts:--train train:train:--train \
  fused-train:fused:--train; do
  IFS=: read -r name suite flag <<< "$item"
  left=$((585 - SECONDS))
  [ $left -gt 20 ] || { echo "skipped $name: no time left" >> $H/run.log; continue; }
  mkdir -p $H/$name
  timeout $((left < 120 ? left : 120)) python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} \
    --out $H/$name > $H/$name/bench.log 2>&1
  step $? "package $name"
done
cat $H/run.log
