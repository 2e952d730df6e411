import json, time, sys
import edgeindex
from edgeindex.selection import tools as TT
from edgeindex.selection.text import BM25Index, terms, query_terms
raw=[json.loads(l) for l in open('/tmp/anylang14-shapes/big5000/tools.jsonl')]
rows=[{"name":r["name"],"description":r["description"],"parameters":{"type":"object","properties":{p["name"]:{"type":p["type"],"description":p.get("description","")} for p in r["parameters"]}},"category":None,"tags":[]} for r in raw]
fields=[TT._fields(r) for r in rows]
try:
    from edgeindex import language; language.preload()
except Exception: pass
out=[]
for i in range(3):
    terms.cache_clear(); query_terms.cache_clear()
    t=time.process_time(); b=BM25Index(fields); out.append(time.process_time()-t)
qs=[json.loads(l)["query"] for l in open('/work/shared/data/tools-bfcl/queries.jsonl')][:300]
t=time.process_time()
for q in qs: b.scores(q)
sc=(time.process_time()-t)/len(qs)*1000
print(edgeindex.__file__, "build CPU s", [round(x,2) for x in out], "scores CPU ms/query %.3f" % sc)
