#!/usr/bin/env python3
"""Summarizes a bench/matrixkv.sh run: markdown tables for each experiment (Fig. 10(a),
Fig. 12, Fig. 13, Table 2, Fig. 16, cross-row hints), the targets with the measured values,
and SVG plots. Standard library only.

    python3 bench/matrixkv_summary.py bench/results/<date>-matrixkv > summary.md

Write amplification is reported three ways, because the engines count different things:
- "engine WA": what each engine's own counters call storage writes, divided by user bytes
  (the JSON's engine_interval.write_amplification). RocksDB: WAL + flush + compaction bytes,
  wherever the files are (for rocksdb-l0-nvm the WAL, the flushes and the L0->L1
  compactions go to NVM). Mezzanine: WAL + SST flush + compaction bytes; the WAL is counted
  even when it is in NVM (matrixkv), rows written into the matrix container are not
  (matrix.row_bytes_written), nor are NVM memtable inserts (novelsm). LevelDB: its
  compaction statistics plus an estimate of the WAL.
- "SSD WA": bytes the process wrote to files on the disk (write_bytes of /proc/self/io over
  the fill and the settling after it; writes to the memory file system that emulates NVM
  are not counted) divided by user bytes. The same measure for every engine: this is the
  paper's Fig. 13 ("data written to SSDs" over data from users).
- "NVM bytes": for Mezzanine, bytes persisted to the NVM pool (WAL in NVM, rows, NVM
  memtables), per user byte.
"""
import glob
import json
import math
import os
import sys

ENGINES = ["mezzanine:matrixkv", "mezzanine:matrixkv (4 MiB tables)",
           "mezzanine:matrixkv (2048 MiB container)", "rocksdb-l0-nvm", "rocksdb", "leveldb-nvm",
           "mezzanine:novelsm", "mezzanine:leveldb"]
COLORS = ["#d62728", "#1f77b4", "#7f7f7f", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
          "#17becf"]
MIB = 1 << 20


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def get(r, *path, default=None):
    x = r
    for p in path:
        if not isinstance(x, dict) or p not in x or x[p] is None:
            return default
        x = x[p]
    return x


def order(names):
    return sorted(names, key=lambda n: (ENGINES.index(n) if n in ENGINES else len(ENGINES), n))


def label(r):
    """The engine, and for matrixkv a table size other than the preset's."""
    e = r["engine"]
    t = get(r, "config", "options", "target_file_size")
    c = get(r, "config", "options", "matrix_bytes")
    if e == "mezzanine:matrixkv" and t and int(t) != 64 * MIB:
        e += f" ({int(t) // MIB} MiB tables)"
    if e == "mezzanine:matrixkv" and c and int(c) != 512 * MIB:
        e += f" ({int(c) // MIB} MiB container)"
    return e


def by_engine(rows, bench):
    return {label(r): r for r in rows if r["benchmark"] == bench}


def opt(r, name):
    return get(r, "config", "options", name)


def k(x):
    return f"{x / 1000:,.1f} K"


def us(x):
    return "-" if x is None else f"{x:,.1f}"


def mib(b):
    return "-" if b is None else f"{b / MIB:,.0f} MiB"


def ratio(a, b):
    return a / b if a is not None and b else None


