#!/usr/bin/env bash
# Session 64, call 7: inorm-bench of the kept build (.carry/s64f) on every suite, forward and
# backward; the seeds' parts and cl.json against the tiles' reduction, two rounds; ncu's warp states
# on cl-bf16's streamed reduction; then the package built from the same
# tree and python -m inorm.bench on layouts.json forward against eager PyTorch and torch.compile.
cd "$(dirname "$0")/../../../.."
set -u
W=$OUT/f; mkdir -p $W
gunzip -c .carry/s64f/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
export INORM_COMMIT=$(cat .carry/s64f/commit)
SECONDS=0
for s in layouts public fused train; do
  /tmp/ib --suite bench/suites/$s.json --markdown $W/$s.md --json $W/$s.json > $W/$s.log 2>&1
  /tmp/ib --backward --suite bench/suites/$s.json --markdown $W/$s-backward.md --json $W/$s-backward.json > $W/$s-backward.log 2>&1
  echo "rc=$? $s $SECONDS s" >> $W/steps.txt
done
for round in 1 2; do
  /tmp/ib --suite bench/results/2026-12-04-h200-cl-ring/seeds.json --variants cl-stream0,cl-stream16,cl-stream33 \
    --markdown $W/seeds-parts-r$round.md --json $W/seeds-parts-r$round.json > $W/seeds-parts-r$round.log 2>&1
  /tmp/ib --suite bench/results/2026-12-04-h200-cl-ring/cl.json --variants cl-stream0 \
    --markdown $W/cl-ab-r$round.md --json $W/cl-ab-r$round.json > $W/cl-ab-r$round.log 2>&1
done
echo "rc=$? parts $SECONDS s" >> $W/steps.txt
timeout 120 ncu --clock-control none -k regex:channels_last_stream --launch-skip 2 --launch-count 1 \
  --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  /tmp/ib --suite bench/results/2026-12-04-h200-cl-ring/cl-bf16.json --repeats 20 --warmup 1 > $W/ncu-stream-stalls.txt 2>&1
echo "rc=$? ncu $SECONDS s" >> $W/steps.txt
(cd $OUT && tar czf f.tgz f)
INORM_BUILD_DIR=build timeout 240 scripts/build-python.sh > $W/build.txt 2>&1
echo "rc=$? package build $SECONDS s" >> $W/steps.txt
export PYTHONPATH=$PWD/build/python
mkdir -p $W/layouts-package
timeout 150 python3 -m inorm.bench --suite bench/suites/layouts.json --out $W/layouts-package > $W/layouts-package/bench.log 2>&1
echo "rc=$? layouts package $SECONDS s" >> $W/steps.txt
cat $W/steps.txt
cd $OUT && tar czf f.tgz f && rm -rf f
