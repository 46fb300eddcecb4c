#!/usr/bin/env bash
# A second call on the same warm machine: c3 (121e430; its kernels are main's) on every suite, both
# passes, for the README's inorm-bench columns.
cd "$(dirname "$0")/../.."
set -u
W=$OUT/s; mkdir -p $W
pack() { tar czf $OUT/s.tgz -C $OUT s; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/run.log
SECONDS=0
[ -x /tmp/v/c3-bench ] || exit 3
for suite in public train layouts fused; do
  for pass in forward backward; do
    flag=; [ $pass = backward ] && flag=--backward
    [ $suite = public ] && [ $pass = backward ] && continue
    [ $suite = train ] && [ $pass = forward ] && continue
    timeout 150 /tmp/v/c3-bench $flag --suite bench/suites/$suite.json --markdown $W/$suite-$pass.md \
      --json $W/$suite-$pass.json > $W/$suite-$pass.log 2>&1
    echo "rc=$? $suite-$pass $SECONDS s" >> $W/run.log
    pack
  done
done
