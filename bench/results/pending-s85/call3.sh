#!/usr/bin/env bash
# Session 85, third call (where the branch won call 1): the branch's GPU tests, built without a GPU
# and carried (.carry/s85/branch-gpu-tests.xz), in eight shards, and compute-sanitizer's four tools
# on the sanitizer plans of both passes and GroupNorm (the chunks' barriers: racecheck above all).
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c3
mkdir -p "$o" /tmp/branch-bin
xz -dc .carry/s85/branch-gpu-tests.xz > /tmp/branch-bin/inorm_gpu_tests
OUT=$o INORM_PREBUILT=/tmp/branch-bin INORM_ONLY=tests,sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans:GpuSanitize.GroupNormPlans' \
  scripts/gpu-check.sh
tar czf "$OUT/c3.tgz" -C "$OUT" c3
