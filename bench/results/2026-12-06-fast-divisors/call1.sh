#!/usr/bin/env bash
# Session 86, first call: the channels_last kernels' setup divisions by host-made multipliers
# (src/fast_divisor.h; branch fast-divisors) against main (inorm-bench built at 35da490, c912c72's
# kernels, as main's 47c549a). Binaries built without a GPU (sm_90), carried in one xz stream
# (.carry/s86/all.tar.xz: main's and the branch's inorm-bench, the branch's GPU tests).
# 1. A/B, two rounds, old then new: session 81's channels_last sweep and fused.json both passes,
#    layouts.json and public.json forward, train.json backward (first_channel divides by the
#    multiplier on every path, so the NCHW suites are timed too).
# 2. The branch's GPU tests in eight shards; compute-sanitizer's four tools on the sanitizer plans
#    of both passes and GroupNorm.
# Everything lands in $OUT/c1.tgz, packed after each part.
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c1
bins=/tmp/s86
mkdir -p "$o" "$bins/main" "$bins/new"
pack() { tar czf "$OUT/c1.tgz" -C "$OUT" c1; }
SECONDS=0
xz -dc .carry/s86/all.tar.xz | tar xf - -C "$bins"
mv "$bins/main-bench" "$bins/main/inorm-bench" && mv "$bins/new-bench" "$bins/new/inorm-bench" &&
  mv "$bins/new-gpu-tests" "$bins/new/inorm_gpu_tests" && chmod +x "$bins"/*/*
echo "rc=$? unpacked $SECONDS s" >> "$o/steps.txt"

AB_OLD_BENCH=$bins/main/inorm-bench AB_OLD_COMMIT=35da490 AB_NEW_BENCH=$bins/new/inorm-bench AB_ROUNDS=2 \
  OUT="$o/ab" scripts/ab-bench.sh bench/results/2026-12-06-h100-cl-block-groups/sweep.json:both \
  bench/suites/fused.json:both bench/suites/layouts.json:forward bench/suites/public.json:forward \
  bench/suites/train.json:backward
echo "rc=$? ab $SECONDS s" >> "$o/steps.txt"
pack

OUT=$o/tests INORM_PREBUILT=$bins/new INORM_ONLY=tests,sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans:GpuSanitize.GroupNormPlans' \
  timeout $((570 - SECONDS)) scripts/gpu-check.sh
echo "rc=$? tests $SECONDS s" >> "$o/steps.txt"
pack
