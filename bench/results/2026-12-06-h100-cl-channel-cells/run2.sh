#!/usr/bin/env bash
# Session 82, second device call: where each slice's context is taken in the combine. `hoist` (the
# working tree: before the slice's combine_split, in combine_slices and the finish kernel) against
# `after` (.carry/s82/no-hoist.patch: after it, as before this session), both with the per-channel
# cells by a thread each; call 1 saw cl-odd-fp32 (InstanceNorm, groups of 16 CTAs, which the cells
# do not touch) 1-1.5% slower with both. Both built on the device; inorm-bench forward and
# --backward on sweep.json and cl.json, hoist then after, three rounds; GpuChannelsLast.* on
# `after`; compute-sanitizer's four tools on GpuSanitize ForwardPlans, BackwardPlans and
# GroupNormPlans with each build.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r2; mkdir -p $o
pack() { tar czf $OUT/r2.tgz -C $OUT r2; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
mkdir -p /tmp/after && tar --exclude=./build-gpu --exclude=./.carry --exclude=./bench/results -cf - . | tar -xf - -C /tmp/after
patch /tmp/after/src/kernels/channels_last.cuh < .carry/s82/no-hoist.patch > $o/patch.log 2>&1 || echo "patch failed" >> $o/steps.txt
( cmake -S /tmp/after -B /tmp/after/build -G Ninja -DCMAKE_BUILD_TYPE=Release &&
  timeout 400 cmake --build /tmp/after/build --parallel 16 --target inorm-bench inorm_gpu_tests ) > $o/build-after.log 2>&1 &
after=$!
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=${INORM_COMMIT:-unknown} &&
  timeout 400 cmake --build build-gpu --parallel 16 --target inorm-bench inorm_gpu_tests ) > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
wait $after; echo "rc=$? build after $SECONDS s" >> $o/steps.txt
R=bench/results/2026-12-06-h100-cl-channel-cells
for r in 1 2 3; do
  for s in bench/results/2026-12-06-h100-cl-block-groups/sweep.json $R/cl.json; do
    n=$(basename $s .json)
    for pass in forward backward; do
      flag=; [ $pass = backward ] && flag=--backward
      for b in hoist after; do
        bin=build-gpu/inorm-bench; [ $b = after ] && bin=/tmp/after/build/inorm-bench
        timeout 90 $bin $flag --suite $s --json $o/$n-$pass-$b-$r.json --markdown $o/$n-$pass-$b-$r.md > $o/$n-$pass-$b-$r.log 2>&1
        echo "rc=$? $n $pass $b $r $SECONDS s" >> $o/steps.txt
      done
    done
  done
done
pack
timeout 120 /tmp/after/build/inorm_gpu_tests --gtest_brief=1 --gtest_filter='GpuChannelsLast.*' > $o/tests-after.log 2>&1
echo "rc=$? GpuChannelsLast after $SECONDS s" >> $o/steps.txt
f='GpuSanitize.GroupNormPlans:GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans'
for tool in racecheck memcheck synccheck initcheck; do
  for b in hoist after; do
    bin=build-gpu/inorm_gpu_tests; [ $b = after ] && bin=/tmp/after/build/inorm_gpu_tests
    [ $SECONDS -gt 540 ] && { echo "skipped $tool $b at $SECONDS s" >> $o/steps.txt; continue; }
    timeout $((585 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 1 $bin \
      --gtest_brief=1 --gtest_filter=$f > $o/$tool-$b.log 2>&1
    echo "rc=$? $tool $b $SECONDS s" >> $o/steps.txt
  done
done
cat $o/steps.txt; cat $o/gpu.txt
