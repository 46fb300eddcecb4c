#!/usr/bin/env bash
# Session 94's device run, the most wanted first:
#  1. GpuChannelsLast.StreamedReduction at session 93's failed seed (2186139186), on this tree
#     (forward_op.cuh from_split: the mean's high part the whole mean's) and on the same tests built
#     with the old from_split: its new case (a first part of one row of 0 amid 8196, 3,357,000
#     rows) should fail the old code (y about 1e-4 off) and pass this tree, as call-1's case should;
#  2. this tree's GPU tests, sharded (scripts/gpu-check.sh tests);
#  3. on an H200 only (the README's tables; sessions 91-93 ran on H100s): inorm-bench on every suite,
#     both passes where the README shows them, and the stagger sweep of 2026-12-07-cl-cluster (the
#     package's runs are call-2's).
# Binaries built without a GPU, carried in one xz stream ($CARRY/all.tar.xz: new-bench and
# new-gpu-tests of this tree, old-gpu-tests); INORM_COMMIT names this tree. Packed into $OUT/f.tgz
# after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s94}
F=$OUT/f; mkdir -p $F/suites
pack() { tar czf $OUT/f.tgz -C $OUT f; }
step() { echo "rc=$1 $2 $SECONDS s" >> $F/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $F/run.log
SECONDS=0
bins=/tmp/s94
mkdir -p $bins/new && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bins && chmod +x $bins/*-* &&
  mv $bins/new-bench $bins/new/inorm-bench && mv $bins/new-gpu-tests $bins/new/inorm_gpu_tests
step $? unpack
for build in new old; do
  tests=$bins/new/inorm_gpu_tests; [ $build = old ] && tests=$bins/old-gpu-tests
  INORM_CASE_SEED=2186139186 timeout 120 $tests --gtest_filter='GpuChannelsLast.StreamedReduction' \
    > $F/reduction-$build.log 2>&1
  step $? "StreamedReduction at seed 2186139186, $build from_split"
done
OUT=$F/tests INORM_PREBUILT=$bins/new INORM_ONLY=tests timeout 200 scripts/gpu-check.sh > $F/tests.log 2>&1
step $? tests
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  new=$bins/new/inorm-bench
  for run in "layouts layouts" "layouts layouts-backward --backward" "public public" \
    "train train-backward --backward" "fused fused" "fused fused-backward --backward"; do
    set -- $run
    timeout 100 $new --suite bench/suites/$1.json ${3:-} --markdown $F/suites/$2.md --json $F/suites/$2.json \
      > $F/suites/$2.log 2>&1
    step $? "inorm-bench $2"
  done
  sweep=stagger0,stagger300,stagger700,stagger1500,stagger2500,stagger3500
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 $new --suite bench/results/2026-12-07-cl-cluster/shapes.json $flag --variants $sweep \
      --markdown $F/stagger-$pass.md --json $F/stagger-$pass.json > $F/stagger-$pass.log 2>&1
    step $? "stagger $pass"
  done
fi
cat $F/run.log
