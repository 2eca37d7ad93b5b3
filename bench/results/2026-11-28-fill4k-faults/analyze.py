#!/usr/bin/env python3
"""Per file and engine: ops/s of each run, their mean, CPU seconds and core round trip."""
import collections, json, statistics, sys

for path in sys.argv[1:]:
    runs = collections.defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        p = r["process"]
        runs[r["engine"]].append((r["ops_per_sec"] / 1000, p["cpu_user_secs"] + p["cpu_sys_secs"],
                                  r.get("core_round_trip_ns") or [None]))
    for engine, rs in runs.items():
        ops = [x[0] for x in rs]
        print(f"{path} {engine}: mean {statistics.mean(ops):.1f} K ops/s; runs "
              + ", ".join(f"{o:.1f}" for o in ops)
              + "; CPU s " + ", ".join(f"{c:.2f}" for _, c, _ in rs)
              + "; round trip ns " + ", ".join(f"{t[0]:.0f}" if t[0] else "-" for _, _, t in rs))
