# The stall samples and executed instructions of ncu's `--page source --print-source sass --csv` export:
# totals by stall reason, the instructions with the most samples and the most executed.
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]; data = rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
def num(r, k):
    try: return float(r[ix[k]].replace(',', ''))
    except: return 0.0
stalls = [h for h in hdr if h.startswith('stall_') and '(Not Issued)' not in h]
tot = collections.Counter()
for r in data:
    for s in stalls: tot[s] += num(r, s)
S = sum(num(r, 'Warp Stall Sampling (All Samples)') for r in data)
I = sum(num(r, 'Instructions Executed') for r in data)
print('samples', S, 'instructions', I, 'sass lines', len(data))
for s, v in tot.most_common(10): print(f'  {s:28s} {v:8.0f} {100*v/S:5.1f}%')
print('top instructions by samples:')
top = sorted(data, key=lambda r: -num(r, 'Warp Stall Sampling (All Samples)'))[:25]
for r in top:
    st = max(stalls, key=lambda s: num(r, s))
    print(f"  {r[ix['Address']]:>6s} {num(r,'Warp Stall Sampling (All Samples)'):6.0f} exec {num(r,'Instructions Executed'):8.0f} {st:20s} {r[ix['Source']][:70]}")
print('top by executed:')
for r in sorted(data, key=lambda r: -num(r, 'Instructions Executed'))[:12]:
    print(f"  {r[ix['Address']]:>6s} exec {num(r,'Instructions Executed'):8.0f} {r[ix['Source']][:80]}")
