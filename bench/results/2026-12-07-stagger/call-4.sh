#!/usr/bin/env bash
# Session 92's fourth device run: Plan::describe without iostreams (the package's segmentation
# fault, call-3: inside _C.so's own ostream insert of a long). The package built
# (scripts/build-python.sh); how _C.so was linked and what of libstdc++ it defines; segv.py's parts
# that died; python -m inorm.bench forward and --train on fused.json (the two runs call-2 lost); then
# pytest, the GroupNorm tests first, then the whole suite while time is left. Packed into $OUT/f.tgz
# after every step.
cd "$(dirname "$0")/../../.." || exit 2
set -u
HERE=bench/results/2026-12-07-stagger
o=$OUT/f; mkdir -p $o
pack() { tar czf $OUT/f.tgz -C $OUT f; }
step() { echo "rc=$1 $2 $SECONDS s" >> $o/steps.txt; pack; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
INORM_BUILD_DIR=build-gpu timeout 300 scripts/build-python.sh > $o/build.log 2>&1
step $? build-python
so=$(ls build-gpu/python/inorm/_C*.so)
{ grep -E '(g\+\+|c\+\+|x86_64-linux-gnu-g\+\+).* -shared' build-gpu/python-build.log | tail -1
  readelf -d $so | grep NEEDED
  echo "defined libstdc++ symbols (ostream, locale, codecvt):"
  nm -C --defined-only $so | grep -E 'std::(basic_ostream|locale|codecvt|num_put|numpunct)' | head -20
  nm -C --defined-only $so | grep -cE 'std::(basic_ostream|locale|codecvt)'; } > $o/linkage.txt 2>&1
step $? linkage
export PYTHONPATH=$PWD/build-gpu/python
for part in inorm inorm-backward case train; do
  timeout 120 python3 -X faulthandler $HERE/segv.py $part > $o/part-$part.log 2>&1
  step $? "part $part"
done
for item in fused:--forward fused-train:--train; do
  IFS=: read -r name flag <<< "$item"
  [ $flag = --forward ] && flag=
  mkdir -p $o/$name
  timeout 150 python3 -m inorm.bench --suite bench/suites/fused.json $flag --out $o/$name > $o/$name/bench.log 2>&1
  step $? "package $name"
done
timeout 150 python3 -m pytest tests/python/test_group_norm.py -q -rs -p no:cacheprovider > $o/pytest-group-norm.log 2>&1
step $? "pytest test_group_norm"
left=$((585 - SECONDS))
[ $left -gt 60 ] && { timeout $left python3 -m pytest tests/python -q -rs -p no:cacheprovider \
  --ignore=tests/python/test_group_norm.py > $o/pytest.log 2>&1; step $? "pytest (the rest)"; }
cat $o/steps.txt
