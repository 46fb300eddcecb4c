#!/usr/bin/env bash
# A short device run for what little device time is left: (1) dev/cluster-sync's A/B in one process
# (.carry/cs/inorm-bench-experiment.xz, 08767ac + experiment.patch: the planner's plan with
# land.patch's barriers against `sync-full`, main's, and `sync-relaxed`) on small.json both passes
# and ten calls back to back, public.json, train.json; (2) the channel-block cases against the
# stream, both passes (the same bench: its channels_last code is main's). About 2 min. Packed into
# $OUT/w.tgz after every step.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
xz -dc .carry/cs/inorm-bench-experiment.xz > /tmp/exp-bench && chmod +x /tmp/exp-bench
R=bench/results/2026-12-05-h200-small-source
ab() {  # ab NAME ARGS...
  local name=$1; shift
  timeout 60 /tmp/exp-bench "$@" --variants sync-full,sync-relaxed --markdown $W/$name.md --json $W/$name.json \
    > $W/$name.log 2>&1
  echo "rc=$? $name $SECONDS s" >> $W/run.log
  pack
}
ab small-fwd --suite $R/small.json
ab small-bwd --suite $R/small.json --backward
ab small-fwd-calls10 --suite $R/small.json --calls 10
ab public --suite bench/suites/public.json
ab train --suite bench/suites/train.json --backward
# The channel blocks against the stream (the plans of main's rule, d9f6a2f: `cl-kernels` there).
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  timeout 60 /tmp/exp-bench --suite bench/results/2026-12-05-h100-cl-blocks/blocks.json $flag --variants cl-kernels \
    --markdown $W/blocks-$pass.md --json $W/blocks-$pass.json > $W/blocks-$pass.log 2>&1
  echo "rc=$? blocks-$pass $SECONDS s" >> $W/run.log
  pack
done
cat $W/run.log
