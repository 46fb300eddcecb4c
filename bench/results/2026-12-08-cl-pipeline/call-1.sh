#!/usr/bin/env bash
# Session 100's probe of the channels_last seeds with x (and dy) read once (dev/cl_sample_pipeline_probe.cu),
# for any GPU and no carry: nvcc builds the probe on the device (about 20 s). Its correctness shapes under
# compute-sanitizer memcheck (waits may spin 60 s there), then every variant on the seeds, forward and
# backward; with a carry of inorm-bench (CARRY=<folder with all.tar.xz>), the library's seeds in the same
# call, both passes. Into $OUT/p1.tgz.
cd "$(dirname "$0")/../../.." || exit 2
set -u
W=/tmp/s100-out1; H=$W/p1; rm -rf $W; mkdir -p $H
step() { echo "rc=$1 $2 $SECONDS s" >> $H/run.log; tar czf $OUT/p1.tgz -C $W p1; }
{ echo "tree ${INORM_COMMIT:-?}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > $H/run.log
SECONDS=0
nvcc -std=c++17 -O3 -arch=sm_90 -Xptxas -v -o /tmp/cl-pipeline dev/cl_sample_pipeline_probe.cu > $H/build.log 2>&1
step $? build
timeout 200 compute-sanitizer --tool memcheck /tmp/cl-pipeline small 60 > $H/memcheck.log 2>&1
step $? "memcheck small"
timeout 300 /tmp/cl-pipeline all > $H/probe.log 2>&1
step $? probe
if [ -n "${CARRY:-}" ]; then
  bin=/tmp/s100/bin; mkdir -p $bin && xz -dc $CARRY/all.tar.xz | tar xf - -C $bin inorm-bench && chmod +x $bin/*
  step $? unpack
  python3 -c "import json, sys; d = json.load(open('bench/suites/layouts.json'))
json.dump(dict(d, cases=[c for c in d['cases'] if c['id'].startswith('cl-seed-')]), sys.stdout)" > /tmp/seeds.json
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    timeout 60 $bin/inorm-bench --suite /tmp/seeds.json $flag \
      --markdown $H/seeds-$pass.md --json $H/seeds-$pass.json > $H/seeds-$pass.log 2>&1
    step $? "library seeds $pass"
  done
fi
cat $H/run.log
