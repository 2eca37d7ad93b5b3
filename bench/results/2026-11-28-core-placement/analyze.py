#!/usr/bin/env python3
"""Groups the fills of run.sh by where the VM's two cores were: "shared" (a cache line's
round trip between them under 200 ns before and after the run), "split" (over 200 ns
before and after), or "moved" (one of each: left out). Prints, per engine and placement,
the mean 1-thread and 2-thread rates (number of runs) and the 2-thread scaling.

    analyze.py RESULTS.jsonl...
"""
import json
import os
import sys
from collections import defaultdict

# The placement of a run as the suite's summary judges it (one threshold, one place).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from summarize import placement  # noqa: E402

runs = defaultdict(list)
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            place = placement([r])
            if place is None:
                continue
            if place == "mixed":
                place = "moved"
            runs[(r["engine"], place, r["threads"])].append(r["ops_per_sec"])

print("| engine | cores | 1 thread ops/s (runs) | 2 threads ops/s (runs) | scaling |")
print("|---|---|---|---|---|")
for engine in sorted({k[0] for k in runs}):
    for place in ["shared", "split", "moved"]:
        one, two = runs.get((engine, place, 1), []), runs.get((engine, place, 2), [])
        if not one and not two:
            continue
        m1 = sum(one) / len(one) if one else None
        m2 = sum(two) / len(two) if two else None
        f = lambda m, n: "-" if m is None else f"{m / 1000:.0f} K ({n})"
        scaling = f"{m2 / m1:.2f}x" if m1 and m2 and place != "moved" else "-"
        print(f"| {engine} | {place} | {f(m1, len(one))} | {f(m2, len(two))} | {scaling} |")
