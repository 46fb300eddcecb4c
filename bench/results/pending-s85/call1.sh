#!/usr/bin/env bash
# Session 85, first call: channels_last's channel blocks staged in four chunks (branch
# cl-chunked-staging, c4924e0) against main (c912c72's kernels), both inorm-bench binaries built
# without a GPU (sm_90, fatbins uncompressed, xz) and carried in .carry/s85: session 81's sweep.json
# and fused.json both passes, layouts.json's forward, old then new, two rounds. Then main's
# inorm-bench alone on every suite and pass (scripts/gpu-check.sh's bench part: the README's
# inorm-bench columns). Everything lands in $OUT/c1.tgz.
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c1
mkdir -p "$o" /tmp/main-bin
AB_OLD_BENCH=.carry/s85/main-bench.xz AB_NEW_BENCH=.carry/s85/branch-bench.xz AB_ROUNDS=2 \
  AB_PACK="$OUT/c1.tgz" OUT="$o/ab" \
  scripts/ab-bench.sh bench/results/2026-12-06-h100-cl-block-groups/sweep.json:both \
  bench/suites/fused.json:both bench/suites/layouts.json:forward
xz -dc .carry/s85/main-bench.xz > /tmp/main-bin/inorm-bench
INORM_PREBUILT=/tmp/main-bin INORM_ONLY=bench OUT=$o/main-suites scripts/gpu-check.sh
tar czf "$OUT/c1.tgz" -C "$OUT" c1
