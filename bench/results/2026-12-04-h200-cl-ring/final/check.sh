#!/usr/bin/env bash
# Session 64, calls 6 and 8: the kept build on the GPU, scripts/gpu-check.sh's tests and sanitize
# parts on the GPU tests and the synccheck reproducer built without a GPU and carried in
# .carry/s64t; everything under $OUT/c, tarred. Call 6 (c7f0b5a) ran every GPU test, without the
# filter: all passed but GpuSanitize.ActivatedPlans (the plain op's stream forced with an
# activation), and racecheck counted the stream's stage reads against its next bulk copy, each warp
# arriving once (call6/run.log). Call 8 (bf6ce7f fixes both) runs channels_last's GPU tests and the
# sanitizers' cases.
cd "$(dirname "$0")/../../../.."
GTEST_FILTER="GpuChannelsLast.*:GpuSanitize.*" OUT=$OUT/c INORM_PREBUILT=.carry/s64t INORM_ONLY=tests,sanitize INORM_COMMIT=$(cat .carry/s64t/commit) \
  timeout 570 scripts/gpu-check.sh
cd "$OUT" && tar czf c.tgz c && rm -rf c
