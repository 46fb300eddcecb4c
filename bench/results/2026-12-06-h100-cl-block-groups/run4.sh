#!/usr/bin/env bash
# Session 81, fourth call: 57fad4c's inorm-bench, built here and carried: the sweep's A/B (the planner
# against the plans before it forced), two rounds, and fused.json both passes.
set -u
o=$OUT/r4; mkdir -p $o
pack() { tar czf $OUT/r4.tgz -C $OUT r4; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
xz -dc .carry/s81/inorm-bench.xz > /tmp/inorm-bench && chmod +x /tmp/inorm-bench
echo "unpacked $SECONDS s" >> $o/steps.txt
s=bench/results/2026-12-06-h100-cl-block-groups/sweep.json
for r in 1 2; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 /tmp/inorm-bench $flag --suite $s --variants cl-blocks0g1,cl-kernels \
      --json $o/$pass-$r.json --markdown $o/$pass-$r.md > $o/$pass-$r.log 2>&1
    echo "rc=$? $pass $r $SECONDS s" >> $o/steps.txt
  done
done
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 90 /tmp/inorm-bench $flag --suite bench/suites/fused.json --json $o/fused-$pass.json \
    --markdown $o/fused-$pass.md > $o/fused-$pass.log 2>&1
  echo "rc=$? fused $pass $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt $o/gpu.txt
