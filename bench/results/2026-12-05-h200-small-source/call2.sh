#!/usr/bin/env bash
# Session 70, call 5 (.carry/s70a, main). Call 4 found the small tensors' shared_resident kernel
# issue-bound on few warps (about 5 a scheduler, 0.44 instructions a cycle; 54% of instructions in
# code each warp runs once): more CTAs a slice give each thread fewer elements and each scheduler
# more warps. Both passes of small.json against forced CTAs a slice (and clusters a slice); then
# call 4's Python check again, corrected (the stub's __getattr__ answered `from inorm import bench`).
# Packed into $OUT/v.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/v; mkdir -p $W
pack() { tar czf $OUT/v.tgz -C $OUT v; }
trap pack EXIT
R=bench/results/2026-12-05-h200-small-source
tar xJf .carry/s70a/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s70a/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
for pass in forward backward; do
  flag=""; [ $pass = backward ] && flag=--backward
  timeout 90 /tmp/inorm-bench $flag --suite $R/small.json --variants g2,g4,g8,g10,g16,g20x2,g40x4,g8c4,g16c4 \
    --markdown $W/$pass.md --json $W/$pass.json > $W/$pass.log 2>&1
  echo "rc=$? $pass $SECONDS s" >> $W/run.log
done
OUT=$W bash $R/call1.sh python > /dev/null 2>&1
echo "python: $(tail -1 $W/q/python.log 2>/dev/null)" >> $W/run.log
cat $W/run.log
