#!/usr/bin/python3
# Generates the crafted files in this folder (see README.md):
#   /usr/bin/python3 execution/testdata/faults/gen.py execution/testdata/faults
# Deterministic: a fixed seed, so a rerun rewrites the same bytes.
import datetime, math, os, random, sys

out = sys.argv[1]
rng = random.Random(20240910)

def bdays(start, n):
    d = datetime.date.fromisoformat(start)
    res = []
    while len(res) < n:
        if d.weekday() < 5:
            res.append(d.isoformat())
        d += datetime.timedelta(days=1)
    return res

def walk(n, p0=100.0, vol=0.015):
    p, xs = p0, []
    for _ in range(n):
        xs.append(p)
        p *= math.exp(rng.gauss(0.0002, vol))
    return xs

def fmt(v):
    if v is None:
        return ""
    return ("%.4f" % v).rstrip("0").rstrip(".")

def write(name, dates, cols):
    names = list(cols)
    with open(os.path.join(out, name), "w") as f:
        f.write(",".join(["Date"] + names) + "\n")
        for i, d in enumerate(dates):
            f.write(",".join([d] + [fmt(cols[c][i]) for c in names]) + "\n")

N = 300
D = bdays("2015-01-02", N)
# A sane two-asset file and a sane curve: the controls.
write("walk.csv", D, {"A": walk(N), "B": walk(N, 50)})
c1 = walk(N, 60)
write("curve.csv", D, {"C1": c1, "C2": [p * (1 + 0.01 + 0.004 * math.sin(i / 9)) for i, p in enumerate(c1)],
                       "C3": [p * (1 + 0.02 + 0.006 * math.cos(i / 7)) for i, p in enumerate(c1)]})
# Too few rows.
write("one-row.csv", D[:1], {"A": [100.0]})
write("short-30.csv", D[:30], {"A": walk(30)})
write("short-64.csv", D[:64], {"A": walk(64)})
write("short-80.csv", D[:80], {"A": walk(80), "B": walk(80, 30)})
s80 = walk(80, 60)
write("curve-short-80.csv", D[:80], {"C1": s80, "C2": [p * 1.01 + 0.2 * math.sin(i) for i, p in enumerate(s80)]})
# Nothing to trade.
write("constant.csv", D, {"A": [42.0] * N})
write("constant-panel.csv", D, {"A": [10.0] * N, "B": [20.0] * N})
write("all-na.csv", D, {"A": [None] * N})
write("na-and-constant.csv", D, {"A": [None] * N, "B": [7.5] * N})
# Gaps between consecutive rows.
G1 = bdays("2010-01-04", 150) + bdays("2016-01-04", 150)
write("gap-years.csv", G1, {"A": walk(N)})
cg = walk(N, 60)
write("curve-gap-years.csv", G1, {"C1": cg, "C2": [p * 1.02 for p in cg]})
G2 = bdays("2015-01-02", 150)
last = datetime.date.fromisoformat(G2[-1])
G2 += bdays((last + datetime.timedelta(days=120)).isoformat(), 150)
write("gap-4-months.csv", G2, {"A": walk(N)})
# Non-positive prices: every log return is NA.
write("negative.csv", D, {"A": [-p for p in walk(N)]})
write("non-positive.csv", D, {"A": [0.0 if i % 3 == 0 else -round(rng.uniform(1, 5), 2) for i in range(N)]})
cn = walk(N, 60)
write("curve-negative.csv", D, {"C1": [-p for p in cn], "C2": [-p * 1.02 for p in cn]})
# Sparse: one value every 10 rows, 30 in all, fewer than a 60-return risk window.
sp = walk(N)
write("sparse.csv", D, {"A": [v if i % 10 == 0 else None for i, v in enumerate(sp)]})
# Curves with an empty point.
cf = walk(N, 60)
write("curve-front-na.csv", D, {"C1": [None] * N, "C2": cf, "C3": [p * 1.01 for p in cf]})
write("curve-next-na.csv", D, {"C1": cf, "C2": [None] * N})
write("curve-single.csv", D, {"C1": walk(N, 60)})
# Moving for 61 rows, then flat: the P&L is defined and exactly 0.
def flat_tail(n, moving=61, p0=100.0):
    w = walk(moving, p0)
    return w + [w[-1]] * (n - moving)
write("flat-tail.csv", D, {"A": flat_tail(N)})
ft = flat_tail(N, p0=60.0)
write("curve-flat-tail.csv", D, {"C1": ft, "C2": [p * 1.01 for p in walk(N, 60)]})
# A tradable column next to a constant one and an empty one.
write("panel-mixed.csv", D, {"A": walk(N), "B": [20.0] * N, "C": [None] * N})
# A column with prices only in its last 40 % of rows.
mb = walk(N, 30)
write("panel-late.csv", D, {"A": walk(N), "B": [None if i < 180 else v for i, v in enumerate(mb)]})
