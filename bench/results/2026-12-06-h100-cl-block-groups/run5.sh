#!/usr/bin/env bash
# Session 81, fifth call (as run, on one line): run4.sh's carried inorm-bench (57fad4c's tree) with groups of
# 8, 12 and 16 forced on sweep.json, both passes.
mkdir -p $OUT/r5 && xz -dc .carry/s81/inorm-bench.xz > /tmp/ib && chmod +x /tmp/ib && for p in "" --backward; do timeout 60 /tmp/ib $p --suite bench/results/2026-12-06-h100-cl-block-groups/sweep.json --variants cl-blocks0g8,cl-blocks0g12,cl-blocks0g16 --json $OUT/r5/sweep$p.json --markdown $OUT/r5/sweep$p.md > /dev/null 2>&1; echo rc=$?; done; nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/r5/gpu.txt
