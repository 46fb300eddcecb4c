#!/usr/bin/env bash
# Session 65, call 5: inorm-bench of the kept build (.carry/s65d) on every suite, forward and
# backward, and apply.json and few.json against cl-apply0 and cl-apply1; then the package built from the same tree and
# python -m inorm.bench on layouts.json forward against eager PyTorch and torch.compile, and the
# package's channels_last tests.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/g; mkdir -p $W
gunzip -c .carry/s65d/inorm-bench.gz > /tmp/ib && chmod +x /tmp/ib
export INORM_COMMIT=$(cat .carry/s65d/commit)
R=bench/results/2026-12-04-h200-cl-apply
SECONDS=0
for s in layouts public fused train; do
  /tmp/ib --suite bench/suites/$s.json --markdown $W/$s.md --json $W/$s.json > $W/$s.log 2>&1
  echo "rc=$? $s $SECONDS s" >> $W/steps.txt
done
/tmp/ib --backward --suite bench/suites/layouts.json --markdown $W/layouts-backward.md --json $W/layouts-backward.json > $W/layouts-backward.log 2>&1
/tmp/ib --suite $R/apply.json --variants cl-apply0,cl-apply1 --markdown $W/apply.md --json $W/apply.json > $W/apply.log 2>&1
echo "rc=$? apply $SECONDS s" >> $W/steps.txt
/tmp/ib --suite $R/few.json --variants cl-apply0,cl-apply1 --markdown $W/few.md --json $W/few.json > $W/few.log 2>&1
echo "rc=$? few $SECONDS s" >> $W/steps.txt
(cd $OUT && tar czf g.tgz g)
INORM_BUILD_DIR=build timeout 260 scripts/build-python.sh > $W/build.txt 2>&1
echo "rc=$? package build $SECONDS s" >> $W/steps.txt
export PYTHONPATH=$PWD/build/python
mkdir -p $W/layouts-package
timeout 150 python3 -m inorm.bench --suite bench/suites/layouts.json --out $W/layouts-package > $W/layouts-package/bench.log 2>&1
echo "rc=$? layouts package $SECONDS s" >> $W/steps.txt
timeout 150 python3 -m pytest tests/python -q -rs -p no:cacheprovider -k "channels_last or layout" > $W/pytest-cl.txt 2>&1
echo "rc=$? pytest channels_last $SECONDS s" >> $W/steps.txt
cat $W/steps.txt
cd $OUT && tar czf g.tgz g && rm -rf g
