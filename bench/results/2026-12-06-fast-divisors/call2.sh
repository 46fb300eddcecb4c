#!/usr/bin/env bash
# Session 86, second call: call1.sh's A/B and tests again on 462d81d, where the NCHW kernels keep
# the hardware's division (call 1's ab721ba took the multiplier on every path and ran
# nnunet-in3d-lrelu's forward 3% slower). Old: main's inorm-bench built at 35da490 (c912c72's
# kernels); new: 462d81d's inorm-bench and GPU tests, all three in .carry/s86b/all.tar.xz.
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c2
bins=/tmp/s86b
mkdir -p "$o" "$bins/main" "$bins/new"
pack() { tar czf "$OUT/c2.tgz" -C "$OUT" c2; }
SECONDS=0
xz -dc .carry/s86b/all.tar.xz | tar xf - -C "$bins"
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
