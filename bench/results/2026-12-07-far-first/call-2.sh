#!/usr/bin/env bash
# The package's runs that call-1 left (an H200 only): the package built on the device
# (scripts/build-python.sh, incremental where call-1's build is still there), then python -m
# inorm.bench on each named run of layouts, layouts-train, public, train, fused and fused-train
# (name:suite[:--train]) while time is left. Packed into $OUT/p.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
P=$OUT/p; mkdir -p $P
pack() { tar czf $OUT/p.tgz -C $OUT p; }
step() { echo "rc=$1 $2 $SECONDS s" >> $P/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $P/run.log
SECONDS=0
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200" >> $P/run.log; pack; exit 3; }
INORM_BUILD_DIR=build-gpu timeout 240 scripts/build-python.sh > $P/build.log 2>&1
step $? build-python
export PYTHONPATH=$PWD/build-gpu/python
for item in "$@"; do
  IFS=: read -r name suite flag <<< "$item"
  left=$((585 - SECONDS))
  [ $left -gt 20 ] || { echo "skipped $name: no time left" >> $P/run.log; continue; }
  mkdir -p $P/$name
  timeout $((left < 150 ? left : 150)) python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} \
    --out $P/$name > $P/$name/bench.log 2>&1
  step $? "package $name"
done
cat $P/run.log
