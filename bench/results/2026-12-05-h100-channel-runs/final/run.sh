#!/usr/bin/env bash
# main (83a1898's kernels = a980f52, .carry/landed/pk.tar.xz) against the working tree
# (.carry/runs/pk.tar.xz): GPU tests and sanitizers on the latter, then the suites and the affine
# pairs in two alternating rounds, then ncu on three GroupNorm backwards.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
O=/tmp/old; R=/tmp/runs; N=/tmp/new; mkdir -p $O $R $N
tar xJf .carry/landed/pk.tar.xz -C $O; tar xJf .carry/runs/pk.tar.xz -C $N
for i in $(seq 0 12); do
  GTEST_TOTAL_SHARDS=13 GTEST_SHARD_INDEX=$i timeout 300 $N/inorm_gpu_tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 1 $N/inorm_gpu_tests --gtest_brief=1 \
    --gtest_filter="$filter" > $W/sanitize-$tool.log 2>&1 &
done
wait
echo "tests and sanitizers $SECONDS s" >> $W/run.log
for i in $(seq 0 12); do echo "shard $i: $(grep -E 'PASSED|FAILED' $W/tests-$i.log | tr '\n' ' ')" >> $W/run.log; done
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool: $(grep -E 'PASSED|FAILED|SUMMARY' $W/sanitize-$tool.log | tr '\n' ' ')" >> $W/run.log
done
pack
for r in 1 2; do
  for b in old new; do
    B=/tmp/$b
    for sp in fused:forward fused:backward affine:backward train:backward public:forward layouts:forward; do
      suite=${sp%:*}; pass=${sp#*:}; flag=; [ $pass = backward ] && flag=--backward
      f=bench/suites/$suite.json; [ $suite = affine ] && f=.carry/exp/affine.json
      timeout 150 $B/inorm-bench --suite $f $flag --markdown $W/$b-$suite-$pass-$r.md --json $W/$b-$suite-$pass-$r.json > $W/$b-$suite-$pass-$r.log 2>&1
      echo "rc=$? $b $suite-$pass $r $SECONDS s" >> $W/run.log
    done
    pack
  done
done
python3 - <<'PY'
import json
d = json.load(open('.carry/exp/affine.json'))
for c in d['cases']:
    json.dump(dict(d, cases=[c]), open('/tmp/case-%s.json' % c['id'], 'w'))
PY
for id in sd-vae-mid-gn-silu-aff sd-unet-gn-silu-aff gn-only-fp32-aff; do
  timeout 60 ncu --clock-control none --launch-skip 20 --launch-count 2 \
    --metrics gpu__time_duration.sum,sm__inst_executed.sum,launch__registers_per_thread \
    -k 'regex:^(channel_reduce|shared_resident|split_pipelined)_kernel$' \
    $N/inorm-bench --backward --suite /tmp/case-$id.json --repeats 20 --warmup 2 > $W/ncu-new-$id.txt 2>&1
  echo "rc=$? ncu new $id $SECONDS s" >> $W/run.log
done
