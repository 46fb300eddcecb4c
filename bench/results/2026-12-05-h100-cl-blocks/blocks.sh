#!/usr/bin/env bash
# channels_last's channel blocks against the three kernels (or the stream where it applies), each
# A/B in one process, forward and backward, twice: where a block's row run is 16-32 bytes
# (blocks.json). inorm-bench from $BENCH, variants $VARIANTS (cl-kernels). Packed into $OUT/w.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
for run in 1 2; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 90 $BENCH --suite bench/results/2026-12-05-h100-cl-blocks/blocks.json $flag --variants ${VARIANTS:-cl-kernels} \
      --markdown $W/blocks-$pass-$run.md --json $W/blocks-$pass-$run.json > $W/blocks-$pass-$run.log 2>&1
    echo "rc=$? blocks $pass $run $SECONDS s" >> $W/run.log
  done
done
cat $W/run.log
