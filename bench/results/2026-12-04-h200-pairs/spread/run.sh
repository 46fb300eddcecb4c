#!/usr/bin/env bash
# Session 58: the first round's spread (SM cycles over all groups) of slice-spanning plans, from
# INORM_EXPERIMENT_SPAN_SPREAD (an experiment build of 438af9b, spread-experiment.patch; 12000
# is the planner's), one process a setting, two rounds.
cd "$(dirname "$0")/../.."
set -u
o=$OUT/s; mkdir -p $o
d=.carry/s58s; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
for r in 3; do
  for spread in 24000 36000 48000 72000; do
    INORM_EXPERIMENT_SPAN_SPREAD=$spread timeout 100 $b --suite $d/sf.json --json $o/f-$spread-$r.json --markdown $o/f-$spread-$r.md > $o/f-$spread-$r.log 2>&1
    INORM_EXPERIMENT_SPAN_SPREAD=$spread timeout 100 $b --backward --suite $d/sb.json --json $o/b-$spread-$r.json --markdown $o/b-$spread-$r.md > $o/b-$spread-$r.log 2>&1
    echo "rc=$? $spread-$r $SECONDS s" >> $o/steps.txt
  done
done
cat $o/steps.txt
python3 - "$o" <<'PY'
import json, sys, glob, collections
o = sys.argv[1]
t = collections.defaultdict(dict)
for f in sorted(glob.glob(o + "/*.json")):
    pas, spread, r = f.split("/")[-1][:-5].split("-")
    d = json.load(open(f)); rows = d["rows"] if isinstance(d, dict) else d
    for row in rows: t[(pas, row["id"])].setdefault(int(spread), []).append("%.3f" % row["ratio_to_floor"])
for k in sorted(t): print(k, "  ".join("%d:%s" % (s, "/".join(v)) for s, v in sorted(t[k].items())))
PY
cd $OUT && tar czf s.tgz s && rm -rf s
