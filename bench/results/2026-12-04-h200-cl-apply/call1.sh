#!/usr/bin/env bash
# Session 65, call 1: channels_last's streamed kernel applying too (cl-apply1) against the
# elementwise pass in its own kernel (cl-apply0), apply.json, two rounds; ncu on cl-bf16's applying kernel.
cd "$(dirname "$0")/../../.."
W=/tmp/w/a; mkdir -p $W
gunzip -c .carry/s65a/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
R=bench/results/2026-12-04-h200-cl-apply
SECONDS=0
for round in 1 2; do
  /tmp/ib --suite $R/apply.json --variants cl-apply0,cl-apply1 --markdown $W/apply-r$round.md --json $W/apply-r$round.json > $W/apply-r$round.log 2>&1
  echo "rc=$? round $round $SECONDS s" >> $W/steps.txt
done
echo '{"cases":[{"id": "cl-bf16", "shape": [64, 64, 128, 128], "dtype": "bfloat16", "layout": "nhwc", "affine": true}]}' > /tmp/one.json
timeout 100 ncu --clock-control none -k regex:channels_last_stream --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
  /tmp/ib --suite /tmp/one.json --variants cl-apply1 --repeats 20 --warmup 1 > $W/ncu-apply.txt 2>&1
echo "rc=$? ncu $SECONDS s" >> $W/steps.txt
cat $W/steps.txt
cd /tmp/w && tar czf $OUT/a.tgz a
