#!/usr/bin/env bash
# The README's tables on an H200 (sessions 91-94 got H100s), with this tree's inorm-bench (call-1's
# new-bench): the stagger sweep of 2026-12-07-cl-cluster (config.h's spread of 30,000 cycles,
# measured on an H100 only), then scripts/gpu-check.sh's bench and pybench parts (every suite both
# passes, the variant sweeps, the package built on the device and python -m inorm.bench forward and
# --train on every suite) while time is left. On another GPU, the package built and pytest on the
# merged tree instead (what ran in session 94; the H200 branch was then made gpu-check.sh's parts,
# not yet run). Packed into $OUT/h.tgz after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s94}
H=/tmp/s94-out/h; rm -rf $H; mkdir -p $H  # only the packed .tgz under $OUT: the tool brings back 8 files
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
sweep=stagger0,stagger300,stagger700,stagger1500,stagger2500,stagger3500
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 60 $new --suite bench/results/2026-12-07-cl-cluster/shapes.json $flag --variants $sweep \
    --markdown $H/stagger-$pass.md --json $H/stagger-$pass.json > $H/stagger-$pass.log 2>&1
  step $? "stagger $pass"
done
# Every suite both passes, the variant sweeps, the package built and its benchmark: gpu-check.sh's
# parts, packed by it into $OUT/check.tgz after every step.
INORM_PACK=$OUT/check.tgz OUT=/tmp/s94-out/check INORM_PREBUILT=/tmp/s94/new INORM_BUILD_DIR=build-gpu \
  INORM_ONLY=bench,pybench timeout $((585 - SECONDS)) scripts/gpu-check.sh > $H/check.log 2>&1
step $? "gpu-check.sh bench,pybench"
cat $H/run.log
