"""POST /search driven by wrk (a C client) with a different body per request (load_search.py).

The Python SDK client shares the machine's two cores with the worker and Postgres (~2 ms of CPU per
request), so the phases it drives measure the client too. wrk costs far less per request; with
one thread and a Lua ``request()`` that takes the next body of a file, each request can be a
different query in its own cache scope (uncached: guaranteed misses) or a paraphrase of a stored
answer (semantic hits).

Nothing is taken on trust: the Lua ``response()`` reads the answer's own ``"cache"`` field
("none" for a miss, "exact", "semantic") and counts each outcome, and the caller cross-checks the
count with the search worker's telemetry rows (one per search, with its cache outcome) written
during the phase. A body is never sent twice unless the run outlasts the file: then the repeats
show up as exact hits in both counts, and the phase is labelled as such rather than hidden.

wrk's own CPU is counted as the client's (``RUSAGE_CHILDREN`` of this process around the run).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import tempfile
from pathlib import Path

LUA = r"""
local bodies = {}
for line in io.lines(%(path)s) do bodies[#bodies + 1] = line end
local limit = %(limit)d          -- stop after this many answers (0: run for the duration)
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %(key)s"
sent, answered, none, exact, semantic, other, failed = 0, 0, 0, 0, 0, 0, 0

local threads = {}
function setup(thread) table.insert(threads, thread) end

-- wrk calls request() once on the first thread before the run to check the request (it counts
-- pipelined requests), and sends nothing of that call: so the first call does not advance
local checked = false
function request()
  if not checked then
    checked = true
    return wrk.format(nil, nil, nil, bodies[1])
  end
  sent = sent + 1
  return wrk.format(nil, nil, nil, bodies[((sent - 1) %% #bodies) + 1])
end

function response(status, headers, body)
  answered = answered + 1
  if status ~= 200 then failed = failed + 1
  else
    -- the last "cache" field of the answer (it follows the results)
    local kind = body:match('.*"cache"%%s*:%%s*"(%%a+)"')
    if kind == "none" then none = none + 1
    elseif kind == "exact" then exact = exact + 1
    elseif kind == "semantic" then semantic = semantic + 1
    else other = other + 1 end
  end
  if limit > 0 and answered >= limit then wrk.thread:stop() end
end

function done(summary, latency, requests)
  for _, t in ipairs(threads) do
    io.write(string.format("COUNTS sent %%d answered %%d none %%d exact %%d semantic %%d other %%d failed %%d\n",
      t:get("sent"), t:get("answered"), t:get("none"), t:get("exact"), t:get("semantic"),
      t:get("other"), t:get("failed")))
  end
end
"""


def wrk_ms(text: str | None) -> float | None:
    """A latency as wrk prints it ("812.00us", "1.52ms", "2.01s") in ms; None if absent or unreadable."""
    if text is None:
        return None
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not match:
        return None
    return float(match.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[match.group(2)]


def run(url: str, key: str, bodies: list[dict], *, agents: int, seconds: float, limit: int = 0) -> dict:
    """One wrk run (one thread, ``agents`` connections) over ``bodies`` in order; what it printed, parsed.

    Returns req_per_s, p50_ms/p90_ms/p99_ms (wrk's own latency percentiles), requests (answered),
    counts (the Lua tally: sent, answered, none, exact, semantic, other, failed) and client_cpu_s
    (wrk's user + system CPU seconds)."""
    with tempfile.TemporaryDirectory(prefix="wrk-search-") as folder:
        lines = Path(folder) / "bodies.ndjson"
        lines.write_text("".join(json.dumps(body, separators=(",", ":")) + "\n" for body in bodies))
        script = Path(folder) / "search.lua"
        script.write_text(LUA % {"path": json.dumps(str(lines)), "limit": limit, "key": key})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(["wrk", "-t1", f"-c{agents}", f"-d{seconds:.0f}s", "--latency", "-s", str(script),
                              f"{url}/search"], capture_output=True, text=True, check=True).stdout
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = dict(re.findall(r"^\s+(50|90|99)%\s+(\S+)$", out, re.MULTILINE))
    rate = re.search(r"Requests/sec:\s+(\S+)", out)
    counts_line = re.search(r"^COUNTS (.*)$", out, re.MULTILINE)
    counts: dict[str, int] = {}
    if counts_line:
        words = counts_line.group(1).split()
        counts = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
    return {"req_per_s": float(rate.group(1)) if rate else 0.0, "p50_ms": wrk_ms(found.get("50")),
            "p90_ms": wrk_ms(found.get("90")), "p99_ms": wrk_ms(found.get("99")),
            "requests": counts.get("answered", 0), "counts": counts,
            "client_cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "load": os.getloadavg()[0], "raw": out}


def telemetry_outcomes(dsn: str, since: str) -> dict[str, int]:
    """The search worker's own count of searches by cache outcome, from its telemetry rows since ``since``
    (a Postgres timestamp): the server side of the Lua tally."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT cache, count(*) FROM search_telemetry WHERE created_at >= %s::timestamptz "
                            "GROUP BY cache", (since,)).fetchall()
    return {cache: int(count) for cache, count in rows}


def telemetry_alphas(dsn: str, since: str) -> set[float]:
    """The alphas of the searches answered uncached since ``since`` (a unique alpha per request makes
    its scope): the answers that were computed and stored."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT alpha FROM search_telemetry WHERE created_at >= %s::timestamptz "
                            "AND cache = 'none'", (since,)).fetchall()
    return {round(float(alpha), 6) for (alpha,) in rows}


def database_now(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return str(conn.execute("SELECT clock_timestamp()::text").fetchone()[0])
