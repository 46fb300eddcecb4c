#!/usr/bin/env bash
# Session 85, first call: channels_last's channel blocks staged in four chunks (branch
# cl-chunked-staging, c4924e0) against main (35da490, c912c72's kernels). The binaries were built
# without a GPU (sm_90) and carried in one xz stream (.carry/s85/all.tar.xz: main's and the branch's
# inorm-bench, the branch's GPU tests; a dictionary past a binary's size packs the near-copies once).
# 1. A/B: session 81's sweep.json and fused.json both passes, layouts.json's forward, old then new,
#    two rounds (scripts/ab-bench.sh).
# 2. SD UNet channels_last's forward and backward at one and two CTA slots an SM (cl-resident1:
#    480 threads; 104 lost it at 128 registers, the branch's forward runs 96), both builds, twice.
# 3. The branch's GPU tests in eight shards; compute-sanitizer's four tools on the sanitizer plans
#    of both passes and GroupNorm (the chunks' barriers: racecheck above all).
# 4. As time allows, main's inorm-bench alone on every suite and pass (gpu-check.sh's bench part).
# Everything lands in $OUT/c1.tgz, packed after each part.
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c1
bins=/tmp/s85
mkdir -p "$o/slots" "$bins/main" "$bins/branch"
pack() { tar czf "$OUT/c1.tgz" -C "$OUT" c1; }
SECONDS=0
xz -dc .carry/s85/all.tar.xz | tar xf - -C "$bins"
mv "$bins/main-bench" "$bins/main/inorm-bench" && mv "$bins/branch-bench" "$bins/branch/inorm-bench" &&
  mv "$bins/inorm_gpu_tests" "$bins/branch/" && chmod +x "$bins"/*/*
echo "rc=$? unpacked $SECONDS s" >> "$o/steps.txt"

AB_OLD_BENCH=$bins/main/inorm-bench AB_NEW_BENCH=$bins/branch/inorm-bench AB_ROUNDS=2 OUT="$o/ab" \
  scripts/ab-bench.sh bench/results/2026-12-06-h100-cl-block-groups/sweep.json:both \
  bench/suites/fused.json:both bench/suites/layouts.json:forward
echo "rc=$? ab $SECONDS s" >> "$o/steps.txt"
pack

python3 - <<'PY'
import json
d = json.load(open('bench/suites/fused.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == 'sd-unet-cl-gn-silu']), open('/tmp/sd-unet-cl.json', 'w'))
PY
for round in 1 2; do
  for build in main branch; do
    for pass in forward backward; do
      flag=; [ $pass = backward ] && flag=--backward
      run=$o/slots/$pass-$build-$round
      timeout 60 "$bins/$build/inorm-bench" $flag --suite /tmp/sd-unet-cl.json --variants cl-resident1,cl-resident2 \
        --json "$run.json" --markdown "$run.md" > "$run.log" 2>&1
      echo "rc=$? $pass $build $round" >> "$o/slots/steps.txt"
    done
  done
done
echo "slots $SECONDS s" >> "$o/steps.txt"
pack

OUT=$o/tests INORM_PREBUILT=$bins/branch INORM_ONLY=tests,sanitize \
  INORM_SANITIZE_FILTER='GpuSanitize.ForwardPlans:GpuSanitize.BackwardPlans:GpuSanitize.GroupNormPlans' \
  timeout $((560 - SECONDS)) scripts/gpu-check.sh
echo "rc=$? tests $SECONDS s" >> "$o/steps.txt"
pack

if [ $SECONDS -lt 480 ]; then
  INORM_PREBUILT=$bins/main INORM_ONLY=bench OUT=$o/main-suites timeout $((575 - SECONDS)) scripts/gpu-check.sh
  echo "rc=$? main suites $SECONDS s" >> "$o/steps.txt"
fi
pack
