#!/usr/bin/env bash
# Session 58: shared_resident's arrivals and slice counter zeroed by one memset (the build under
# test, inorm-bench) against two (6ddc179's, left in /tmp by .carry/s58o/run.sh on this machine),
# alternating, three rounds each, forward and backward.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/m; mkdir -p $o
d=.carry/s58m
[ -f $d/inorm-bench ] || { gunzip -f $d/inorm-bench.gz; chmod +x $d/inorm-bench; }
ln -sf /tmp/s58-inorm-bench-6ddc179 $d/inorm-bench-6ddc179
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $o/gpu.txt
step() { local name=$1 b=$2; shift 2; timeout 120 $d/$b "$@" --json $o/$name.json --markdown $o/$name.md > $o/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $o/steps.txt; }
for r in 1 2 3; do
  step old-f-$r inorm-bench-6ddc179 --suite $d/mf.json
  step new-f-$r inorm-bench --suite $d/mf.json
  step old-b-$r inorm-bench-6ddc179 --backward --suite $d/mb.json
  step new-b-$r inorm-bench --backward --suite $d/mb.json
done
cat $o/steps.txt
python3 - "$o" <<'PY'
import json, sys, glob, collections
o = sys.argv[1]
t = collections.defaultdict(list)
for f in sorted(glob.glob(o + "/*-[fb]-*.json")):
    name = f.split("/")[-1]; build, pas = name.split("-")[0], name.split("-")[1]
    d = json.load(open(f)); rows = d["rows"] if isinstance(d, dict) else d
    for r in rows: t[(pas, r["id"], build)].append((r["inorm_ms"], r["ratio_to_floor"]))
for k in sorted(t): print(k, " ".join("%.4f/%.3f" % v for v in t[k]))
PY
cd $OUT && tar czf m.tgz m && rm -rf m
