#!/usr/bin/env bash
# Session 80, third device run: the landed rule's build (inorm_gpu_tests and inorm-bench, carried in
# .carry/s80c, stripped, one xz archive with 7ef805e's inorm-bench as main-bench): every GPU test in
# eight shards, GpuSanitize.GroupNormPlans under memcheck and racecheck, then main-bench against the
# landed inorm-bench on ../2026-12-06-h200-busy-channels/small.json, two alternating rounds.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/c; mkdir -p $o/ab
pack() { tar czf $OUT/c.tgz -C $OUT c; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
mkdir -p /tmp/v && tar xJf .carry/s80c/pk.tar.xz -C /tmp/v && chmod +x /tmp/v/*
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $o/steps.txt
pids=()
for i in $(seq 0 7); do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 200 /tmp/v/inorm_gpu_tests --gtest_brief=1 > $o/tests-$i.log 2>&1 &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait $p || rc=1; done
echo "rc=$rc gpu tests $SECONDS s" >> $o/steps.txt
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/v/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter=GpuSanitize.GroupNormPlans > $o/$tool.log 2>&1
  echo "rc=$? $tool $SECONDS s" >> $o/steps.txt
done
pack
for r in 1 2; do
  for b in main-bench inorm-bench; do
    timeout 60 /tmp/v/$b --backward --suite bench/results/2026-12-06-h200-busy-channels/small.json \
      --markdown $o/ab/$b-$r.md --json $o/ab/$b-$r.json > /dev/null 2>&1
    echo "rc=$? $b $r $SECONDS s" >> $o/steps.txt
  done
done
cat $o/steps.txt; grep -h "PASSED\|FAILED" $o/tests-*.log | sort | uniq -c
