#!/usr/bin/env bash
# Session 57: shared_resident's first round staggered by group (INORM_STAGGER_CYCLES, experiment build).
cd "$(dirname "$0")/../.."
set -u
o=$OUT/s; mkdir -p $o
d=.carry/s57; b=$d/inorm-bench
[ -f $b ] || { gunzip -f $b.gz; chmod +x $b; }
SECONDS=0
for st in 0 250 500 1000 2000 4000 0; do
  tag=st$st-$SECONDS
  INORM_STAGGER_CYCLES=$st timeout 120 $b --suite $d/stag.json --json $o/$tag.json --markdown $o/$tag.md > $o/$tag.log 2>&1; echo "rc=$? $tag $SECONDS s" >> $o/steps.txt
  INORM_STAGGER_CYCLES=$st timeout 60 $b --suite $d/mid.json --variants g16c2x8,g32c2x16 --json $o/mid-$tag.json --markdown $o/mid-$tag.md > $o/mid-$tag.log 2>&1; echo "rc=$? mid-$tag $SECONDS s" >> $o/steps.txt
done
cat $o/steps.txt
python3 - $o <<'PY'
import json,glob,sys,re,os
o=sys.argv[1]; rows={}
for f in sorted(glob.glob(o+'/*.json'), key=os.path.getmtime):
    tag=os.path.basename(f)[:-5]
    for r in json.load(open(f)) if f.endswith('.json') else []:
        key=r['id']+(' '+r.get('variant','') if r.get('variant') else '')
        rows.setdefault(key,[]).append(f"{tag.split('-')[0] if not tag.startswith('mid') else tag.split('-')[1]}:{r['ratio_to_floor']:.3f}{'' if r['verified'] else '!'}")
for k,v in rows.items(): print(k.ljust(40),' '.join(v))
PY
cd $OUT && tar czf s.tgz s && rm -rf s
