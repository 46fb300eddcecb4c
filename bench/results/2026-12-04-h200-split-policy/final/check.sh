#!/usr/bin/env bash
# Session 63, third call: the kept rule's build (short lead + evict-first hints, Plan::evict_first)
# on the GPU: scripts/gpu-check.sh's tests and sanitize parts on the GPU tests and the synccheck
# reproducer built without a GPU and carried in .carry/s63t. Everything under $OUT/c, tarred.
cd "$(dirname "$0")/../../../.."
OUT=$OUT/c INORM_PREBUILT=.carry/s63t INORM_ONLY=tests,sanitize INORM_COMMIT=$(cat .carry/s63t/commit) \
  timeout 570 scripts/gpu-check.sh
cd "$OUT" && tar czf c.tgz c && rm -rf c
