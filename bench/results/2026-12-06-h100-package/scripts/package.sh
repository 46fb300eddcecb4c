#!/usr/bin/env bash
# Session 80, first call: the package built on the device from main's tree (scripts/build-python.sh,
# into build/, which stays on a warm machine for the next call), then python -m inorm.bench (eager
# PyTorch, torch.compile and inorm's modules in one process) forward and --train on public.json,
# layouts.json and fused.json. Everything lands in $OUT/p.tgz (the device brings back few files).
cd "$(dirname "$0")/../../../.."
set -u
o=$OUT/p; mkdir -p $o
pack() { tar czf $OUT/p.tgz -C $OUT p; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' >> $o/gpu.txt 2>&1
INORM_BUILD_DIR=build timeout 400 scripts/build-python.sh > $o/build.txt 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
cp build/python-build.log $o/ 2>/dev/null
export PYTHONPATH=$PWD/build/python INORM_COMMIT=${INORM_COMMIT:-unknown}
for item in public:public train:train:--train fused:fused fused-train:fused:--train layouts:layouts \
            layouts-train:layouts:--train; do
  IFS=: read -r name suite flag <<< "$item"
  mkdir -p $o/$name
  timeout 100 python3 -m inorm.bench --suite bench/suites/$suite.json ${flag:-} --out $o/$name > $o/$name/bench.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $o/steps.txt
  pack
done
cat $o/steps.txt
