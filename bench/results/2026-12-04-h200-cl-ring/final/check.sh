#!/usr/bin/env bash
# Session 64, call 6: the kept build (streamed reduction from 128 MiB, the backward's evict-first
# hints up to 64 MiB) on the GPU: scripts/gpu-check.sh's tests and sanitize parts on the GPU tests
# and the synccheck reproducer built without a GPU and carried in .carry/s64t. Everything under
# $OUT/c, tarred.
cd "$(dirname "$0")/../../../.."
OUT=$OUT/c INORM_PREBUILT=.carry/s64t INORM_ONLY=tests,sanitize INORM_COMMIT=$(cat .carry/s64t/commit) \
  timeout 570 scripts/gpu-check.sh
cd "$OUT" && tar czf c.tgz c && rm -rf c
