#!/usr/bin/env python3
"""Tables of the design sweeps: python3 summary.py DIR (the JSON lines sweep.sh wrote)."""
import json
import os
import sys


def rows(d, label):
    p = os.path.join(d, label + ".jsonl")
    if not os.path.exists(p):
        return {}
    out = {}
    for line in open(p):
        if line.strip():
            r = json.loads(line)
            out[r["benchmark"]] = r
    return out


def lat(r, op):
    return ((r or {}).get("latency") or {}).get(op, {}).get("mean_us")


def table_bytes(r):
    s = (r or {}).get("engine_stats") or {}
    if "flush_bytes_written" in s:
        return s.get("flush_bytes_written", 0) + s.get("compaction_bytes_written", 0)
    return s.get("table_bytes_written")


def wa(r):
    """SSD write amplification: the process's storage writes over the user's bytes."""
    return ((r or {}).get("process") or {}).get("write_amplification")


def stall(r):
    """Seconds writers were stalled (the engine's counter), and the seconds under half the
    mean throughput."""
    e = ((r or {}).get("engine_interval") or {}).get("stall_micros")
    return f"{f(e and e / 1e6, '{:.1f}')} ({f((r or {}).get('stall_seconds'), '{:.0f}')})"


def f(x, fmt="{:.2f}"):
    return "n/a" if x is None else fmt.format(x)


def ratio(a, b):
    return a / b if a is not None and b else None


def main(d):
    out = []
    def tlsm_table(title, head, points, cells):
        """A TLSM table: one row per (key, tlsm rows, LevelDB-NVM rows) point that ran."""
        points = [p for p in points if p[1] or p[2]]
        if not points:
            return
        out.extend([title, "", head, "|" + "---|" * (head.count("|") - 1)])
        for k, t, l in points:
            tf, lf = t.get("fillrandom"), l.get("fillrandom")
            tr, lr = t.get("readrandom"), l.get("readrandom")
            w = (lat(tf, "write"), lat(lf, "write"))
            r = (lat(tr, "read"), lat(lr, "read"))
            b = (table_bytes(tf), table_bytes(lf))
            out.append("| " + " | ".join(cells(k, w, r, b, tf, lf)) + " |")
        out.append("")

    def gb(x):
        return f(x and x / 1e9)

    tlsm_table(
        "## TLSM (dram profile) against LevelDB-NVM by data size",
        "| records | data GB | tlsm write µs | LevelDB-NVM write µs | write ratio (≤ 0.75) | "
        "tlsm read µs | LevelDB-NVM read µs | read ratio (≤ 0.6) | tlsm table GB | "
        "LevelDB-NVM table GB | bytes ratio (≤ 0.3) | stalled s (slow s), tlsm / LevelDB-NVM |",
        [(n, rows(d, f"tlsm-{n}"), rows(d, f"leveldb-nvm-{n}")) for n in (4000000, 16000000, 32000000, 64000000)],
        lambda n, w, r, b, tf, lf: [f"{n / 1e6:.0f} M", f"{n * 116 / 1e9:.2f}", f(w[0]), f(w[1]), f(ratio(*w)),
                                    f(r[0]), f(r[1]), f(ratio(*r)), gb(b[0]), gb(b[1]), f(ratio(*b)),
                                    f"{stall(tf)} / {stall(lf)}"])
    tlsm_table(
        "## TLSM (dram profile) against LevelDB-NVM by value size (464 MB of records)",
        "| value B | records | write ratio | read ratio | tlsm table GB | LevelDB-NVM table GB | bytes ratio |",
        [(v, rows(d, f"tlsm-v{v}"), rows(d, f"leveldb-nvm-v{v}")) for v in (100, 400, 1600)],
        lambda v, w, r, b, tf, lf: [str(v), f"{464000000 // (16 + v):,}", f(ratio(*w)), f(ratio(*r)),
                                    gb(b[0]), gb(b[1]), f(ratio(*b))])

    def fill_rows(title, pairs, head):
        got = [(k, rows(d, a).get("fillrandom"), rows(d, b).get("fillrandom") if b else None)
               for k, a, b in pairs]
        got = [g for g in got if g[1]]
        if not got:
            return
        out.extend([title, "", head, "|" + "---|" * (head.count("|") - 1)])
        for k, m, r in got:
            out.append(
                f"| {k} | {f((m or {}).get('ops_per_sec'), '{:,.0f}')} | {f((r or {}).get('ops_per_sec'), '{:,.0f}')} | "
                f"{f(ratio((m or {}).get('ops_per_sec'), (r or {}).get('ops_per_sec')))} | "
                f"{f(wa(m))} | {f(wa(r))} | {stall(m)} | {stall(r)} |")
        out.append("")

    head = ("| {} | matrixkv ops/s | RocksDB-L0-NVM ops/s | ratio (≥ 2) | matrixkv WA | RocksDB-L0-NVM WA | "
            "matrixkv stalled s (slow s) | RocksDB-L0-NVM stalled s (slow s) |")
    fill_rows("## MatrixKV against RocksDB-L0-NVM by NVM budget (1 M × 4 KiB)",
              [(f"{b} MiB", f"mkv-budget-{b}", f"rocks-budget-{b}") for b in (256, 512, 1024, 2048)],
              head.format("NVM budget"))
    fill_rows("## MatrixKV against RocksDB-L0-NVM by rows per container (256 MiB, memtables of 256/rows MiB)",
              [(f"{256 // w} ({w} MiB)", f"mkv-rows-{w}", f"rocks-rows-{w}") for w in (64, 16, 4, 2)],
              head.format("rows (memtable)"))
    fill_rows("## MatrixKV's L1 target (256 MiB container; RocksDB-L0-NVM at 256 MiB for reference)",
              [(f"L1 {l} MiB", f"mkv-l1-{l}", "rocks-budget-256") for l in (256, 512, 1024, 2048)],
              head.format("L1"))
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
