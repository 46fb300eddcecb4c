#!/usr/bin/env bash
# Session 83, fourth device call (the last 293 s of device time): the vector path's staging by
# cp.async (branch cl-cp-async) against main (b69ca97: 1787ca7's kernels; .carry/s83/old.tar.gz),
# inorm-bench alone built in both trees at once; the forward of session 81's sweep.json and of
# fused.json, old then new, one round. A screen: no tests run on the branch here.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r4; mkdir -p $o
pack() { tar czf $OUT/r4.tgz -C $OUT r4; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
mkdir -p /tmp/old && tar xzf .carry/s83/old.tar.gz -C /tmp/old
( cmake -S /tmp/old -B /tmp/old/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=$(cat .carry/s83/old-commit) &&
  timeout 215 cmake --build /tmp/old/build --parallel 16 --target inorm-bench ) > $o/build-old.log 2>&1 &
old=$!
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=${INORM_COMMIT:-unknown} &&
  timeout 215 cmake --build build-gpu --parallel 16 --target inorm-bench ) > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
wait $old; echo "rc=$? build old $SECONDS s" >> $o/steps.txt
for s in bench/results/2026-12-06-h100-cl-block-groups/sweep.json bench/suites/fused.json; do
  n=$(basename $s .json)
  for b in old new; do
    bin=build-gpu/inorm-bench; [ $b = old ] && bin=/tmp/old/build/inorm-bench
    timeout 30 $bin --suite $s --json $o/$n-forward-$b.json --markdown $o/$n-forward-$b.md > $o/$n-forward-$b.log 2>&1
    echo "rc=$? $n forward $b $SECONDS s" >> $o/steps.txt
    pack
  done
done
cat $o/steps.txt
