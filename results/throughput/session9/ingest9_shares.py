"""Inclusive shares of py-spy raw (collapsed) stacks: top functions, and named groups.

python shares.py FILE [--exclude-thread-with SUBSTR] [--top N] [--group NAME=substr1|substr2 ...]
A sample counts once for a function/group if any of its frames matches (inclusive)."""
import argparse
import collections
import re

parser = argparse.ArgumentParser()
parser.add_argument("file")
parser.add_argument("--exclude", action="append", default=[], help="drop samples whose stack contains this")
parser.add_argument("--only", action="append", default=[], help="keep only samples whose stack contains this")
parser.add_argument("--top", type=int, default=40)
parser.add_argument("--group", action="append", default=[])
parser.add_argument("--per", type=float, default=None, help="ms of CPU per sample unit (to print ms)")
args = parser.parse_args()

stacks = []
for line in open(args.file):
    line = line.rstrip("\n")
    if not line:
        continue
    stack, _, count = line.rpartition(" ")
    stacks.append((stack.split(";"), int(count)))

total_all = sum(c for _, c in stacks)
kept = [(s, c) for s, c in stacks
        if not any(any(x in f for f in s) for x in args.exclude)
        and (not args.only or any(any(x in f for f in s) for x in args.only))]
total = sum(c for _, c in kept)
print(f"samples: {total_all} in all, {total} kept")
func = collections.Counter()
for frames, count in kept:
    seen = set()
    for f in frames:
        name = re.sub(r":\d+\)$", ")", f)  # function (file), without line
        if name not in seen:
            seen.add(name)
            func[name] += count
for name, count in func.most_common(args.top):
    print(f"{100 * count / total:6.1f}%  {name[:160]}")
if args.group:
    print("groups (inclusive, of kept):")
    for g in args.group:
        label, _, subs = g.partition("=")
        pats = subs.split("|")
        n = sum(c for s, c in kept if any(any(p in f for p in pats) for f in s))
        print(f"{100 * n / total:6.1f}%  {label}")
