#!/usr/bin/env bash
# Session 82, fourth device call (call 3's machine, still warm): the landed form against f082703 in
# one process pair, one round: f082703 (.carry/s82/old.tar.gz) built here, the landed inorm-bench
# linked in call 3's build folder; inorm-bench forward and --backward on sweep.json and cl.json.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r4; mkdir -p $o
pack() { tar czf $OUT/r4.tgz -C $OUT r4; }
trap pack EXIT
SECONDS=0
[ -d build-gpu ] || { echo "not call 3's machine: no build-gpu" > $o/steps.txt; exit 1; }
mkdir -p /tmp/old && tar xzf .carry/s82/old.tar.gz -C /tmp/old
( cmake -S /tmp/old -B /tmp/old/build -G Ninja -DCMAKE_BUILD_TYPE=Release &&
  timeout 200 cmake --build /tmp/old/build --parallel 16 --target inorm-bench ) > $o/build-old.log 2>&1 &
old=$!
timeout 200 cmake --build build-gpu --parallel 4 --target inorm-bench > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
wait $old; echo "rc=$? build old $SECONDS s" >> $o/steps.txt
R=bench/results/2026-12-06-h100-cl-channel-cells
for s in bench/results/2026-12-06-h100-cl-block-groups/sweep.json $R/cl.json; do
  n=$(basename $s .json)
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    for b in old new; do
      bin=build-gpu/inorm-bench; [ $b = old ] && bin=/tmp/old/build/inorm-bench
      timeout 60 $bin $flag --suite $s --json $o/$n-$pass-$b.json --markdown $o/$n-$pass-$b.md > $o/$n-$pass-$b.log 2>&1
      echo "rc=$? $n $pass $b $SECONDS s" >> $o/steps.txt
    done
  done
done
cat $o/steps.txt
