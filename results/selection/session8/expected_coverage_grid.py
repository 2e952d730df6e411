import sys
sys.path.insert(0, "results/selection/session8")
from expected_coverage import *
P = ("tune",)
rows = []
for T in (0.75, 1.0, 1.25):
    for Ts in (0.5, 0.75, 1.0, 1.5):
        for W in (1.0, 1.5, 2.0, 3.0):
            for segz in (2.5, 3.0, 3.5, 4.0):
                r = score(alloc, P, T=T, W=W, soft=True, Ts=Ts, segz=segz)["tune"]
                rows.append((r, T, Ts, W, segz))
rows.sort(key=lambda x: -x[0][0])
for r in rows[:25]: print(r)
import collections
print("mean by T", {t: round(np.mean([r[0][0] for r in rows if r[1] == t]), 4) for t in (0.75, 1.0, 1.25)})
print("mean by Ts", {t: round(np.mean([r[0][0] for r in rows if r[2] == t]), 4) for t in (0.5, 0.75, 1.0, 1.5)})
print("mean by W", {t: round(np.mean([r[0][0] for r in rows if r[3] == t]), 4) for t in (1.0, 1.5, 2.0, 3.0)})
print("mean by segz", {t: round(np.mean([r[0][0] for r in rows if r[4] == t]), 4) for t in (2.5, 3.0, 3.5, 4.0)})

# held-out, once, for three configurations
from expected_coverage import *
for cfg in [dict(T=1.0, Ts=1.0, W=1.0, segz=3.5), dict(T=1.0, Ts=1.0, W=2.0, segz=3.5), dict(T=1.0, Ts=1.0, W=1.0, segz=3.0)]:
    print(cfg, score(alloc, soft=True, **cfg))
