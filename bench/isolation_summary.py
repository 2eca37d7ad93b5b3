#!/usr/bin/env python3
"""Summarises a bench/isolation.sh run: per placement, read throughput in each YCSB mix as a
share of its read-only throughput, total throughput against `striped`, and the read tail
under readwhilewriting against `striped`'s. Writes summary.json and summary.md next to the
results. Usage: isolation_summary.py DIR"""

import json
import sys
from pathlib import Path

PLACEMENTS = ["striped", "per_file", "isolated", "isolated-wide"]
MIXES = [("ycsb-c", 100), ("ycsb-r90", 90), ("ycsb-a", 50), ("ycsb-r10", 10)]


def load(path):
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                out[r["benchmark"]] = r
    return out


def read_rate(r):
    lat = r.get("latency", {}).get("read")
    return lat["count"] / r["elapsed_secs"] if lat and r["elapsed_secs"] > 0 else 0.0


def main():
    d = Path(sys.argv[1])
    summary = {}
    for p in PLACEMENTS:
        db = load(d / f"{p}-db.jsonl")
        ycsb = load(d / f"{p}-ycsb.jsonl")
        if not db and not ycsb:
            continue
        s = {"mixes": {}}
        ro = read_rate(ycsb["ycsb-c"]) if "ycsb-c" in ycsb else 0.0
        for name, pct in MIXES:
            if name not in ycsb:
                continue
            r = ycsb[name]
            s["mixes"][pct] = {
                "benchmark": name,
                "ops_per_sec": r["ops_per_sec"],
                "read_ops_per_sec": read_rate(r),
                "read_share_of_read_only": read_rate(r) / ro if ro else None,
                "read_p99_us": r["latency"].get("read", {}).get("p99_us"),
            }
        for name in ["fillrandom", "readrandom", "readwhilewriting"]:
            if name in db:
                r = db[name]
                s[name] = {
                    "ops_per_sec": r["ops_per_sec"],
                    "p99_us": r["latency"].get(r["primary_op"], {}).get("p99_us"),
                    "p999_us": r["latency"].get(r["primary_op"], {}).get("p999_us"),
                    "write_ops": r["latency"].get("write", {}).get("count"),
                    "elapsed_secs": r["elapsed_secs"],
                }
        summary[p] = s

    base = summary.get("striped")
    for p, s in summary.items():
        if not base:
            break
        rww, brww = s.get("readwhilewriting"), base.get("readwhilewriting")
        if rww and brww and brww["p99_us"]:
            s["rww_read_p99_vs_striped"] = rww["p99_us"] / brww["p99_us"]
        tot = {}
        for pct, m in s["mixes"].items():
            b = base["mixes"].get(pct)
            if b and b["ops_per_sec"]:
                tot[pct] = m["ops_per_sec"] / b["ops_per_sec"]
        s["total_throughput_vs_striped"] = tot

    (d / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    lines = [
        "| placement | read share at 90 / 50 / 10 % reads (of read-only) | total ops/s vs striped at 90 / 50 / 10 % | readwhilewriting read p99 µs (vs striped) | readwhilewriting reads/s | fillrandom ops/s |",
        "|---|---|---|---|---|---|",
    ]
    for p, s in summary.items():
        share = " / ".join(
            f"{s['mixes'][x]['read_share_of_read_only']:.1%}"
            if x in s["mixes"] and s["mixes"][x]["read_share_of_read_only"] is not None
            else "-"
            for x in (90, 50, 10)
        )
        tot = " / ".join(
            f"{s.get('total_throughput_vs_striped', {}).get(x, 0):.2f}x" for x in (90, 50, 10)
        )
        rww = s.get("readwhilewriting", {})
        fill = s.get("fillrandom", {})
        rel = s.get("rww_read_p99_vs_striped")
        lines.append(
            f"| {p} | {share} | {tot} | {rww.get('p99_us', 0):,.0f} ({rel:.2f}x) | "
            f"{rww.get('ops_per_sec', 0):,.0f} | {fill.get('ops_per_sec', 0):,.0f} |"
            if rel is not None
            else f"| {p} | {share} | {tot} | {rww.get('p99_us', 0):,.0f} | "
            f"{rww.get('ops_per_sec', 0):,.0f} | {fill.get('ops_per_sec', 0):,.0f} |"
        )
    fig1 = d / "fig1.jsonl"
    if fig1.exists():
        lines += ["", "Device model alone (Fig. 1 shape), read throughput as a share of read-only:", ""]
        lines += ["| read % | conventional (striped) | isolated 2+2 units |", "|---|---|---|"]
        rows = {}
        for line in fig1.read_text().splitlines():
            r = json.loads(line)
            rows.setdefault(r["read_pct"], {})[r["arrangement"]] = r["read_share_of_read_only"]
        for pct in sorted(rows, reverse=True):
            row = rows[pct]
            lines.append(
                f"| {pct} | {row.get('shared', 0):.1%} | {row.get('isolated-2+2', 0):.1%} |"
            )
    (d / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
