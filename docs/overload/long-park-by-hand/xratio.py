import sys,re,collections,statistics
# lines: rN | cell | variant | tp X[k] p50 .. p99 Y ... || Reads R Frames F ...
d=collections.defaultdict(dict)
for line in open(sys.argv[1]):
    p=[x.strip() for x in line.split('|')]
    if len(p)<4: continue
    r,cell,v=p[0],p[1],p[2]
    m=re.search(r'tp ([0-9.]+)(k?)',line); tp=float(m.group(1))*(1000 if m.group(2) else 1)
    m=re.search(r'p99 ([0-9.]+)(ms|µs)',line); p99=float(m.group(1))*(1000 if m.group(2)=='ms' else 1)
    rd=int(re.search(r'Reads (\d+)',line).group(1)); fr=int(re.search(r'Frames (\d+)',line).group(1))
    miss=int(re.search(r'missed (\d+)',line).group(1))
    d[(cell,v)][r]=(tp,p99,rd/fr,miss)
base=sys.argv[2]
cells=sorted({c for c,v in d}, key=lambda c:list(k[0] for k in d).index(c))
vars_=[]
for c,v in d:
    if v not in vars_: vars_.append(v)
for c in cells:
    for v in vars_:
        if v==base or (c,v) not in d: continue
        rs=sorted(set(d[(c,v)])&set(d[(c,base)]))
        tr=[d[(c,v)][r][0]/d[(c,base)][r][0] for r in rs]
        p=[d[(c,v)][r][1] for r in rs]; pb=[d[(c,base)][r][1] for r in rs]
        rpf=[d[(c,v)][r][2] for r in rs]; rpfb=[d[(c,base)][r][2] for r in rs]
        miss=[d[(c,v)][r][3] for r in rs]
        print(f"{c:22s} {v:5s} vs {base}: served {statistics.median(tr):.3f} ({min(tr):.3f}-{max(tr):.3f}) | p99 {min(p)/1000:.2f}-{max(p)/1000:.2f} vs {min(pb)/1000:.2f}-{max(pb)/1000:.2f} ms | reads/frame {statistics.median(rpf):.2f} vs {statistics.median(rpfb):.2f} | missed {max(miss)} | {len(rs)} rounds")
