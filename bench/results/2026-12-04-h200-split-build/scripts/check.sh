#!/usr/bin/env bash
# Session 62, first call: 948d2fe's build (the kernels compiled one element type a file) on the GPU,
# scripts/gpu-check.sh's tests and sanitize parts on the GPU tests and the synccheck reproducer
# built without a GPU and carried (stripped, gzipped) in .carry/s62t; the CPU tests run in CI.
# Everything under $OUT/c, tarred (the device tool brings back at most 8 files).
cd "$(dirname "$0")/../../../.."
OUT=$OUT/c INORM_PREBUILT=.carry/s62t INORM_ONLY=tests,sanitize INORM_COMMIT=$(cat .carry/s62t/commit) \
  timeout 570 scripts/gpu-check.sh
cd "$OUT" && tar czf c.tgz c && rm -rf c
