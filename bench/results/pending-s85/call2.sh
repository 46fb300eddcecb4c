#!/usr/bin/env bash
# Session 85, second call: the package built from main's tree on the device, then python -m
# inorm.bench forward and --train on public.json (train.json), layouts.json and fused.json, and
# --overhead (scripts/gpu-check.sh's pybench part): the README's package columns.
cd "$(dirname "$0")/../../.." || exit 2
o=$OUT/c2
mkdir -p "$o"
(sleep 570; tar czf "$OUT/c2.tgz" -C "$OUT" c2) &  # what ran, should the call's limit come first
packer=$!
OUT=$o INORM_BUILD_DIR=build INORM_ONLY=pybench timeout 560 scripts/gpu-check.sh
cp build/python-build.log "$o/" 2>/dev/null
tar czf "$OUT/c2.tgz" -C "$OUT" c2
kill $packer 2>/dev/null
