#!/usr/bin/env bash
# Session 96's first call, with session 95's binaries (fabf6af, carried as .carry/s95c): on any GPU,
# split_pipelined's resident parts a slice for the general op (both passes) and SD VAE mid's
# GroupNorm + SiLU against its plain forms on other plans; then, on an H200 only, session 95's
# refresh (../2026-12-07-walk-back/call-3.sh) in the time left of CALL_S (default 570).
# Into $OUT/sweep.tgz (and call-3's h.tgz, bench.tgz, pybench.tgz).
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s95c}
here=bench/results/2026-12-07-general-resident
W=/tmp/s96-out; H=$W/sweep; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/sweep.tgz -C $W sweep; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s95c/new
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/inorm-bench $bin/inorm_gpu_tests; }
step $? unpack
sweep() {  # name, suite, flags, variants
  timeout 150 $bin/inorm-bench --suite $here/$2 $3 --variants $4 --markdown $H/$1.md --json $H/$1.json \
    > $H/$1.log 2>&1
  step $? "$1"
}
sweep split-forward split-shapes.json "" \
  pipelined-resident0,pipelined-resident16,pipelined-resident33,pipelined-resident64,pipelined-resident96,pipelined-resident128
sweep split-backward split-shapes.json --backward \
  pipelined-resident0,pipelined-resident33,pipelined-resident66,pipelined-resident128,pipelined-resident192,pipelined-resident256
sweep onchip-forward onchip-shapes.json "" g16c2x2,g16c2x4,g32c2x4,pipelined,pipelined-resident32
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 400 ]; then
  CALL_S=$((${CALL_S:-570} - SECONDS)) CARRY=$CARRY bash bench/results/2026-12-07-walk-back/call-3.sh \
    > $H/refresh.log 2>&1
  step $? refresh
fi
cat $H/run.log
