#!/usr/bin/env python3
"""analyze.py FILE...: per file, readrandom rates and CPU per read by thread count and core
placement (both round trips under 200 ns: shared; both above: split; else mixed). The
first readrandom of each invocation (cold caches) is left out."""
import json, statistics, sys

for path in sys.argv[1:]:
    rows = [json.loads(line) for line in open(path) if line.strip()]
    groups = {}
    for i, r in enumerate(rows):
        if i % 5 == 0:
            continue
        rt = r.get("core_round_trip_ns") or []
        place = ("shared" if all(x < 200 for x in rt) else
                 "split" if all(x > 200 for x in rt) else "mixed")
        p = r["process"]
        cpu = (p["cpu_user_secs"] + p["cpu_sys_secs"]) / r["ops"] * 1e6
        groups.setdefault((place, r["threads"]), []).append((r["ops_per_sec"] / 1e3, cpu))
    print(path)
    for (place, t), v in sorted(groups.items()):
        rates = ", ".join(f"{x:.1f}" for x, _ in v)
        print(f"  {place:6} {t} thread(s): mean {statistics.mean(x for x, _ in v):.1f} K ops/s "
              f"(CPU per read {statistics.mean(c for _, c in v):.2f} µs) [{rates}]")
