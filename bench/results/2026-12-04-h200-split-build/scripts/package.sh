#!/usr/bin/env bash
# Session 62, second call: scripts/gpu-check.sh's bench part on inorm-bench built without a GPU
# and carried in .carry/s62b; then the package built on the device from 948d2fe's tree
# (scripts/build-python.sh, timed: 450 s at be77c07, before the kernels were compiled one element
# type a file), python -m inorm.bench (eager PyTorch, torch.compile and inorm's modules in one
# process) forward on public.json and layouts.json and --train on train.json, and pytest in the
# time left.
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/p; mkdir -p $o
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
OUT=$o/cpp INORM_PREBUILT=.carry/s62b INORM_ONLY=bench INORM_COMMIT=$(cat .carry/s62b/commit) \
  timeout 150 scripts/gpu-check.sh > $o/cpp.txt 2>&1
echo "rc=$? inorm-bench $SECONDS s" >> $o/steps.txt
INORM_BUILD_DIR=build timeout 400 scripts/build-python.sh > $o/build.txt 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
cp build/python-build.log $o/ 2>/dev/null
export PYTHONPATH=$PWD/build/python INORM_COMMIT=948d2fe
for item in public:public train:train:--train layouts:layouts; do
  IFS=: read -r name suite flag <<< "$item"
  mkdir -p $o/$name
  timeout 100 python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} --out $o/$name > $o/$name/bench.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $o/steps.txt
done
left=$((575 - SECONDS))
[ $left -gt 30 ] && timeout $left python3 -m pytest tests/python -q -rs -p no:cacheprovider > $o/pytest.log 2>&1
echo "rc=$? pytest $SECONDS s" >> $o/steps.txt
cat $o/steps.txt; tail -3 $o/pytest.log; grep -h "x, " $o/*/bench.log | head -40
cd $OUT && tar czf p.tgz p && rm -rf p
