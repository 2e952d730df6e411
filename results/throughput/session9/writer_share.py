"""Share of a py-spy raw recording's running samples inside TelemetryWriter._write, and within it in
psycopg's transaction (BEGIN/COMMIT), idle samples left out as scripts/profile_breakdown.py does.

    python3 results/throughput/session9/writer_share.py PROFILE.raw
"""

import re
import sys

IDLE = re.compile(r"^(_worker \(concurrent/futures/thread\.py|Condition\.wait|Event\.wait|\w*Selector\.select|"
                  r"_PollLikeSelector\.select|Queue\.get|wait_async \()")
for path in sys.argv[1:]:
    total = writer = transaction = 0
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        if IDLE.match(frames[-1]):
            continue
        total += int(n)
        if any("_write (" in f and "telemetry_writer" in f for f in frames):
            writer += int(n)
            transaction += int(n) * any("transaction" in f.lower() for f in frames)
    print(f"{path.split('/')[-1]}: {total} running samples; TelemetryWriter._write {100 * writer / total:.1f}%, "
          f"of which BEGIN/COMMIT (transaction) {100 * transaction / total:.1f}%")
