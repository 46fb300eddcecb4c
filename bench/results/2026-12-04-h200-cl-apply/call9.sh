#!/usr/bin/env bash
# Session 65, call 9: the head's channels_last GPU tests and compute-sanitizer's four tools on
# GpuSanitize.ForwardPlans (the one kernel's reach among them), after the ring position's refactor.
cd "$(dirname "$0")/../../.."
W=$OUT/i; mkdir -p $W
gunzip -c .carry/s65h/inorm_gpu_tests.gz > /tmp/t && chmod +x /tmp/t
echo "commit $(cat .carry/s65h/commit)" > $W/run.log
nvidia-smi --query-gpu=name,driver_version --format=csv >> $W/run.log
/tmp/t --gtest_brief=1 --gtest_filter='GpuChannelsLast.*' >> $W/run.log 2>&1
echo "GpuChannelsLast.*: rc=$?" >> $W/run.log
for tool in memcheck racecheck synccheck initcheck; do
  compute-sanitizer --tool $tool --error-exitcode 1 /tmp/t --gtest_brief=1 --gtest_filter='GpuSanitize.ForwardPlans' >> $W/run.log 2>&1
  echo "sanitize-$tool: rc=$?" >> $W/run.log
done
grep -E "rc=|PASSED|FAILED|SUMMARY" $W/run.log
