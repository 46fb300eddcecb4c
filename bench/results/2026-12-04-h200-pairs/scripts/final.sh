#!/usr/bin/env bash
# Session 58, the committed build (plan_spanning_pairs): every suite forward and backward; the
# rule's plans against the plans they replaced (forced), each set once; the rule's plans with and
# without a weight and bias.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/f; mkdir -p $o
d=.carry/s58c; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1; shift; timeout 150 $b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for s in public layouts fused; do step $s --suite $d/$s.json; done
for s in train layouts fused; do step $s-bwd --backward --suite $d/$s.json; done
step fsplit --suite $d/fsplit.json --variants pipelined
step fbelow --suite $d/fbelow.json --variants g30c2x15
step bsplit --backward --suite $d/bsplit.json --variants pipelined
step bbelow --backward --suite $d/bbelow.json --variants g30c2x15
step bglobal --backward --suite $d/bglobal.json --variants g36c3-global,g40c3-global
step bgn --backward --suite $d/bgn.json --variants g16c2x8,g30c2x15
step aff --suite $d/aff.json
step aff2 --suite $d/aff.json
cat $o/steps.txt; grep -h "^| " $o/*.md | grep -v "^| id\|^|--" | awk -F'|' '{print $2,$3,$7,$10,$12,$13}' | cut -c1-130
cd $OUT && tar czf f.tgz f && rm -rf f
