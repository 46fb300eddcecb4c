#!/usr/bin/env bash
# Session 99's second call, on the machine call 1 left warm: call 1's GPU tests ran past its 150 s
# (they take about 200 s: session 98's ran beside the package's build), so here they run alone,
# each test's time in the log. Into $OUT/t.log (kept as call-2/gpu-tests-cl.log).
mkdir -p /tmp/s99/bin && xz -dc .carry/s99b/all.tar.xz | tar xf - -C /tmp/s99/bin && cd /tmp/s99/bin &&
  timeout 240 stdbuf -oL ./inorm_gpu_tests --gtest_filter='GpuChannelsLast.*' > $OUT/t.log 2>&1
