#!/usr/bin/env bash
# Session 64, call 10: every GPU test on the review's commit (store_output_pack in place of three
# copies of the evict-first store branch), built without a GPU and carried in .carry/s64r.
cd "$(dirname "$0")/../../../.."
OUT=$OUT/r INORM_PREBUILT=.carry/s64r INORM_ONLY=tests INORM_COMMIT=$(cat .carry/s64r/commit) \
  timeout 300 scripts/gpu-check.sh
cd "$OUT" && tar czf r.tgz r && rm -rf r
