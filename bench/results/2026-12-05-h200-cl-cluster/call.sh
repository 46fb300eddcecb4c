#!/usr/bin/env bash
# The device run behind dev/VARIANTS.md 100 (README.md here): the probe's cluster a sample against
# the library on the same channels_last shapes, forward and backward, each twice, alone on the GPU.
# The probe is built here with nvcc (seconds); inorm-bench is $BENCH (default /tmp/new/inorm-bench,
# where dev/cluster-sync/call.sh leaves it: main's channels_last kernels), else built from this tree
# first (about 2-3 min on 16 cores; not beside the timed runs). Packed into $OUT/w.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
{ git rev-parse --short HEAD; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
nvcc -O3 -std=c++17 -arch=sm_90 dev/cl_cluster_probe.cu -o /tmp/cl-probe > $W/probe-build.log 2>&1
echo "rc=$? probe build $SECONDS s" >> $W/run.log
BENCH=${BENCH:-/tmp/new/inorm-bench}
if [ ! -x $BENCH ]; then
  BENCH=build/inorm-bench
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > $W/bench-build.log 2>&1 &&
    cmake --build build --target inorm-bench >> $W/bench-build.log 2>&1
  echo "rc=$? bench build $SECONDS s" >> $W/run.log
fi
timeout 150 /tmp/cl-probe > $W/probe-1.log 2>&1
echo "rc=$? probe pass 1 $SECONDS s" >> $W/run.log
for run in 1 2; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 $BENCH --suite bench/results/2026-12-05-h200-cl-cluster/shapes.json $flag --markdown $W/bench-$pass-$run.md \
      --json $W/bench-$pass-$run.json > $W/bench-$pass-$run.log 2>&1
    echo "rc=$? bench $pass $run $SECONDS s" >> $W/run.log
  done
done
timeout 150 /tmp/cl-probe > $W/probe-2.log 2>&1
echo "rc=$? probe pass 2 $SECONDS s" >> $W/run.log
cat $W/run.log
