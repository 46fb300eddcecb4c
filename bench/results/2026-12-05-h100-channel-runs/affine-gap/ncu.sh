#!/usr/bin/env bash
cd "$(dirname "$0")/../.."
W=$OUT/w; mkdir -p $W
B=/tmp/pk; mkdir -p $B && tar xJf .carry/landed/pk.tar.xz -C $B
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
python3 - <<'PY'
import json
d = json.load(open('.carry/exp/affine.json'))
for c in d['cases']:
    json.dump(dict(d, cases=[c]), open('/tmp/case-%s.json' % c['id'], 'w'))
PY
for base in sd-vae-mid-gn-silu sd-unet-gn-silu sd-unet-cl-gn-silu nnunet-deep-lrelu tiny-slices cyclegan-in-relu; do
  for a in aff noaff; do
    id=$base-$a
    timeout 60 ncu --clock-control none --launch-skip 20 --launch-count 4 \
      --metrics gpu__time_duration.sum,sm__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__cycles_active.avg,launch__registers_per_thread,smsp__average_warp_latency_issue_stalled_barrier,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct \
      -k 'regex:^(channel_reduce|channels_last_[a-z]*|eval_forward|group_registers|shared_resident|split_pipelined)_kernel$' \
      $B/inorm-bench --backward --suite /tmp/case-$id.json --repeats 20 --warmup 2 > $W/ncu-$id.txt 2>&1
    echo "rc=$? $id $SECONDS s" >> $W/run.log
  done
done
tar czf $OUT/w.tgz -C $OUT w
