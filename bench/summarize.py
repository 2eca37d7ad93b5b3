#!/usr/bin/env python3
"""Summarizes `mezz bench --json` result files as one markdown table per workload file:
ops/s, p99 of the benchmark's main operation, stall seconds, write amplification (engine
statistics; /proc/self/io in parentheses), and ops/s as a ratio to RocksDB's (the release
build when it ran, else Debian's) in the same workload. Standard library only.

    python3 bench/summarize.py bench/results/<date>/*.jsonl > summary.md
"""
import json
import os
import sys


def fmt_ops(x):
    return f"{x / 1000:,.1f} K" if x >= 1000 else f"{x:,.0f}"


def main(paths):
    print("| workload | benchmark | engine | ops/s | p99 µs | stall s | WA | vs RocksDB |")
    print("|---|---|---|---|---|---|---|---|")
    versions = {}
    for path in paths:
        workload = os.path.splitext(os.path.basename(path))[0]
        rows = []
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
        ref = {}
        for r in rows:
            if r["engine"] == "rocksdb":
                ref[(r["benchmark"], r.get("point"))] = r["ops_per_sec"]
        for r in rows:
            versions[r["engine"]] = r.get("engine_version", "")
            lat = r.get("latency", {}).get(r.get("primary_op", ""), {})
            p99 = lat.get("p99_us")
            ei = r.get("engine_interval") or {}
            pr = r.get("process") or {}
            wa = ei.get("write_amplification")
            pwa = pr.get("write_amplification")
            wa_s = "-" if wa is None else f"{wa:.2f}"
            if pwa is not None and r.get("written_bytes", 0) > 0:
                wa_s += f" ({pwa:.2f})"
            base = ref.get((r["benchmark"], r.get("point")))
            ratio = f"{r['ops_per_sec'] / base:.2f}x" if base else "-"
            bench = r["benchmark"]
            if bench == "reopen":
                print(
                    f"| {workload} | reopen (recovery) | {r['engine']} | "
                    f"{r['elapsed_secs'] * 1e3:,.1f} ms | - | - | - | - |"
                )
                continue
            if r.get("point"):
                bench += f" @ {r['point']}"
            print(
                f"| {workload} | {bench} | {r['engine']} | {fmt_ops(r['ops_per_sec'])} | "
                f"{'-' if p99 is None else f'{p99:,.1f}'} | {r.get('stall_seconds', 0)} | "
                f"{wa_s} | {ratio} |"
            )
    print()
    print("Engines: " + "; ".join(f"{k} = {v}" for k, v in sorted(versions.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
