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
    tl = [(n, rows(d, f"tlsm-{n}"), rows(d, f"leveldb-nvm-{n}"))
          for n in (4000000, 16000000, 32000000, 64000000)]
    tl = [t for t in tl if t[1] or t[2]]
    if tl:
        out += ["## TLSM (dram profile) against LevelDB-NVM by data size", "",
                "| records | data GB | tlsm write µs | LevelDB-NVM write µs | write ratio (≤ 0.75) | "
                "tlsm read µs | LevelDB-NVM read µs | read ratio (≤ 0.6) | tlsm table GB | "
                "LevelDB-NVM table GB | bytes ratio (≤ 0.3) | stalled s (slow s), tlsm / LevelDB-NVM |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for n, t, l in tl:
            tf, lf, tr, lr = t.get("fillrandom"), l.get("fillrandom"), t.get("readrandom"), l.get("readrandom")
            tb, lb = table_bytes(tf), table_bytes(lf)
            out.append(
                f"| {n / 1e6:.0f} M | {n * 116 / 1e9:.2f} | {f(lat(tf, 'write'))} | {f(lat(lf, 'write'))} | "
                f"{f(ratio(lat(tf, 'write'), lat(lf, 'write')))} | {f(lat(tr, 'read'))} | {f(lat(lr, 'read'))} | "
                f"{f(ratio(lat(tr, 'read'), lat(lr, 'read')))} | {f(tb and tb / 1e9)} | {f(lb and lb / 1e9)} | "
                f"{f(ratio(tb, lb))} | {stall(tf)} / {stall(lf)} |")
        out.append("")
    tv = [(v, rows(d, f"tlsm-v{v}"), rows(d, f"leveldb-nvm-v{v}")) for v in (100, 400, 1600)]
    tv = [t for t in tv if t[1] or t[2]]
    if tv:
        out += ["## TLSM (dram profile) against LevelDB-NVM by value size (464 MB of records)", "",
                "| value B | records | write ratio | read ratio | tlsm table GB | LevelDB-NVM table GB | bytes ratio |",
                "|---|---|---|---|---|---|---|"]
        for v, t, l in tv:
            tf, lf, tr, lr = t.get("fillrandom"), l.get("fillrandom"), t.get("readrandom"), l.get("readrandom")
            tb, lb = table_bytes(tf), table_bytes(lf)
            out.append(
                f"| {v} | {464000000 // (16 + v):,} | {f(ratio(lat(tf, 'write'), lat(lf, 'write')))} | "
                f"{f(ratio(lat(tr, 'read'), lat(lr, 'read')))} | {f(tb and tb / 1e9)} | {f(lb and lb / 1e9)} | "
                f"{f(ratio(tb, lb))} |")
        out.append("")

    def fill_rows(title, pairs, head):
        got = [(k, rows(d, a).get("fillrandom"), rows(d, b).get("fillrandom") if b else None)
               for k, a, b in pairs]
        got = [g for g in got if g[1] or g[2]]
        if not got:
            return
        out.extend([title, "", head, "|---|---|---|---|---|---|---|---|"])
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
