#!/usr/bin/env bash
# Session 59 experiment: the forward's general op with register parts (and so clusters of two),
# against 3fc0916 (base, from /tmp/s59 if this machine ran base.sh, else not run), alternating, two rounds.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/e; mkdir -p $o
d=.carry/s59e; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1 bin=$2; shift 2; timeout 150 $bin "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2; do
  for s in genreg fused; do
    step exp-$s-$r $b --suite $d/$s.json
    [ -x /tmp/s59/base-bench ] && step base-$s-$r /tmp/s59/base-bench --suite $d/$s.json
  done
done
step exp-variants $b --suite $d/genreg.json --variants pipelined
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-150
cd $OUT && tar czf e.tgz e && rm -rf e
