#!/usr/bin/env bash
# Session 93's last device run (call-2 got no machine in nine tries): this tree's GPU tests alone,
# sharded (scripts/gpu-check.sh tests), for the forward's combined mean split around the whole
# mean (forward_op.cuh from_split), GpuChannelsLast.StreamedReduction's new case of it among them.
# Binaries as call-2's ($CARRY/all.tar.xz). Packed into $OUT/t.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s93y}
T=$OUT/t; mkdir -p $T
pack() { tar czf $OUT/t.tgz -C $OUT t; }
step() { echo "rc=$1 $2 $SECONDS s" >> $T/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $T/run.log
SECONDS=0
bins=/tmp/s93
mkdir -p $bins/new && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bins new-bench new-gpu-tests &&
  mv $bins/new-bench $bins/new/inorm-bench && mv $bins/new-gpu-tests $bins/new/inorm_gpu_tests &&
  chmod +x $bins/new/*
step $? unpack
OUT=$T/tests INORM_PREBUILT=$bins/new INORM_ONLY=tests timeout 170 scripts/gpu-check.sh > $T/tests.log 2>&1
step $? tests
cat $T/run.log
