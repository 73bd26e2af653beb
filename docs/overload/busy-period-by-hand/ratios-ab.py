import re,collections,statistics,sys
rows=collections.defaultdict(lambda: collections.defaultdict(list))
def num(s):
    m=re.match(r'([0-9.]+)(k?)',s); v=float(m.group(1)); return v*1000 if m.group(2) else v
def us(s):
    m=re.match(r'([0-9.]+)(ms|µs|s)',s); v=float(m.group(1)); return v*1000 if m.group(2)=='ms' else v
for line in open(sys.argv[1]):
    p=[x.strip() for x in line.split('|')]
    if len(p)<4: continue
    cell,b=p[1],p[2]
    tp=num(re.search(r'tp (\S+)',p[3]).group(1)); p99=us(re.search(r'p99 (\S+)',p[3]).group(1))
    rd=re.search(r'Reads (\d+) Frames (\d+)',line)
    rows[cell][b].append((tp,p99,int(rd.group(1))/int(rd.group(2)) if rd else 0))
for cell,d in rows.items():
    a,b=d['half0'],d['half1']
    rt=[y[0]/x[0] for x,y in zip(a,b)]
    print(f"{cell:26s} frames served new/old {statistics.median(rt):.3f} ({min(rt):.3f}-{max(rt):.3f}) | p99 ms old "+"/".join(f"{x[1]/1000:.2f}" for x in a)+" new "+"/".join(f"{x[1]/1000:.2f}" for x in b)+" | reads per frame old "+"/".join(f"{x[2]:.2f}" for x in a)+" new "+"/".join(f"{x[2]:.2f}" for x in b))
