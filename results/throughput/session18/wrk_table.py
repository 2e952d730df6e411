import json, sys
for path in sys.argv[1:]:
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    out = {}
    for d in rows:
        if d.get("client") == "wrk" and d["phase"] in ("uncached", "semantic"):
            out[d["phase"]] = d
    u, s = out["uncached"], out["semantic"]
    cu, cs = u["cpu_ms_per_request"], s["cpu_ms_per_request"]
    print(f"{path.split('/')[-1]:24} uncached {u['req_per_s']:7.1f} p99 {u['p99_ms']:6.1f} cpu {cu['search']:.2f}+{cu['postgres']:.2f} | "
          f"semantic {s['req_per_s']:7.1f} p99 {s['p99_ms']:6.1f} cpu {cs['search']:.2f}+{cs['postgres']:.2f} | ratio {s['req_per_s']/u['req_per_s']:.2f}")
