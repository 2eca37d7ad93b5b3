#!/usr/bin/env python3
"""Summarizes a bench/tlsm.sh run: markdown tables for each figure, the targets with the
measured ratios, and SVG line plots. Standard library only.

    python3 bench/tlsm_summary.py bench/results/<date>-tlsm > summary.md
"""
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def label(r):
    c = r["config"]
    o = c.get("options", {})
    if o.get("preset") == "tlsm":
        m = o.get("nvm_table_method")
        t = o.get("nvm_tiering")
        name = f"tlsm {m}" if t == "none" else f"tlsm {t}"
        if r["benchmark"] == "reopen" and o.get("nvm_prefault") == "true":
            name += ", pool prefaulted"
        return name
    db = c.get("db") or ""
    name = "leveldb-nvm" if db.startswith("/dev/shm") else "leveldb"
    if o.get("block_format") == "prefix":
        name += " prefix"
    return name


def stat(r, *path, default=0):
    x = r
    for p in path:
        if not isinstance(x, dict) or p not in x:
            return default
        x = x[p]
    return x


def by(rows, bench):
    return {label(r): r for r in rows if r["benchmark"] == bench}


def svg(path, title, xlabel, ylabel, series, logx=False):
    """series: {name: [(x, y), ...]} -> a line chart."""
    import math

    w, h, m = 640, 400, 60
    pts = [p for s in series.values() for p in s]
    if not pts:
        return
    fx = (lambda x: math.log10(x)) if logx else (lambda x: x)
    xs = [fx(p[0]) for p in pts]
    ys = [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    y1 = max(ys) * 1.1 or 1
    x1 = x1 if x1 > x0 else x0 + 1
    sx = lambda x: m + (fx(x) - x0) / (x1 - x0) * (w - 2 * m)
    sy = lambda y: h - m - y / y1 * (h - 2 * m)
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w/2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{m}" y1="{h-m}" x2="{w-m}" y2="{h-m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h-m}" stroke="black"/>',
           f'<text x="{w/2}" y="{h-15}" text-anchor="middle">{xlabel}</text>',
           f'<text x="15" y="{h/2}" transform="rotate(-90 15 {h/2})" text-anchor="middle">{ylabel}</text>']
    for i in range(5):
        y = y1 * i / 4
        out.append(f'<text x="{m-5}" y="{sy(y)+4}" text-anchor="end">{y:.3g}</text>')
        out.append(f'<line x1="{m}" y1="{sy(y)}" x2="{w-m}" y2="{sy(y)}" stroke="#ddd"/>')
    for x in sorted({p[0] for p in pts}):
        out.append(f'<text x="{sx(x)}" y="{h-m+15}" text-anchor="middle">{x:g}</text>')
    for i, (name, s) in enumerate(sorted(series.items())):
        col = colors[i % len(colors)]
        s = sorted(s)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (col, " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)))
        for x, y in s:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{col}"/>')
        out.append(f'<text x="{w-m+5}" y="{m+15*i}" fill="{col}">{name}</text>'
                   if False else f'<text x="{m+10}" y="{m+15*i}" fill="{col}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def sizes(d, prefix):
    out = []
    for p in glob.glob(os.path.join(d, prefix + "-*.jsonl")):
        k = os.path.basename(p)[len(prefix) + 1:-6]
        out.append((int(k), p))
    return sorted(out)


def main(d):
    print(f"# TLSM reproduction ({os.path.basename(os.path.normpath(d))})\n")
    first = None
    targets = []

    # Fig. 5(a,b), Fig. 7(a,b)
    ws, rs = {}, {}
    print("## Methods (Fig. 5(a,b), Fig. 7(a,b)): 100 B values, 4 MiB memtable\n")
    print("| entries | engine | write µs/op | write p99 µs | read µs/op | stall s | compaction bytes written | flush bytes written |")
    print("|---|---|---|---|---|---|---|---|")
    last = None
    for n, p in sizes(d, "methods"):
        rows = load(p)
        first = first or rows[0]
        fills, reads = by(rows, "fillrandom"), by(rows, "readrandom")
        for name, f in fills.items():
            rd = reads.get(name)
            cbw = stat(f, "engine_stats", "compaction_bytes_written")
            fbw = stat(f, "engine_stats", "flush_bytes_written")
            print(f"| {n:,} | {name} | {f['micros_per_op']:.2f} | {stat(f,'latency','write','p99_us'):.1f} | "
                  f"{rd['micros_per_op'] if rd else float('nan'):.2f} | {f['stall_seconds']:.2f} | "
                  f"{cbw/2**20:,.1f} MiB | {fbw/2**20:,.1f} MiB |")
            ws.setdefault(name, []).append((n / 1e6, f["micros_per_op"]))
            if rd:
                rs.setdefault(name, []).append((n / 1e6, rd["micros_per_op"]))
        last = (n, fills, reads)
    print()
    if last:
        n, fills, reads = last
        t, b = fills.get("tlsm ps+bac+pb"), fills.get("leveldb-nvm")
        tr, br = reads.get("tlsm ps+bac+pb"), reads.get("leveldb-nvm")
        if t and b:
            targets.append(("write latency, tlsm / leveldb-nvm", t["micros_per_op"] / b["micros_per_op"], "≤ 0.6", t["micros_per_op"] / b["micros_per_op"] <= 0.6))
            c1 = stat(t, "engine_stats", "compaction_bytes_written")
            c2 = stat(b, "engine_stats", "compaction_bytes_written") or 1
            targets.append(("compaction bytes written, tlsm / leveldb-nvm", c1 / c2, "≤ 0.2", c1 / c2 <= 0.2))
            targets.append(("stall seconds, tlsm", t["stall_seconds"], "0", t["stall_seconds"] == 0))
        if tr and br:
            targets.append(("read latency, tlsm / leveldb-nvm", tr["micros_per_op"] / br["micros_per_op"], "≤ 0.5", tr["micros_per_op"] / br["micros_per_op"] <= 0.5))
        bp, bpr = fills.get("leveldb-nvm prefix"), reads.get("leveldb-nvm prefix")
        if t and bp:
            targets.append(("write latency, tlsm / leveldb-nvm prefix", t["micros_per_op"] / bp["micros_per_op"], "(≤ 0.6)", t["micros_per_op"] / bp["micros_per_op"] <= 0.6))
        if tr and bpr:
            targets.append(("read latency, tlsm / leveldb-nvm prefix", tr["micros_per_op"] / bpr["micros_per_op"], "(≤ 0.5)", tr["micros_per_op"] / bpr["micros_per_op"] <= 0.5))
    svg(os.path.join(d, "fig5a-write.svg"), "Fig. 5(a): write latency", "million entries", "µs/op", ws)
    svg(os.path.join(d, "fig5b-read.svg"), "Fig. 5(b): read latency", "million entries", "µs/op", rs)

    # Fig. 5(c,d)
    print("## Tiering (Fig. 5(c,d)): pool of", first and first["config"]["options"].get("nvm_capacity"), "bytes for the tlsm runs below\n") if False else None
    tw, tr_ = {}, {}
    rows_t = sizes(d, "tiering")
    if rows_t:
        print("## Tiering policies (Fig. 5(c,d)): data growing past the NVM pool\n")
        print("| entries | policy | pool | write µs/op | read µs/op | stall s | NVM tables at the end | moved to SSD | result |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n, p in rows_t:
            rows = load(p)
            fills, reads = by(rows, "fillrandom"), by(rows, "readrandom")
            for name, f in fills.items():
                rd = reads.get(name)
                cap = f["config"]["options"].get("nvm_capacity")
                nvm_files = sum(l.get("nvm_files", 0) for l in stat(f, "engine_stats", "levels", default=[]))
                moves = stat(f, "engine_stats", "nvm_tables", "tier_moves")
                print(f"| {n:,} | {name} | {int(cap)/2**20:.0f} MiB | {f['micros_per_op']:.2f} | "
                      f"{rd['micros_per_op'] if rd else float('nan'):.2f} | {f['stall_seconds']:.2f} | {nvm_files} | {moves} | ok |")
                tw.setdefault(name, []).append((n / 1e6, f["micros_per_op"]))
                if rd:
                    tr_.setdefault(name, []).append((n / 1e6, rd["micros_per_op"]))
        print()
        svg(os.path.join(d, "fig5c-tiering-write.svg"), "Fig. 5(c): write latency by tiering", "million entries", "µs/op", tw)
        svg(os.path.join(d, "fig5d-tiering-read.svg"), "Fig. 5(d): read latency by tiering", "million entries", "µs/op", tr_)

    # Fig. 5(e-h)
    vw, vr = {}, {}
    rows_v = sizes(d, "values")
    if rows_v:
        print("## Value sizes (Fig. 5(e-h)): the same bytes at every size, every level in NVM\n")
        print("| value B | engine | entries | write µs/op | read µs/op | write MB/s | stall s |")
        print("|---|---|---|---|---|---|---|")
        for v, p in rows_v:
            rows = load(p)
            fills, reads = by(rows, "fillrandom"), by(rows, "readrandom")
            for name, f in fills.items():
                rd = reads.get(name)
                print(f"| {v} | {name} | {f['ops']:,} | {f['micros_per_op']:.2f} | "
                      f"{rd['micros_per_op'] if rd else float('nan'):.2f} | {f['mb_per_sec']:.1f} | {f['stall_seconds']:.2f} |")
                vw.setdefault(name, []).append((v, f["micros_per_op"]))
                if rd:
                    vr.setdefault(name, []).append((v, rd["micros_per_op"]))
        print()
        svg(os.path.join(d, "fig5eg-values-write.svg"), "Fig. 5(e,g): write latency by value size", "value bytes (log)", "µs/op", vw, logx=True)
        svg(os.path.join(d, "fig5fh-values-read.svg"), "Fig. 5(f,h): read latency by value size", "value bytes (log)", "µs/op", vr, logx=True)

    # YCSB
    yp = os.path.join(d, "ycsb.jsonl")
    if os.path.exists(yp):
        rows = load(yp)
        engines = sorted({label(r) for r in rows})
        benches = [b for b in ["ycsb-load", "ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"]
                   if any(r["benchmark"] == b for r in rows)]
        print("## YCSB (K ops/s)\n")
        print("| workload | " + " | ".join(engines) + " |")
        print("|---|" + "---|" * len(engines))
        for b in benches:
            m = by(rows, b)
            print(f"| {b} | " + " | ".join(f"{m[e]['ops_per_sec']/1000:.1f}" if e in m else "-" for e in engines) + " |")
        print()

    # Reopen
    rp = os.path.join(d, "reopen.jsonl")
    if os.path.exists(rp):
        rows = load(rp)
        print("## Reopen\n")
        print("| engine | entries | reopen ms |")
        print("|---|---|---|")
        for name, r in by(rows, "reopen").items():
            print(f"| {name} | {r['config']['num']:,} | {r['elapsed_secs']*1000:.1f} |")
        print()

    fp = os.path.join(d, "failures.txt")
    if os.path.exists(fp):
        print("## Runs that failed\n")
        with open(fp) as f:
            for line in f:
                print(f"- {line.strip()}")
        print()

    if targets:
        print("## Targets (largest data size of the methods runs)\n")
        print("| target | measured | wanted | met |")
        print("|---|---|---|---|")
        for name, v, want, ok in targets:
            print(f"| {name} | {v:.2f} | {want} | {'yes' if ok else 'no'} |")
        print()
    if first:
        mach = first.get("machine", {})
        print(f"Machine: {mach.get('cores')} cores, {mach.get('cpu_model')}, kernel {mach.get('kernel')}; "
              f"release build; no sync; NVM emulated on /dev/shm (msync persistence).")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
