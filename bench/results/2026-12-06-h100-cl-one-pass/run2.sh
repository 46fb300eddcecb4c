#!/usr/bin/env bash
# Session 83, second device call: where channels_last's resident kernel spends its cycles, at
# 1787ca7. ncu (clocks as they are) with source counters on small.json's two cases, forward and
# backward, one launch each past the warm-ups: the summary, and the per-instruction page (SASS,
# executed instructions and warp stall samples) as CSV; the reports themselves.
cd "$(dirname "$0")/../../.."
set -u
o=$OUT/r2; mkdir -p $o
pack() { tar czf $OUT/r2.tgz -C $OUT r2; }
trap pack EXIT
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
ncu --version > $o/ncu-version.txt 2>&1
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINORM_GIT_COMMIT=${INORM_COMMIT:-unknown} &&
  timeout 400 cmake --build build-gpu --parallel 16 --target inorm-bench ) > $o/build.log 2>&1
echo "rc=$? build $SECONDS s" >> $o/steps.txt
R=bench/results/2026-12-06-h100-cl-one-pass
python3 - "$R/small.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d['cases']:
    json.dump(dict(d, cases=[c]), open('/tmp/small-%s.json' % c['id'], 'w'))
PY
for pass in forward backward; do
  flag=; [ $pass = backward ] && flag=--backward
  for id in sd-unet-cl-gn-silu gn-1x1280x8; do
    timeout 90 ncu --clock-control none --launch-skip 6 --launch-count 1 --set full --import-source yes \
      -k 'regex:^channels_last_resident_kernel$' -o $o/$pass-$id \
      build-gpu/inorm-bench $flag --suite /tmp/small-$id.json --repeats 20 --warmup 2 > $o/ncu-$pass-$id.log 2>&1
    echo "rc=$? ncu $pass $id $SECONDS s" >> $o/steps.txt
    ncu -i $o/$pass-$id.ncu-rep > $o/$pass-$id.txt 2>&1
    ncu -i $o/$pass-$id.ncu-rep --page source --csv --print-source sass > $o/$pass-$id-sass.csv 2>&1
    echo "rc=$? source $pass $id $SECONDS s" >> $o/steps.txt
    pack
  done
done
cat $o/steps.txt; ls -la $o
