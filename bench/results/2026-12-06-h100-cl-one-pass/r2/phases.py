# Sums the per-instruction pages (*-sass.csv.gz) of the forward by phase: python3 phases.py forward-sd-unet-cl-gn-silu-sass.csv.gz forward-gn-1x1280x8-sass.csv.gz
import csv,sys,gzip
# Phases of channels_last_resident_kernel<ForwardOp<bf16, true>, 256, kVector> at 1787ca7, by SASS
# instruction index (read off the source page: index math, staging loop, column sums, ...).
phases=[('setup: index math, the context loads',0,600),('staging (LDG.128 -> STS.128)',600,700),
        ('column sums (one pass, float64) and their trees',700,1500),('slice combine (lane groups, finish)',1500,3900),
        ('combine_slices: barrier, channel cells, barrier',3900,4100),('elementwise pass (SiLU, STG)',4100,4800),('exit',4800,99999)]
print('| phase | forward 8x640x32x32: instructions | stall samples | forward 1x1280x8x8: instructions | stall samples |')
print('|---|---|---|---|---|')
res=[]
for f in sys.argv[1:]:
    rows=list(csv.reader(gzip.open(f,'rt'))); hdr=rows[1]; data=rows[2:]
    iW=hdr.index('Warp Stall Sampling (All Samples)'); iE=hdr.index('Instructions Executed')
    E=[int(r[iE] or 0) for r in data]; S=[int(r[iW] or 0) for r in data]
    res.append([(sum(E[a:b]),sum(S[a:b])) for _,a,b in phases]+[(sum(E),sum(S))])
for i,(name,a,b) in enumerate(phases+[('all',0,0)]):
    cells=[]
    for r in res:
        e,s=r[i]; te,ts=r[-1]
        cells+= [f'{100*e/te:.0f}%', f'{100*s/ts:.0f}%']
    print(f'| {name} | '+' | '.join(cells)+' |')
