#!/usr/bin/env bash
# Session 92's third device run: why python -m inorm.bench died of a segmentation fault on
# fused.json's sd-unet-cl-gn-silu (call-2). The package built (scripts/build-python.sh), then each
# part of that case alone (segv.py: inorm's forward and backward, eager, torch.compile, the float64
# reference, the benchmark's whole case), a host backtrace by cuda-gdb of the first part that dies,
# then pytest on the GroupNorm tests. Packed into $OUT/d.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
HERE=bench/results/2026-12-07-stagger
o=$OUT/d; mkdir -p $o
pack() { tar czf $OUT/d.tgz -C $OUT d; }
step() { echo "rc=$1 $2 $SECONDS s" >> $o/steps.txt; pack; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
INORM_BUILD_DIR=build-gpu timeout 300 scripts/build-python.sh > $o/build.log 2>&1
step $? build-python
export PYTHONPATH=$PWD/build-gpu/python
died=
for part in inorm inorm-backward eager compile float64 case; do
  timeout 90 python3 -X faulthandler $HERE/segv.py $part > $o/part-$part.log 2>&1
  rc=$?
  step $rc "part $part"
  [ $rc -ge 128 ] && [ -z "$died" ] && died=$part
done
if [ -n "$died" ]; then
  CUDA_LAUNCH_BLOCKING=1 timeout 90 python3 -X faulthandler $HERE/segv.py $died > $o/blocking-$died.log 2>&1
  step $? "blocking $died"
  timeout 150 cuda-gdb -batch -ex 'set pagination off' -ex run -ex bt -ex 'info sharedlibrary' \
    --args python3 $HERE/segv.py $died > $o/gdb-$died.log 2>&1
  step $? "cuda-gdb $died"
fi
left=$((585 - SECONDS))
[ $left -gt 30 ] && { timeout $left python3 -m pytest tests/python/test_group_norm.py -q -rs -p no:cacheprovider \
  > $o/pytest-group-norm.log 2>&1; step $? "pytest test_group_norm"; }
cat $o/steps.txt
