#!/usr/bin/env python3
"""Medians of an ab.sh directory per shape and binary: ops/s, p99 and p99.9, flush time and
the time writers spent stopped and slowed down."""
import collections, glob, json, os, statistics, sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
    label, side, _ = os.path.basename(f)[:-6].rsplit("-", 2)
    for line in open(f):
        r = json.loads(line)
        st = r.get("engine_stats") or {}
        stalls = st.get("stalls") or {}
        lat = next(iter((r.get("latency") or {}).values()), {})
        rows[(label, side, r["benchmark"])].append(
            (r["ops_per_sec"], st.get("flush_micros", 0) / 1e6,
             sum(v for k, v in stalls.items() if k.endswith("stop_micros")) / 1e6,
             sum(v for k, v in stalls.items() if k.endswith("slowdown_micros")) / 1e6,
             lat.get("p99_us", 0), lat.get("p999_us", 0)))
print("| shape | benchmark | binary | runs | ops/s (median, min-max) | p99 µs | p99.9 µs | flush s | stopped s | slowed s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (label, side, bench), v in sorted(rows.items()):
    ops = [x[0] for x in v]
    med = lambda i: statistics.median(x[i] for x in v)
    print(f"| {label} | {bench} | {side} | {len(v)} | {statistics.median(ops):,.0f} ({min(ops):,.0f}-{max(ops):,.0f}) | {med(4):.1f} | {med(5):.1f} | {med(1):.1f} | {med(2):.1f} | {med(3):.1f} |")
