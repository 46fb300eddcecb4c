#!/usr/bin/env bash
# Session 86, third call: 462d81d's inorm-bench (.carry/s86b, main's kernels since) on
# sd-unet-cl-parts.json, SD UNet channels_last's GroupNorm + SiLU with one thing changed a case (no
# activation, no affine, InstanceNorm, batch 4 and 16, float32, NCHW), both passes, twice; then, as
# time allows (CALL_LIMIT seconds in all, default 560), every suite and pass (scripts/gpu-check.sh's
# bench part). Lands in $OUT/c3.tgz.
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c3
bins=/tmp/s86c
mkdir -p "$o/parts" "$bins/new"
pack() { tar czf "$OUT/c3.tgz" -C "$OUT" c3; }
SECONDS=0
xz -dc .carry/s86b/all.tar.xz | tar xf - -C "$bins" new-bench && mv "$bins/new-bench" "$bins/new/inorm-bench" &&
  chmod +x "$bins/new/inorm-bench"
echo "rc=$? unpacked $SECONDS s" >> "$o/steps.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$o/gpu.txt" 2>&1
suite=bench/results/2026-12-06-fast-divisors/sd-unet-cl-parts.json
for round in 1 2; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    run=$o/parts/$pass-$round
    timeout 90 "$bins/new/inorm-bench" $flag --suite $suite --json "$run.json" --markdown "$run.md" > "$run.log" 2>&1
    echo "rc=$? parts $pass $round $SECONDS s" >> "$o/steps.txt"
  done
done
pack
INORM_PREBUILT=$bins/new INORM_ONLY=bench OUT=$o/suites timeout $((${CALL_LIMIT:-560} - SECONDS)) scripts/gpu-check.sh
echo "rc=$? suites $SECONDS s" >> "$o/steps.txt"
pack
