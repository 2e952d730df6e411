"""wrk lines of load_search full runs: per processes and agents, uncached/semantic/exact with CPU."""
import json, sys
for f in sys.argv[1:]:
    print("==", f)
    for line in open(f):
        if not line.startswith("{"): continue
        d = json.loads(line)
        if d.get("client") != "wrk": continue
        c = d.get("cpu_ms_per_request", {})
        print(f"  p{d['processes']} a{d['agents']} {d['phase']:9} {d['req_per_s']:8.1f}/s p50 {d['p50_ms']:6.2f} p99 {d['p99_ms']:7.2f}  cpu {c.get('search',0):.2f}+{c.get('postgres',0):.2f}")
