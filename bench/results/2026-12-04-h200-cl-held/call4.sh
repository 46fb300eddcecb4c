#!/usr/bin/env bash
# Session 67, call 4, not run (the device was not lent again; .carry/s67d: inorm-bench built at
# 0ca4dab or later, with --calls): alone on the GPU, inorm-bench on hints.json, the applying
# kernel's L2 hints forced on (cl-evict1) and off (cl-evict0), forward and backward, one call a
# sample and ten back to back. Packed into $OUT/d.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/d; mkdir -p $W
pack() { tar czf $OUT/d.tgz -C $OUT d; }
trap pack EXIT
R=bench/results/2026-12-04-h200-cl-held
tar xJf .carry/s67d/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s67d/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
for calls in 10 1; do
  for pass in forward backward; do
    flag=""; [ $pass = backward ] && flag=--backward
    timeout 60 /tmp/inorm-bench $flag --calls $calls --suite $R/hints.json --variants cl-evict0,cl-evict1 \
      --markdown $W/$pass-calls$calls.md --json $W/$pass-calls$calls.json > $W/$pass-calls$calls.log 2>&1
    echo "rc=$? $pass calls $calls $SECONDS s" >> $W/run.log
  done
done
echo "done $SECONDS s" >> $W/run.log
cat $W/run.log
