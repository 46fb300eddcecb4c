#!/usr/bin/env bash
# Session 77, call 2: main (26df881; its kernels' SASS is d47db03's, whose inorm-bench is base-bench)
# against the branches a (chunk-affine-backward, 661cb05: GroupNorm's backward by chunk on
# split_pipelined) and b (chunk-affine-shared: also on shared_resident), backward only, two
# alternating rounds. a changes no kernel but the new ones (every other function's SASS the same)
# and no plan of public, train or layouts (--plans, both passes), fused's only in its SD VAE rows:
# fused, the affine pairs, chunk.json with split's resident parts forced to 33 and 64, and
# unet.json with shared_resident's chunks of one channel forced (g10, g20 at 3-6 CTAs an SM); then
# ncu on SD VAE mid's backward in a (106's element form: 111.6 us, 62.6 M instructions); and the
# forward of unet.json with the same forced chunks (base's, as every forward kernel is the same).
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v && tar xJf .carry/s77/pk.tar.xz -C /tmp/v
echo "unpacked $SECONDS s" >> $W/run.log
for r in 1 2; do
  for b in base a b; do
    for suite in fused affine chunk unet; do
      f=bench/suites/$suite.json; variants=
      [ $suite = affine ] && f=.carry/exp/affine.json
      [ $suite = chunk ] && f=.carry/exp/chunk.json && variants="--variants pipelined-resident33,pipelined-resident64"
      [ $suite = unet ] && f=.carry/exp/unet.json && variants="--variants g10c3,g10c4,g10c5,g20c4,g20c6"
      timeout 90 /tmp/v/$b-bench --backward --suite $f $variants --markdown $W/$b-$suite-backward-$r.md \
        --json $W/$b-$suite-backward-$r.json > $W/$b-$suite-backward-$r.log 2>&1
      echo "rc=$? $b $suite-backward $r $SECONDS s" >> $W/run.log
    done
    pack
  done
done
# The forward on the same shapes, chunks of one channel forced (no forward kernel changed: base's).
timeout 90 /tmp/v/base-bench --suite .carry/exp/unet.json --variants g10c3,g10c4,g10c5,g20c4,g20c6 \
  --markdown $W/base-unet-forward.md --json $W/base-unet-forward.json > $W/base-unet-forward.log 2>&1
echo "rc=$? base unet-forward $SECONDS s" >> $W/run.log
python3 - <<'PY'
import json
d = json.load(open('.carry/exp/chunk.json'))
for c in d['cases']:
    json.dump(dict(d, cases=[c]), open('/tmp/case-%s.json' % c['id'], 'w'))
PY
timeout 60 ncu --clock-control none --launch-skip 10 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --section Occupancy --section LaunchStats --section InstructionStats \
  -k 'regex:^split_pipelined_kernel$' \
  /tmp/v/a-bench --backward --suite /tmp/case-sd-vae-mid-gn-silu.json --repeats 20 --warmup 2 > $W/ncu-a-sd-vae-mid.txt 2>&1
echo "rc=$? ncu a sd-vae-mid $SECONDS s" >> $W/run.log
