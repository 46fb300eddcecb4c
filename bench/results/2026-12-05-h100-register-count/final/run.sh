#!/usr/bin/env bash
# Session 76, call 2: the register part's held count (the working tree) against main (42feb8e,
# base): every GPU test and the four sanitizer tools on the new build, then the suites both passes
# and the affine pairs in two alternating rounds, then ncu on SD VAE mid's GroupNorm backward with
# and without the affine (where its time goes: warp states, scheduler, memory).
cd "$(dirname "$0")/../.."
set -u
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/w.tgz -C $OUT w; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
mkdir -p /tmp/v && tar xJf .carry/s76b/pk.tar.xz -C /tmp/v
echo "unpacked $SECONDS s: $(ls /tmp/v | tr '\n' ' ')" >> $W/run.log
for i in $(seq 0 12); do
  GTEST_TOTAL_SHARDS=13 GTEST_SHARD_INDEX=$i timeout 300 /tmp/v/new-tests --gtest_brief=1 > $W/tests-$i.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  filter='GpuSanitize.*'
  [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/v/new-tests --gtest_brief=1 \
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
  for b in base new; do
    for sp in layouts:forward layouts:backward train:backward fused:forward fused:backward public:forward affine:backward; do
      suite=${sp%:*}; pass=${sp#*:}; flag=; [ $pass = backward ] && flag=--backward
      f=bench/suites/$suite.json; [ $suite = affine ] && f=.carry/exp/affine.json
      timeout 120 /tmp/v/$b-bench --suite $f $flag --markdown $W/$b-$suite-$pass-$r.md \
        --json $W/$b-$suite-$pass-$r.json > $W/$b-$suite-$pass-$r.log 2>&1
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
for id in sd-vae-mid-gn-silu-aff sd-vae-mid-gn-silu-noaff; do
  timeout 90 ncu --clock-control none --launch-skip 10 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section InstructionStats \
    -k 'regex:^split_pipelined_kernel$' \
    /tmp/v/new-bench --backward --suite /tmp/case-$id.json --repeats 20 --warmup 2 > $W/ncu-new-$id.txt 2>&1
  echo "rc=$? ncu new $id $SECONDS s" >> $W/run.log
done
