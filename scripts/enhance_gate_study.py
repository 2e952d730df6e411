import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    s = r["systems"]
    for base in ("text", "hybrid"):
        plain, prf = s.get(f"edgeindex-{base}"), s.get(f"edgeindex-{base}+prf")
        if not plain or not prf: continue
        ev = prf.get("enhancement", {}).get("per_query", {})
        rows = []
        for q, m in plain["per_query"].items():
            if q not in prf["per_query"]: continue
            d = prf["per_query"][q]["ndcg"] - m["ndcg"]
            rows.append((ev.get(q, {}).get("top", -1), ev.get(q, {}).get("words", -1), d))
        print(path.split("/")[-2], base, "n", len(rows), "mean delta %.4f" % (sum(x[2] for x in rows)/len(rows)),
              "applied", prf.get("enhancement", {}).get("applied"), prf.get("enhancement", {}).get("skipped"))
        for t in (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.01):
            gated = sum(x[2] for x in rows if x[0] <= t) / len(rows)
            print(f"   gate top<={t}: mean delta {gated:+.4f}  applied {sum(1 for x in rows if x[0] <= t)}")
        for w in (1,2,3,4,6,100):
            gated = sum(x[2] for x in rows if x[1] <= w) / len(rows)
            print(f"   gate words<={w}: mean delta {gated:+.4f}")
