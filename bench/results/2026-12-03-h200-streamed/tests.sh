#!/usr/bin/env bash
# split_pipelined's orders (the streamed form among them), forward and backward, then
# compute-sanitizer memcheck on the plans of every family (the streamed form's reach among them).
cd "$(dirname "$0")/../.."
set -u
o=$OUT/t; mkdir -p $o
t=.carry/s55t/inorm_gpu_tests
gunzip -f $t.gz; chmod +x $t
SECONDS=0
timeout 200 $t --gtest_filter='*SplitPipelinedOrder*' > $o/orders.log 2>&1; echo "rc=$? orders $SECONDS s" >> $o/summary.txt
timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 $t --gtest_filter='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans' --gtest_brief=1 > $o/memcheck.log 2>&1; echo "rc=$? memcheck $SECONDS s" >> $o/summary.txt
cat $o/summary.txt; grep -h "OK \]\|FAILED\|Failure\|streamed" $o/orders.log | head -20; tail -5 $o/memcheck.log
cd $OUT && tar czf t.tgz t && rm -rf t
