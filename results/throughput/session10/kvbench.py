import time, tempfile, statistics
from edgeindex.bindings.kv import DiskKV
d = tempfile.mkdtemp()
kv = DiskKV(d, namespace="cache")
kv.incr("seq:load-agents")
for i in range(2000): kv.put(f"result:{i}", {"x": i}, ttl=600)
con = kv._cache._con
def t(f, n=20000):
    out=[]
    for _ in range(5):
        m=time.process_time()
        for _ in range(n): f()
        out.append((time.process_time()-m)/n*1e6)
    return statistics.median(out)
print("kv.get seq us", t(lambda: kv.get("seq:load-agents", 0)))
print("pragma data_version us", t(lambda: con.execute("PRAGMA data_version").fetchone()))
cur = con.cursor()
print("pragma (cursor reuse) us", t(lambda: cur.execute("PRAGMA data_version").fetchone()))
print("select raw us", t(lambda: con.execute("SELECT value FROM Cache WHERE key = ? AND raw = 1", ("cache:seq:load-agents",)).fetchall()))
print("in_transaction", con.in_transaction, con.isolation_level)
