#!/usr/bin/env bash
# Run right after call-1 on its warm H100 (the device tool's command line, kept here): this tree's
# inorm-bench (call-1's new-bench) on public.json and layouts.json forward and train.json backward,
# to see the split's fix cost nothing. Its header's commit (967165ab5078-dirty) is the build
# folder's configure-time label; the code is call-1's tree (e7a985d).
b=/tmp/s94/new/inorm-bench
[ -x $b ] || { mkdir -p /tmp/s94/new && xz -T0 -dc .carry/s94/all.tar.xz | tar xf - -C /tmp/s94 new-bench &&
  mv /tmp/s94/new-bench $b && chmod +x $b; }
mkdir -p $OUT/q
for s in public layouts; do
  timeout 60 $b --suite bench/suites/$s.json --markdown $OUT/q/$s.md --json $OUT/q/$s.json > $OUT/q/$s.log 2>&1
  echo "rc=$? $s $SECONDS s"
done
timeout 60 $b --suite bench/suites/train.json --backward --markdown $OUT/q/train-backward.md \
  --json $OUT/q/train-backward.json > $OUT/q/train-backward.log 2>&1
echo "rc=$? train-backward $SECONDS s"
