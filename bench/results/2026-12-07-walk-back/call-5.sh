#!/usr/bin/env bash
# Every slice of the short lead walking back (up to 16 MiB of each input), with this tree's binaries
# (carried, built without a GPU): scripts/gpu-check.sh's tests part (the GPU tests in 8 shards),
# fused.json's rows on split_pipelined forced walking forward and back (both passes), then
# gpu-check.sh's bench part (every suite both passes, the variant sweeps) while the session's device
# time lasts. Each part packed into its own .tgz under $OUT.
cd "$(dirname "$0")/../../.." || exit 2
set -u
CARRY=${CARRY:-.carry/s95c}
W=/tmp/s95-out; H=$W/h; rm -rf $W; mkdir -p $H
pack() { tar czf $OUT/h.tgz -C $W h; }
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; pack; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
bin=/tmp/s95c/new
[ -x $bin/inorm-bench ] || { mkdir -p $bin && xz -T0 -dc $CARRY/all.tar.xz | tar xf - -C $bin &&
  chmod +x $bin/inorm-bench $bin/inorm_gpu_tests; }
step $? unpack
check() {  # check PART SECONDS: gpu-check.sh's part, packed into $OUT/PART.tgz
  INORM_PACK=$OUT/$1.tgz OUT=$W/$1 INORM_PREBUILT=$bin INORM_ONLY=$1 timeout $2 scripts/gpu-check.sh > $H/$1.log 2>&1
  step $? "gpu-check.sh $1"
}
check tests 200
for pass in backward forward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 60 $bin/inorm-bench --suite bench/suites/fused.json $flag --variants pipelined-back0,pipelined-back1 \
    --markdown $H/fused-walk-$pass.md --json $H/fused-walk-$pass.json > $H/fused-walk-$pass.log 2>&1
  step $? "fused walk $pass"
done
check bench 90
cat $H/run.log
