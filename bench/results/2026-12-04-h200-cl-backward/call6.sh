#!/usr/bin/env bash
# Session 66, call 6 (.carry/s66e: inorm-bench built from b89a29b, the kernels of the head): ncu on cl-bf16's backward in the one
# kernel (what its second read of x and dy finds in L2), and on the 512 MiB bfloat16 case's.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/f; mkdir -p $W
tar xJf .carry/s66e/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s66e/commit)
SECONDS=0
for c in '"cl-bf16", "shape": [64, 64, 128, 128]' '"cl-512mib-bf16", "shape": [64, 128, 128, 256]'; do
  echo "{\"cases\":[{\"id\": $c, \"dtype\": \"bfloat16\", \"layout\": \"nhwc\", \"affine\": true}]}" > /tmp/one.json
  id=$(echo "$c" | cut -d'"' -f2)
  timeout 120 ncu --clock-control none -k regex:channels_last_stream --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    /tmp/inorm-bench --backward --suite /tmp/one.json --repeats 20 --warmup 1 > $W/ncu-$id.txt 2>&1
  echo "rc=$? ncu $id $SECONDS s" >> $W/run.log
done
cat $W/run.log
grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|dram__bytes|Warp Cycles Per Issued" $W/ncu-*.txt
