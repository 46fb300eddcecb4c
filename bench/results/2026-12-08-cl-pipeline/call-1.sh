#!/usr/bin/env bash
# Session 100's probe of x (and dy) read once by the whole grid a unit at a time (dev/cl_sample_pipeline_probe.cu),
# for any GPU and no carry: nvcc builds the probe on the device (about 20 s). Every variant on the
# channels_last seeds and layouts.json's NCHW slices, both passes; ncu's bytes on the bfloat16 seed's
# first variants; then its correctness shapes under compute-sanitizer memcheck (waits may spin 60 s
# there); with a carry of inorm-bench (CARRY=<folder with all.tar.xz>), the library on the same shapes
# in the same call. Into $OUT/p1.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
W=/tmp/s100-out1; H=$W/p1; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/p1.tgz -C $W p1; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
nvcc -std=c++17 -O3 -arch=sm_90 -Xptxas -v -o /tmp/cl-pipeline dev/cl_sample_pipeline_probe.cu > $H/build.log 2>&1
step $? build
timeout 280 /tmp/cl-pipeline all > $H/probe.log 2>&1
step $? probe
# Where the bytes came from on the bfloat16 seed's first variants (one launch a pass): device memory
# against L2 hits, as a copy's read and write would be.
timeout 100 ncu --clock-control none -k regex:pipeline --launch-count 2 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
  /tmp/cl-pipeline ncu 30 > $H/ncu.log 2>&1
step $? ncu
timeout 160 compute-sanitizer --tool memcheck /tmp/cl-pipeline small 60 > $H/memcheck.log 2>&1
step $? "memcheck small"
if [ -n "${CARRY:-}" ]; then
  bin=/tmp/s100/bin; mkdir -p $bin && xz -dc $CARRY/all.tar.xz | tar xf - -C $bin inorm-bench && chmod +x $bin/*
  step $? unpack
  python3 -c "import json, sys; d = json.load(open('bench/suites/layouts.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'].startswith(('cl-seed-', 'mid-', 'split-', 'few-', 'vol3d'))]),
          sys.stdout)" > /tmp/shapes.json
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 $bin/inorm-bench --suite /tmp/shapes.json $flag \
      --markdown $H/library-$pass.md --json $H/library-$pass.json > $H/library-$pass.log 2>&1
    step $? "library $pass"
  done
fi
cat $H/run.log
