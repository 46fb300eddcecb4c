#!/usr/bin/env bash
cd "$(dirname "$0")/../.."
W=$OUT/w; mkdir -p $W
B=/tmp/pk; mkdir -p $B && tar xJf .carry/landed/pk.tar.xz -C $B
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
for r in 1 2; do
  timeout 200 $B/inorm-bench --suite .carry/exp/affine.json --backward --markdown $W/affine-bwd-$r.md > $W/affine-bwd-$r.log 2>&1
  echo "rc=$? round $r $SECONDS s" >> $W/run.log
done
if grep -q H200 $W/run.log; then
  for sp in public:forward train:backward layouts:forward layouts:backward fused:forward fused:backward; do
    suite=${sp%:*}; pass=${sp#*:}; flag=; [ $pass = backward ] && flag=--backward
    timeout 120 $B/inorm-bench --suite bench/suites/$suite.json $flag --markdown $W/$suite-$pass.md \
      --json $W/$suite-$pass.json > $W/$suite-$pass.log 2>&1
    echo "rc=$? $suite-$pass $SECONDS s" >> $W/run.log
  done
fi
tar czf $OUT/w.tgz -C $OUT w