def fx(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def user_bytes(r):
    return get(r, "engine_interval", "user_bytes_written") or r.get("written_bytes") or 0


def ssd_wa(r):
    return get(r, "process", "write_amplification")


def engine_wa(r):
    return get(r, "engine_interval", "write_amplification")


def nvm_wa(r):
    b = get(r, "engine_interval", "nvm_bytes_written")
    u = user_bytes(r)
    return b / u if b and u and r["engine"].startswith("mezzanine") else None


# ---- SVG ----

def nice_ticks(lo, hi, n=5):
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9:
        out.append(t)
        t += step
    return out


def tick(y):
    if abs(y) >= 1e4:
        return f"{y / 1000:,.4g} K"
    return f"{y:,.4g}"


def svg_lines(path, title, xlabel, ylabel, series, logx=False, logy=False, dots=True):
    """series: {name: [(x, y), ...]} -> a line chart; names keep the given order."""
    w, h, m, right = 720, 420, 70, 170
    pts = [p for s in series.values() for p in s if (not logy or p[1] > 0)]
    if not pts:
        return
    tx = (lambda x: math.log10(x)) if logx else (lambda x: x)
    ty = (lambda y: math.log10(y)) if logy else (lambda y: y)
    xs = [tx(p[0]) for p in pts]
    ys = [ty(p[1]) for p in pts]
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    if logy:
        y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
        y1 = y1 if y1 > y0 else y0 + 1
    else:
        y0, y1 = 0.0, (max(ys) * 1.1) or 1.0
    sx = lambda x: m + (tx(x) - x0) / (x1 - x0) * (w - m - right)
    sy = lambda y: h - m - (ty(y) - y0) / (y1 - y0) * (h - 2 * m)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{(w - right) / 2 + m / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{m}" y1="{h - m}" x2="{w - right}" y2="{h - m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>',
           f'<text x="{(w - right) / 2 + m / 2}" y="{h - 20}" text-anchor="middle">{xlabel}</text>',
           f'<text x="16" y="{h / 2}" transform="rotate(-90 16 {h / 2})" text-anchor="middle">{ylabel}</text>']
    yt = [10 ** e for e in range(int(y0), int(y1) + 1)] if logy else nice_ticks(0, y1)
    for y in yt:
        out.append(f'<line x1="{m}" y1="{sy(y):.1f}" x2="{w - right}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{m - 5}" y="{sy(y) + 4:.1f}" text-anchor="end">{tick(y)}</text>')
    if logx:
        xt = sorted({p[0] for p in pts})
        if len(xt) > 10:
            xt = [10 ** e for e in range(math.ceil(x0), math.floor(x1) + 1)]
    else:
        xt = nice_ticks(x0, x1, 8)
    for x in xt:
        out.append(f'<text x="{sx(x):.1f}" y="{h - m + 16}" text-anchor="middle">{x:g}</text>')
    for i, (name, s) in enumerate(series.items()):
        col = COLORS[i % len(COLORS)]
        s = sorted(p for p in s if not logy or p[1] > 0)
        if not s:
            continue
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>'
                   % (col, " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)))
        if dots:
            for x, y in s:
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{col}"/>')
        out.append(f'<rect x="{w - right + 10}" y="{m + 18 * i - 9}" width="12" height="3" fill="{col}"/>')
        out.append(f'<text x="{w - right + 27}" y="{m + 18 * i}" fill="black">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def svg_bars(path, title, ylabel, groups, names):
    """groups: [(group label, {name: value})]; one bar per name in each group."""
    w, h, m, right = 720, 420, 70, 170
    vals = [v for _, g in groups for v in g.values() if v is not None]
    if not vals:
        return
    y1 = max(vals) * 1.15 or 1.0
    sy = lambda y: h - m - y / y1 * (h - 2 * m)
    gw = (w - m - right) / max(len(groups), 1)
    bw = gw * 0.8 / max(len(names), 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{(w - right) / 2 + m / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{m}" y1="{h - m}" x2="{w - right}" y2="{h - m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>',
           f'<text x="16" y="{h / 2}" transform="rotate(-90 16 {h / 2})" text-anchor="middle">{ylabel}</text>']
    for y in nice_ticks(0, y1):
        out.append(f'<line x1="{m}" y1="{sy(y):.1f}" x2="{w - right}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{m - 5}" y="{sy(y) + 4:.1f}" text-anchor="end">{tick(y)}</text>')
    for gi, (label, g) in enumerate(groups):
        gx = m + gi * gw + gw * 0.1
        for i, name in enumerate(names):
            v = g.get(name)
            if v is None:
                continue
            col = COLORS[i % len(COLORS)]
            x = gx + i * bw
            out.append(f'<rect x="{x:.1f}" y="{sy(v):.1f}" width="{bw * 0.9:.1f}" height="{h - m - sy(v):.1f}" fill="{col}"/>')
            out.append(f'<text x="{x + bw * 0.45:.1f}" y="{sy(v) - 3:.1f}" text-anchor="middle" font-size="10">{v:.3g}</text>')
        out.append(f'<text x="{m + gi * gw + gw / 2:.1f}" y="{h - m + 16}" text-anchor="middle">{label}</text>')
    for i, name in enumerate(names):
        col = COLORS[i % len(COLORS)]
        out.append(f'<rect x="{w - right + 10}" y="{m + 18 * i - 10}" width="12" height="12" fill="{col}"/>')
        out.append(f'<text x="{w - right + 27}" y="{m + 18 * i}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


# ---- sections ----

def main(d):
    targets = []
    first = None
    print(f"# MatrixKV reproduction ({os.path.basename(os.path.normpath(d))})\n")

    # Engines and builds.
    seen = {}
    for p in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
        for r in load(p):
            first = first or r
            seen.setdefault(label(r), r.get("engine_version"))
    if seen:
        print("Engines and builds: " + "; ".join(f"`{e}` {seen[e]}" for e in order(seen)) + ".\n")

    # ---- Fig. 12, Fig. 13, Fig. 10(a) at 4 KiB: the long fill ----
    fill = by_engine(load(os.path.join(d, "fill.jsonl")), "fillrandom")
    if fill:
        f0 = next(iter(fill.values()))
        n, v = f0["config"]["num"], f0["config"]["value_size"]
        print(f"## Long random fill: {n:,} entries of {v} B values "
              f"({n * (v + 16) / 1e9:.2f} GB; Fig. 10(a) at 4 KiB, Fig. 12, Fig. 13)\n")
        base = fill.get("rocksdb-l0-nvm")
        print("| engine | ops/s | MB/s | vs rocksdb-l0-nvm | p99 µs | p99.9 µs | max ms | stall s | slowest second (ops/s) | engine stall s | settle s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for e in order(fill):
            r = fill[e]
            tl = r.get("timeline_ops_per_sec") or []
            full = tl[:-1] if len(tl) > 1 else tl  # the last second is partial
            lat = get(r, "latency", "write", default={})
            print(f"| {e} | {k(r['ops_per_sec'])} | {r['mb_per_sec']:.1f} | "
                  f"{fx(ratio(r['ops_per_sec'], base and base['ops_per_sec']), '{:.2f}x')} | "
                  f"{us(lat.get('p99_us'))} | {us(lat.get('p999_us'))} | {lat.get('max_us', 0) / 1000:,.1f} | "
                  f"{r['stall_seconds']} | {min(full) if full else '-':,} | "
                  f"{(get(r, 'engine_interval', 'stall_micros') or 0) / 1e6:.1f} | {r.get('settle_secs', 0):.1f} |")
        print()
        print("Stall s = whole seconds whose throughput fell under half the run's mean (the "
              "harness's definition); engine stall s = time writers spent delayed or stopped by "
              "the engine's own slowdown and stop triggers (RocksDB: rocksdb.stall.micros; "
              "LevelDB reports none).\n")
        print("**Write amplification (Fig. 13)** on the same fill, including the settling "
              "after it (the compactions the fill left pending):\n")
        print("| engine | SSD WA (block device) | SSD bytes | engine WA | NVM bytes per user byte | rows written (matrixkv) | SSD space at the end | NVM space at the end |")
        print("|---|---|---|---|---|---|---|---|")
        for e in order(fill):
            r = fill[e]
            rows = get(r, "engine_stats", "matrix", "row_bytes_written")
            print(f"| {e} | {fx(ssd_wa(r))} | {(get(r, 'process', 'storage_write_bytes') or 0) / MIB:,.0f} MiB | "
                  f"{fx(engine_wa(r))} | {fx(nvm_wa(r))} | "
                  f"{mib(rows) if rows else '-'} | "
                  f"{(get(r, 'space', 'db_bytes') or 0) / MIB:,.0f} MiB | "
                  f"{mib(get(r, 'space', 'nvm_bytes'))} |")
        print()
        # Per-level layout of the Mezzanine engines.
        print("Levels at the end (Mezzanine engines; MiB, L0 of matrixkv = its rows):\n")
        print("| engine | " + " | ".join(f"L{i}" for i in range(5)) + " | compaction MiB written | columns |")
        print("|---|" + "---|" * 7)
        for e in order(fill):
            lv = get(fill[e], "engine_stats", "levels")
            if not isinstance(lv, list):
                continue
            cols = get(fill[e], "engine_stats", "matrix", "columns")
            print(f"| {e} | " + " | ".join(f"{l['bytes'] / MIB:,.0f}" for l in lv[:5]) +
                  f" | {(get(fill[e], 'engine_stats', 'compaction_bytes_written') or 0) / MIB:,.0f} | "
                  f"{cols if get(fill[e], 'engine_stats', 'matrix', 'capacity_bytes') else '-'} |")
        print()
        print("Where the Mezzanine engines' writers waited (s), and what their flushes wrote:\n")
        print("| engine | L0 slowdown | L0 stop | memtable full | flushes | into rows | into L0 SSTs | rows at the end |")
        print("|---|---|---|---|---|---|---|---|")
        for e in order(fill):
            es = get(fill[e], "engine_stats")
            st = get(es, "stalls")
            if not isinstance(st, dict):
                continue
            mx = get(es, "matrix", default={})
            print(f"| {e} | {st.get('l0_slowdown_micros', 0) / 1e6:.1f} | {st.get('l0_stop_micros', 0) / 1e6:.1f} | "
                  f"{st.get('memtable_stop_micros', 0) / 1e6:.1f} | {es.get('flushes')} | "
                  f"{mib(mx.get('row_bytes_written')) if mx.get('capacity_bytes') else '-'} | "
                  f"{mib(es.get('flush_bytes_written'))} | {mx.get('rows') if mx.get('capacity_bytes') else '-'} |")
        print()
        svg_lines(os.path.join(d, "fig12-timeline.svg"),
                  f"Fig. 12: random fill of {n * (v + 16) / 1e9:.1f} GB (4 KiB values), throughput per second",
                  "seconds", "ops/s",
                  {e: [(i + 0.5, x) for i, x in enumerate((fill[e].get('timeline_ops_per_sec') or [])[:-1])]
                   for e in order(fill)}, dots=False)
        svg_bars(os.path.join(d, "fig13-wa.svg"), "Fig. 13: write amplification of the random fill",
                 "bytes written / user bytes",
                 [("SSD (block device)", {e: ssd_wa(fill[e]) for e in fill}),
                  ("engine-counted", {e: engine_wa(fill[e]) for e in fill})], order(fill))
        m, b = fill.get("mezzanine:matrixkv"), base
        if m and b:
            x = m["ops_per_sec"] / b["ops_per_sec"]
            targets.append(("random 4 KiB write throughput, matrixkv / rocksdb-l0-nvm",
                            f"{x:.2f}x ({k(m['ops_per_sec'])} / {k(b['ops_per_sec'])} ops/s)", "≥ 4x", x >= 4))
        if m:
            targets.append(("stall seconds of matrixkv in the fill", f"{m['stall_seconds']}", "0",
                            m["stall_seconds"] == 0))
            w = ssd_wa(m)
            if w is not None:
                targets.append(("SSD write amplification of matrixkv", f"{w:.2f}", "≤ 1.5", w <= 1.5))
            r = fill.get("rocksdb")
            if w is not None and r and ssd_wa(r):
                targets.append(("SSD WA, rocksdb / matrixkv (paper: 2.56x)", f"{ssd_wa(r) / w:.2f}x",
                                "(2.56x)", ssd_wa(r) / w >= 2.56))

    # ---- Fig. 10(a): value sizes ----
    vals = {}
    for p in glob.glob(os.path.join(d, "values-*.jsonl")):
        v = int(os.path.basename(p)[7:-6])
        vals[v] = by_engine(load(p), "fillrandom")
    if vals:
        sizes = sorted(vals)
        names = order({e for m in vals.values() for e in m})
        tot = next(iter(vals[sizes[0]].values()))
        tb = tot["config"]["num"] * (tot["config"]["value_size"] + 16)
        print(f"## Random write throughput by value size (Fig. 10(a)): {tb / MIB:,.0f} MiB of "
              f"entries at every size\n")
        print("MB/s (ops/s in K), and ratio to rocksdb-l0-nvm:\n")
        print("| value | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for v in sizes:
            m = vals[v]
            b = m.get("rocksdb-l0-nvm")
            cells = []
            for e in names:
                r = m.get(e)
                if not r:
                    cells.append("-")
                    continue
                rr = ratio(r["ops_per_sec"], b and b["ops_per_sec"])
                cells.append(f"{r['mb_per_sec']:.1f} ({r['ops_per_sec'] / 1000:,.1f} K){'' if rr is None else f', {rr:.2f}x'}")
            print(f"| {v} B ({next(iter(m.values()))['config']['num']:,}) | " + " | ".join(cells) + " |")
        print()
        print("Stall seconds / SSD WA per point:\n")
        print("| value | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for v in sizes:
            m = vals[v]
            print(f"| {v} B | " + " | ".join(
                f"{m[e]['stall_seconds']} / {fx(ssd_wa(m[e]))}" if e in m else "-" for e in names) + " |")
        print()
        svg_lines(os.path.join(d, "fig10a-values.svg"),
                  f"Fig. 10(a): random write throughput, {tb / MIB:,.0f} MiB per point",
                  "value bytes (log)", "MB/s",
                  {e: [(v, vals[v][e]["mb_per_sec"]) for v in sizes if e in vals[v]] for e in names},
                  logx=True)

    # ---- Table 2: open-loop YCSB A ----
    yrows = load(os.path.join(d, "ycsb.jsonl"))
    if yrows:
        load_ = by_engine(yrows, "ycsb-load")
        a = by_engine(yrows, "ycsb-a")
        a0 = next(iter(a.values()), None) or next(iter(load_.values()))
        c = a0["config"]
        print(f"## Tail latency, open-loop YCSB A (Table 2): {c['num']:,} records of "
              f"{c.get('ycsb_record_size')} B loaded, then {c['ops']:,} requests at "
              f"{c.get('rate'):,} requests/s (50 % reads, 50 % updates, zipfian)\n")
        print("Latency from each request's intended start (µs; a stall shows as the queue it "
              "builds); service = time inside the engine only:\n")
        print("| engine | kind | mean | p90 | p99 | p99.9 | max | service p99 | service p99.9 |")
        print("|---|---|---|---|---|---|---|---|---|")
        for e in order(a):
            for kind in ("read", "update"):
                l = get(a[e], "latency", kind, default={})
                s = get(a[e], "service_latency", kind, default={})
                print(f"| {e} | {kind} | {us(l.get('mean_us'))} | {us(l.get('p90_us'))} | {us(l.get('p99_us'))} | "
                      f"{us(l.get('p999_us'))} | {us(l.get('max_us'))} | {us(s.get('p99_us'))} | {us(s.get('p999_us'))} |")
        print()
        print("| engine | load ops/s | load insert p99 µs | A ops/s | A stall s | A SSD WA |")
        print("|---|---|---|---|---|---|")
        for e in order(set(a) | set(load_)):
            lo, ar = load_.get(e), a.get(e)
            print(f"| {e} | {k(lo['ops_per_sec']) if lo else '-'} | "
                  f"{us(get(lo, 'latency', 'insert', 'p99_us')) if lo else '-'} | "
                  f"{k(ar['ops_per_sec']) if ar else '-'} | {ar['stall_seconds'] if ar else '-'} | "
                  f"{fx(ssd_wa(ar)) if ar else '-'} |")
        print()
        svg_lines(os.path.join(d, "table2-ycsba-update-cdf.svg"),
                  "Table 2: open-loop YCSB A, update latency CDF", "latency µs (log)", "quantile",
                  {e: [(x, q) for x, q in (get(a[e], "latency_cdf", "update") or []) if x > 0]
                   for e in order(a)}, logx=True, dots=False)
        m, r = a.get("mezzanine:matrixkv"), a.get("rocksdb")
        if m and r:
            for kind in ("read", "update"):
                for pct, want, lim in (("p99_us", "≤ 0.2", 0.2), ("p999_us", "≤ 0.1", 0.1)):
                    x, y = get(m, "latency", kind, pct), get(r, "latency", kind, pct)
                    if x is not None and y:
                        targets.append((f"YCSB A {kind} {pct[:-3].replace('p999', 'p99.9')}, matrixkv / rocksdb",
                                        f"{x / y:.2f}x ({x:,.1f} / {y:,.1f} µs)", want, x / y <= lim))

    # ---- Fig. 16: narrow and wide L1 ----
    f16 = [r for r in load(os.path.join(d, "fig16.jsonl")) if r["benchmark"] == "fillrandom"]
    if f16:
        cap = int(opt(f16[0], "matrix_bytes") or 0)
        print(f"## Narrow and wide L1 for matrixkv (Fig. 16): the same fill, container "
              f"{cap / MIB:,.0f} MiB\n")
        print("| L1 (max_bytes_for_level_base) | ops/s | stall s | p99.9 µs | SSD WA | L0 (rows) MiB | L1 MiB | L2 MiB | L3 MiB | columns | compactions |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        bars = []
        for r in sorted(f16, key=lambda r: int(opt(r, "max_bytes_for_level_base"))):
            lb = int(opt(r, "max_bytes_for_level_base"))
            lv = get(r, "engine_stats", "levels", default=[])
            lvb = [l["bytes"] / MIB for l in lv] + [0] * 4
            print(f"| {lb / MIB:,.0f} MiB ({lb / cap if cap else 0:.3g} of the container) | {k(r['ops_per_sec'])} | "
                  f"{r['stall_seconds']} | {us(get(r, 'latency', 'write', 'p999_us'))} | {fx(ssd_wa(r))} | "
                  f"{lvb[0]:,.0f} | {lvb[1]:,.0f} | {lvb[2]:,.0f} | {lvb[3]:,.0f} | "
                  f"{get(r, 'engine_stats', 'matrix', 'columns')} | {get(r, 'engine_stats', 'compactions')} |")
            bars.append((f"L1 {lb / MIB:,.0f} MiB", r["ops_per_sec"] / 1000))
        print()
        if len(bars) == 2:
            print(f"Wide over narrow: {bars[1][1] / bars[0][1]:.2f}x the throughput (the paper: "
                  "+25 % for MatrixKV, while RocksDB lost 1.5-3x with a wide L1).\n")
        svg_bars(os.path.join(d, "fig16-l1.svg"), "Fig. 16: matrixkv, narrow and wide L1",
                 "K ops/s", [(lab, {"matrixkv": v}) for lab, v in bars], ["matrixkv"])

    # ---- Cross-row hints ----
    hr = load(os.path.join(d, "hints.jsonl"))
    if hr:
        fills = [r for r in hr if r["benchmark"] == "fillrandom"]
        reads = [r for r in hr if r["benchmark"] in ("readrandom", "seekrandom")]
        f0 = fills[0] if fills else reads[0]
        print(f"## Cross-row hints: reads and seeks in a container full of rows\n")
        print(f"fillrandom of {f0['config']['num']:,} entries of {f0['config']['value_size']} B "
              f"({int(opt(f0, 'write_buffer_size')) / MIB:.0f} MiB memtables, "
              f"matrix_switch_fraction={opt(f0, 'matrix_switch_fraction')}, so no column "
              f"compaction runs), then random point reads and random seeks (1 thread):\n")
        print("| benchmark | matrix_hints | rows | ops/s | mean µs | p50 µs | p99 µs | rows searched per op | narrowed by hints | comparisons per op | found |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        res = {}
        for r in reads:
            h = opt(r, "matrix_hints")
            b = r["benchmark"]
            # Point reads and seeks have their own counters, cumulative since open; the fill
            # does neither.
            pre = "" if b == "readrandom" else "seek_"
            mx = get(r, "engine_stats", "matrix", default={})
            fm = next((get(f, "engine_stats", "matrix", default={}) for f in fills
                       if opt(f, "matrix_hints") == h), {})
            n = r["ops"] or 1
            searched = mx.get(pre + "rows_searched", 0) - fm.get(pre + "rows_searched", 0)
            hinted = mx.get(pre + "rows_hinted", 0) - fm.get(pre + "rows_hinted", 0)
            comps = mx.get(pre + "comparisons", 0) - fm.get(pre + "comparisons", 0)
            l = get(r, "latency", "read" if b == "readrandom" else "seek", default={})
            res[(b, h)] = (r, comps / n)
            print(f"| {b} | {h} | {mx.get('rows')} | {k(r['ops_per_sec'])} | {us(l.get('mean_us'))} | "
                  f"{us(l.get('p50_us'))} | {us(l.get('p99_us'))} | {searched / n:.1f} | "
                  f"{100 * hinted / max(searched, 1):.1f} % | {comps / n:.1f} | {r['found']:,} of {r['ops']:,} |")
        print()
        groups = []
        for b, what in (("readrandom", "reads"), ("seekrandom", "seeks")):
            on, off = res.get((b, "true")), res.get((b, "false"))
            if on and off:
                print(f"Hints, {what}: {on[0]['ops_per_sec'] / off[0]['ops_per_sec']:.2f}x the "
                      f"throughput, {off[1] / max(on[1], 1e-9):.2f}x fewer key comparisons per op.\n")
                groups.append((what, {"hints on": on[0]["ops_per_sec"] / 1000,
                                       "hints off": off[0]["ops_per_sec"] / 1000}))
        if groups:
            svg_bars(os.path.join(d, "hints.svg"), "Cross-row hints: random reads and seeks in rows",
                     "K ops/s", groups, ["hints on", "hints off"])

    fp = os.path.join(d, "failures.txt")
    if os.path.exists(fp) and os.path.getsize(fp):
        print("## Runs that failed or were skipped\n")
        with open(fp) as f:
            for line in f:
                print(f"- {line.strip()}")
        print()

    if targets:
        print("## Targets\n")
        print("| target | measured | wanted | met |")
        print("|---|---|---|---|")
        for name, v, want, ok in targets:
            print(f"| {name} | {v} | {want} | {'yes' if ok else 'no'} |")
        print()

    if first:
        mach = first.get("machine", {})
        dur = first.get("durability", {})
        print(f"Machine: {mach.get('cores')} cores, {mach.get('cpu_model')}, "
              f"{(mach.get('mem_total_bytes') or 0) / 2**30:.0f} GiB, kernel {mach.get('kernel')}; "
              f"commit {mach.get('git_commit')}; release build; sync={dur.get('sync')} (no write "
              "waits for a sync; Mezzanine's NVM writes are persisted with msync on the memory "
              "file system that emulates NVM).")
    mp = os.path.join(d, "machine.txt")
    if os.path.exists(mp):
        with open(mp) as f:
            loads = [l.strip() for l in f if "load average" in l]
        if loads:
            print("Load average before / after the run: " + " / ".join(
                l.split("load average:")[1].strip() for l in loads) + " (see machine.txt).")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
