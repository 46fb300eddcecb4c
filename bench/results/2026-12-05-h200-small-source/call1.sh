#!/usr/bin/env bash
# Session 70, call 4 (.carry/s70a: inorm-bench built at the commit in it, main). Where the small
# tensors' time goes: session 68's call (2026-12-04-h200-small-ncu, run this session) showed the
# SD UNet GroupNorm+SiLU forward issue-bound at 0.44 IPC per scheduler and 52 instructions per
# element; this saves ncu's report of one launch of each of two cases and prints its per-SASS
# source counters and the raw stall samples. Then a check of python -m inorm.bench's suite reader and
# make_data with PyTorch (a stub package: the extension is not built here). Packed into $OUT/q.tgz.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/q; mkdir -p $W
pack() { tar czf $OUT/q.tgz -C $OUT q; }
trap pack EXIT
R=bench/results/2026-12-05-h200-small-source
tar xJf .carry/s70a/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s70a/commit)
{ echo "commit $INORM_COMMIT"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $W/run.log
SECONDS=0
python3 - "$R/small.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d['cases']:
    json.dump(dict(d, cases=[c]), open('/tmp/small-%s.json' % c['id'], 'w'))
PY
[ "${1:-}" = python ] || for id in sd-unet-gn-silu cyclegan-in-relu; do  # call 5 runs the Python check alone
  timeout 90 ncu --clock-control none --launch-skip 20 --launch-count 1 --set full --import-source no \
    -k 'regex:^(shared_resident|channels_last_[a-z]*)_kernel$' -o $W/$id \
    /tmp/inorm-bench --suite /tmp/small-$id.json --repeats 20 --warmup 2 > $W/ncu-$id.log 2>&1
  echo "rc=$? ncu $id $SECONDS s" >> $W/run.log
  ncu -i $W/$id.ncu-rep --page source --print-source sass --csv > $W/sass-$id.csv 2>&1
  ncu -i $W/$id.ncu-rep --page raw --csv > $W/raw-$id.csv 2>&1
  echo "rc=$? pages $id $SECONDS s" >> $W/run.log
done
mkdir -p /tmp/stub/inorm && cp python/inorm/_suite.py python/inorm/bench.py /tmp/stub/inorm/ &&
  printf '%s\n' '__version__ = "stub"' 'import types' 'modules = types.SimpleNamespace(_FUSED={})' \
    'def __getattr__(name): return type(name, (), {})' > /tmp/stub/inorm/__init__.py
PYTHONPATH=/tmp/stub timeout 120 python3 - > $W/python.log 2>&1 <<'PY'
import glob, sys, torch
import inorm.bench
bench = sys.modules["inorm.bench"]  # the stub's __getattr__ would answer `from inorm import bench`
for path in sorted(glob.glob("bench/suites/*.json")):
    for case in bench.load_suite(path):
        shape = tuple(min(d, 4) for d in case["shape"])
        x = bench.case_input(case, shape, bench.DTYPES[case["dtype"]])
        assert x.dtype == bench.DTYPES[case["dtype"]] and x.is_cuda
        if case["layout"] == "nhwc":
            assert not x.is_contiguous()
    print(path, "ok")
for spec, lo, hi in [("rand", 0, 1), ("U[0,1)", 0, 1), ("1000 + randn", 990, 1010), ("-5 + rand", -5, -4)]:
    x = bench.make_data((1 << 20,), torch.float32, spec)
    print(spec, float(x.min()), float(x.max()))
    assert lo <= float(x.min()) and float(x.max()) <= hi
m = bench.make_data((1 << 20,), torch.float32, "randn")
assert abs(float(m.mean())) < 0.01 and abs(float(m.std()) - 1) < 0.01
print("python ok")
PY
echo "rc=$? python $SECONDS s" >> $W/run.log
cat $W/run.log
