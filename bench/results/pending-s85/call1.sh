#!/usr/bin/env bash
# Session 85, first call: channels_last's channel blocks staged in four chunks (branch
# cl-chunked-staging, c4924e0) against main (c912c72's kernels), both inorm-bench binaries built
# without a GPU (sm_90, fatbins uncompressed, xz) and carried in .carry/s85: session 81's sweep.json
# and fused.json both passes, layouts.json's forward, old then new, two rounds. Then main's
# inorm-bench alone on every suite and pass (scripts/gpu-check.sh's bench part: the README's
# inorm-bench columns). Between them, SD UNet channels_last's forward and backward at one and two
# CTA slots an SM (cl-resident1: 480 threads; 104 lost it at 128 registers, the branch's forward
# runs 96), both builds, two rounds. Everything lands in $OUT/c1.tgz.
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c1
mkdir -p "$o" /tmp/main-bin
AB_OLD_BENCH=.carry/s85/main-bench.xz AB_NEW_BENCH=.carry/s85/branch-bench.xz AB_ROUNDS=2 \
  AB_PACK="$OUT/c1.tgz" OUT="$o/ab" \
  scripts/ab-bench.sh bench/results/2026-12-06-h100-cl-block-groups/sweep.json:both \
  bench/suites/fused.json:both bench/suites/layouts.json:forward
python3 - <<'PY'
import json
d = json.load(open('bench/suites/fused.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'] == 'sd-unet-cl-gn-silu']), open('/tmp/sd-unet-cl.json', 'w'))
PY
mkdir -p "$o/slots"
for round in 1 2; do
  for build in old new; do
    for pass in forward backward; do
      flag=; [ $pass = backward ] && flag=--backward
      run=$o/slots/$pass-$build-$round
      binary=/tmp/ab-new/inorm-bench; [ $build = old ] && binary=/tmp/ab-old/build/inorm-bench
      timeout 60 $binary $flag --suite /tmp/sd-unet-cl.json --variants cl-resident1,cl-resident2 \
        --json "$run.json" --markdown "$run.md" > "$run.log" 2>&1
      echo "rc=$? $pass $build $round" >> "$o/slots/steps.txt"
    done
  done
done
xz -dc .carry/s85/main-bench.xz > /tmp/main-bin/inorm-bench
INORM_PREBUILT=/tmp/main-bin INORM_ONLY=bench OUT=$o/main-suites scripts/gpu-check.sh
tar czf "$OUT/c1.tgz" -C "$OUT" c1
