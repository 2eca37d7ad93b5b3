#!/usr/bin/env python3
"""The summary of a `bench/papers` run: for every seed paper its headline figure, ours from
this run, and whether the direction is reproduced, in summary.md and summary.json, with SVG
plots beside them.

    python3 bench/papers_summary.py DIR [--quick 0|1] [--profile NAME]

DIR holds one folder per paper (novelsm, tlsm, matrixkv, jigsaw, isolation) of JSON-lines
files, one per run, named by the run's label (see bench/papers). A run that is missing or
failed shows as "n/a" and its direction as "not measured".
"""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matrixkv_summary import get, svg_bars, svg_lines  # noqa: E402

DRAM_NOTE = ("its NVM is a directory on a memory file system read and written at DRAM speed, while "
             "ours pays the emulated NVM cost: that favours it")
SAME_NOTE = ("ours with the dram profile: no emulated NVM cost, as the comparator's NVM files "
             "on a memory file system have none")
BUFFERED_NOTE = "LevelDB has no direct I/O: it runs buffered, its tables in the page cache, which favours it"


def memory_limit(rows):
    """The memory cgroup limit (bytes) the runs of `rows` ran under (`mezz bench
    --memory-limit`), or None when they ran unlimited (or predate the field)."""
    limits = [get(r, "config", "memory_limit_bytes") for r in rows]
    limits = [x for x in limits if x]
    return max(limits) if limits else None


def buffered_note(rows):
    """The note beside ratios against buffered LevelDB: its memory budget when it had one."""
    limit = memory_limit(rows)
    if limit is None:
        return BUFFERED_NOTE
    return (f"LevelDB has no direct I/O: it runs buffered within a memory cgroup of "
            f"{limit / (1 << 20):.0f} MiB, the peak resident memory of the leveldb preset in the "
            "same shape (heap + page cache)")


def load(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    rows.append(json.loads(line))
    return rows


def bench(rows, name):
    """The last result of benchmark `name` in rows (None if absent)."""
    found = [r for r in rows if r.get("benchmark") == name]
    return found[-1] if found else None


def lat(r, op, stat="mean_us"):
    return get(r, "latency", op, stat)


def update_lat(r, stat):
    """A YCSB run's update latency (engines that report updates as writes: their writes)."""
    return lat(r, "update", stat) or lat(r, "write", stat)


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def fx(x, fmt="{:.2f}"):
    """x formatted, with three significant digits where `fmt` would show it as zero."""
    if x is None:
        return "n/a"
    out = fmt.format(x)
    if x and not any(c in "123456789" for c in out.split("e")[0]):
        out = fmt.replace(".2f", ".3g").replace(".3f", ".3g").replace(".0f", ".3g").format(x)
    return out


def steal_share(r):
    """The share of the machine's CPU time the host took from the run (steal time over
    elapsed time times cores), or None when the run does not say."""
    steal, secs, cores = get(r, "process", "machine_steal_secs"), get(r, "elapsed_secs"), get(r, "machine", "cores")
    if steal is None or not secs or not cores:
        return None
    return steal / (secs * cores)


def steal_note(*runs):
    """A note naming the runs of a claim whose host took over a tenth of the CPU."""
    shares = [s for s in (steal_share(r) for r in runs if r) if s is not None]
    worst = max(shares, default=0)
    return f"the host took {worst:.0%} of the CPU from a run of this claim (steal time)" if worst > 0.1 else ""


def table_bytes(r):
    """Bytes of tables written by flushes and compactions (SST and NVM tables)."""
    if r is None:
        return None
    s = r.get("engine_stats") or {}
    if "flush_bytes_written" in s:
        return s.get("flush_bytes_written", 0) + s.get("compaction_bytes_written", 0)
    # LevelDB: the Write(MB) column of leveldb.stats (flushes and compactions).
    return s.get("table_bytes_written")


class Summary:
    def __init__(self, d, quick, profile):
        self.d = d
        self.quick = quick
        self.profile = profile
        self.rows = []      # (paper, metric, paper's figure, ours, direction, note)
        self.md = []
        self.json = {}

    def path(self, paper, label):
        return os.path.join(self.d, paper, f"{label}.jsonl")

    def runs(self, paper, label):
        return load(self.path(paper, label))

    def claim(self, paper, metric, theirs, ours, ok, note=""):
        direction = "not measured" if ok is None else ("yes" if ok else "no")
        self.rows.append((paper, metric, theirs, ours, direction, note))
        self.json.setdefault(paper, []).append(
            {"metric": metric, "paper": theirs, "ours": ours, "direction_reproduced": direction,
             "note": note})

    def below(self, paper, metric, theirs, value, note="", fmt="{:.2f}"):
        """A claim that holds when `value` (ours over the baseline) is below 1."""
        self.claim(paper, metric, theirs, fx(value, fmt), None if value is None else value < 1, note)

    def above(self, paper, metric, theirs, value, note="", fmt="{:.2f}"):
        """A claim that holds when `value` (the baseline over ours, or a speed-up) is above 1."""
        self.claim(paper, metric, theirs, fx(value, fmt), None if value is None else value > 1, note)

    # ------------------------------------------------------------ NoveLSM
    def novelsm(self):
        p = "novelsm"
        nov, ldb, mz, lbud = (self.runs(p, x)
                              for x in ["novelsm", "leveldb", "mezz-leveldb", "leveldb-budget"])
        if not (nov or ldb or mz):
            return
        self.md.append("## NoveLSM (seed 002): `novelsm` against LevelDB on the SSD tier\n")
        self.md.append("| engine | write mean µs | write p99 µs | read mean µs | read p99 µs | fill s | stall s |")
        self.md.append("|---|---|---|---|---|---|---|")
        res = {}
        limit = memory_limit(lbud)
        engines = [("novelsm", "mezzanine:novelsm", nov), ("leveldb", "leveldb (buffered)", ldb),
                   ("mezz-leveldb", "mezzanine:leveldb", mz)]
        if lbud:
            engines.append(("leveldb-budget", "leveldb (buffered" +
                            (f", {limit / (1 << 20):.0f} MiB cgroup)" if limit else ")"), lbud))
        for key, name, rows in engines:
            f, rd = bench(rows, "fillrandom"), bench(rows, "readrandom")
            res[key] = (f, rd)
            self.md.append(f"| {name} | {fx(lat(f, 'write'))} | {fx(lat(f, 'write', 'p99_us'))} | "
                           f"{fx(lat(rd, 'read'))} | {fx(lat(rd, 'read', 'p99_us'))} | "
                           f"{fx(get(f, 'elapsed_secs'), '{:.1f}')} | {fx(get(f, 'stall_seconds'), '{:.0f}')} |")
        fn, rn = res["novelsm"]
        fl, rl = res["leveldb"]
        fm, rm = res["mezz-leveldb"]
        if limit:
            peaks = [get(x, "process", "cgroup_peak_bytes") for x in lbud]
            peaks = [x for x in peaks if x]
            rss = [get(x, "process", "peak_rss_bytes") for x in mz]
            rss = [x for x in rss if x]
            self.md.append(
                f"\n`leveldb-budget` ran in a memory cgroup of {limit / (1 << 20):.0f} MiB (heap and page "
                f"cache together): the peak resident memory of `mezzanine:leveldb` in the same shape "
                f"({fx(max(rss) / (1 << 20) if rss else None, '{:.0f}')} MiB); the group's peak was "
                f"{fx(max(peaks) / (1 << 20) if peaks else None, '{:.0f}')} MiB. LevelDB reads its tables "
                "through mmap, so under the limit each miss faults in the device's read-ahead window "
                "(8 MiB on the test host's disk, against the kernel's usual 128 KiB): its reads there "
                "measure that setting as much as LevelDB.")
        w = ratio(lat(fn, "write"), lat(fl, "write"))
        r = ratio(lat(rn, "read"), lat(rl, "read"))
        self.below(p, "mean write latency, novelsm / LevelDB", "0.26 (3.8x lower)", w, BUFFERED_NOTE)
        self.below(p, "mean read latency, novelsm / LevelDB", "0.5 (2x lower)", r, BUFFERED_NOTE)
        if lbud:
            fb, rb = res["leveldb-budget"]
            note = buffered_note(lbud) + "; its mmap reads fault in the disk's 8 MiB read-ahead"
            self.below(p, "mean write latency, novelsm / LevelDB within the same memory",
                       "0.26 (3.8x lower)", ratio(lat(fn, "write"), lat(fb, "write")), note)
            self.below(p, "mean read latency, novelsm / LevelDB within the same memory",
                       "0.5 (2x lower)", ratio(lat(rn, "read"), lat(rb, "read")), note)
        w2 = ratio(lat(fn, "write"), lat(fm, "write"))
        r2 = ratio(lat(rn, "read"), lat(rm, "read"))
        self.below(p, "mean write latency, novelsm / leveldb preset (direct I/O)", "(not in the paper)", w2)
        self.below(p, "mean read latency, novelsm / leveldb preset (direct I/O)", "(not in the paper)", r2)
        ro_n = bench(self.runs(p, "reopen-novelsm"), "reopen")
        ro_l = bench(self.runs(p, "reopen-leveldb"), "reopen")
        if ro_n or ro_l:
            fill_n = bench(self.runs(p, "reopen-novelsm"), "fillrandom")
            gib = (get(fill_n, "bytes") or 0) / (1 << 30)
            tn, tl = get(ro_n, "elapsed_secs"), get(ro_l, "elapsed_secs")
            rr = ratio(tl, tn)
            self.md.append("")
            self.md.append(f"Reopen of {gib:.2f} GiB of entries (logical): the full NVM memtable mapped back "
                           f"in {fx(tn and tn * 1e3, '{:.1f}')} ms, the same data replayed from the WAL "
                           f"in {fx(tl and tl * 1e3, '{:.1f}')} ms: {fx(rr, '{:.0f}')}x.")
            self.above(p, "reopen: WAL replay time / NVM memtable reopen time", "> 100x", rr, "target of the next issue: >= 100x", fmt="{:.0f}x")
        self.md.append("")

    # ------------------------------------------------------------ TLSM
    def tlsm(self):
        p = "tlsm"
        base = self.runs(p, "leveldb-nvm")
        mzb = self.runs(p, "mezz-leveldb-nvm")
        methods = [(m, self.runs(p, f"tlsm-{m}")) for m in ["ps", "ps+bac", "ps+bac+pb"]]
        if not base and not any(r for _, r in methods):
            return
        self.md.append("## TLSM (seed 000): `tlsm`, every level in NVM, against LevelDB with every file on NVM\n")
        self.md.append("| engine | write mean µs | read mean µs | table bytes written (flush + compaction) | stall s |")
        self.md.append("|---|---|---|---|---|")
        bf, br = bench(base, "fillrandom"), bench(base, "readrandom")
        mf, mr = bench(mzb, "fillrandom"), bench(mzb, "readrandom")
        out = [("leveldb-nvm (LevelDB 1.23)", bf, br), ("mezzanine:leveldb on the NVM file system", mf, mr)]
        out += [(f"tlsm {m}", bench(r, "fillrandom"), bench(r, "readrandom")) for m, r in methods]
        same = self.runs(p, "tlsm-same-cost")
        if same:
            out.append(("tlsm ps+bac+pb, dram profile (same NVM cost as LevelDB-NVM)",
                        bench(same, "fillrandom"), bench(same, "readrandom")))
        for name, f, rd in out:
            tb = table_bytes(f)
            self.md.append(f"| {name} | {fx(lat(f, 'write'))} | {fx(lat(rd, 'read'))} | "
                           f"{fx(tb and tb / (1 << 20), '{:.0f} MiB')} | {fx(get(f, 'stall_seconds'), '{:.0f}')} |")
        full = dict(methods).get("ps+bac+pb", [])
        tf, tr = bench(full, "fillrandom"), bench(full, "readrandom")
        w = ratio(lat(tf, "write"), lat(bf, "write"))
        r = ratio(lat(tr, "read"), lat(br, "read"))
        self.below(p, "write latency, tlsm (ps+bac+pb) / LevelDB-NVM", "0.66 (-34 %)", w, DRAM_NOTE)
        self.below(p, "read latency, tlsm / LevelDB-NVM", "0.43 (-57 %)", r, DRAM_NOTE)
        if same:
            sf, sr = bench(same, "fillrandom"), bench(same, "readrandom")
            self.below(p, "write latency, tlsm / LevelDB-NVM at the same NVM cost", "0.66 (-34 %)",
                       ratio(lat(sf, "write"), lat(bf, "write")), SAME_NOTE)
            self.below(p, "read latency, tlsm / LevelDB-NVM at the same NVM cost", "0.43 (-57 %)",
                       ratio(lat(sr, "read"), lat(br, "read")), SAME_NOTE)
        c = ratio(table_bytes(tf), table_bytes(bf))
        self.below(p, "flush + compaction bytes written, tlsm / LevelDB-NVM", "reduced significantly", c, "LevelDB: the Write column of leveldb.stats")
        c = ratio(table_bytes(tf), table_bytes(mf))
        self.below(p, "flush + compaction bytes written, tlsm / leveldb preset on NVM", "(not in the paper)", c, "the same engine's counters, LevelDB's design")
        yt, yl = self.runs(p, "ycsb-tlsm"), self.runs(p, "ycsb-leveldb-nvm")
        ys = self.runs(p, "ycsb-tlsm-same-cost")
        if yt or yl:
            self.md.append("")
            self.md.append("YCSB (1 KiB records, zipfian), mean latency in µs (tlsm, dram profile: the same "
                           "NVM cost as LevelDB-NVM, none):\n")
            self.md.append("| workload | tlsm | LevelDB-NVM | tlsm / LevelDB-NVM | tlsm, dram profile | "
                           "that / LevelDB-NVM |")
            self.md.append("|---|---|---|---|---|---|")
            worse, worse_same = [], []
            measured = measured_same = 0
            for wl in ["ycsb-load", "ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"]:
                a, b, c2 = bench(yt, wl), bench(yl, wl), bench(ys, wl)
                ma, mb, mc = get(a, "micros_per_op"), get(b, "micros_per_op"), get(c2, "micros_per_op")
                q, qs = ratio(ma, mb), ratio(mc, mb)
                if q is not None:
                    measured += 1
                    if q >= 1:
                        worse.append(wl)
                if qs is not None:
                    measured_same += 1
                    if qs >= 1:
                        worse_same.append(wl)
                self.md.append(f"| {wl} | {fx(ma)} | {fx(mb)} | {fx(q)} | {fx(mc)} | {fx(qs)} |")
            self.claim(p, "YCSB load + A-F latency, tlsm / LevelDB-NVM", "0.67-0.82 on every workload",
                       f"{measured - len(worse)} of {measured} lower" + (f" (not: {', '.join(worse)})" if worse else ""),
                       None if measured == 0 else not worse, DRAM_NOTE)
            if ys:
                self.claim(p, "YCSB load + A-F latency, tlsm / LevelDB-NVM at the same NVM cost",
                           "0.67-0.82 on every workload",
                           f"{measured_same - len(worse_same)} of {measured_same} lower"
                           + (f" (not: {', '.join(worse_same)})" if worse_same else ""),
                           None if measured_same == 0 else not worse_same, SAME_NOTE)
        self.md.append("")

    # ------------------------------------------------------------ MatrixKV
    def matrixkv(self):
        p = "matrixkv"
        names = [("mezzanine:matrixkv", "matrixkv"), ("rocksdb-l0-nvm", "rocksdb-l0-nvm"),
                 ("mezzanine:novelsm", "novelsm"), ("rocksdb", "rocksdb")]
        fills = {n: bench(self.runs(p, lab), "fillrandom") for n, lab in names}
        same = bench(self.runs(p, "matrixkv-same-cost"), "fillrandom")
        unbounded = bench(self.runs(p, "rocksdb-l0-nvm-unbounded"), "fillrandom")
        if unbounded:
            fills["rocksdb-l0-nvm, RocksDB's own L0 triggers (L0 not held to the NVM bytes; not a claim)"] = unbounded
        if same:
            fills["mezzanine:matrixkv, dram profile (same NVM cost as RocksDB-L0-NVM)"] = same
        if not any(fills.values()):
            return
        self.md.append("## MatrixKV (seed 004): random 4 KiB fill, the same NVM bytes\n")
        self.md.append("| engine | ops/s | write p99 µs | p99.9 µs | stall s | SSD write amplification | NVM bytes / user bytes |")
        self.md.append("|---|---|---|---|---|---|---|")
        for n, f in fills.items():
            user = get(f, "engine_interval", "user_bytes_written") or get(f, "written_bytes")
            nvmw = get(f, "engine_interval", "nvm_bytes_written")
            self.md.append(f"| {n} | {fx(get(f, 'ops_per_sec'), '{:,.0f}')} | {fx(lat(f, 'write', 'p99_us'), '{:.0f}')} | "
                           f"{fx(lat(f, 'write', 'p999_us'), '{:.0f}')} | {fx(get(f, 'stall_seconds'), '{:.0f}')} | "
                           f"{fx(get(f, 'process', 'write_amplification'))} | "
                           f"{fx(ratio(nvmw, user) if n.startswith('mezzanine') else None)} |")
        m, r0, nv, rk = (fills[n] for n, _ in names)
        if same:
            self.above(p, "random 4 KiB fill throughput, matrixkv / RocksDB-L0-NVM at the same NVM cost", "3.6x",
                       ratio(get(same, "ops_per_sec"), get(r0, "ops_per_sec")), SAME_NOTE, fmt="{:.2f}x")
            self.above(p, "write p99, RocksDB-L0-NVM / matrixkv at the same NVM cost", "5x lower",
                       ratio(lat(r0, "write", "p99_us"), lat(same, "write", "p99_us")), SAME_NOTE, fmt="{:.2f}x")
        t = ratio(get(m, "ops_per_sec"), get(r0, "ops_per_sec"))
        self.above(p, "random 4 KiB fill throughput, matrixkv / RocksDB-L0-NVM", "3.6x", t, DRAM_NOTE, fmt="{:.2f}x")
        tn = ratio(get(m, "ops_per_sec"), get(nv, "ops_per_sec"))
        self.above(p, "random 4 KiB fill throughput, matrixkv / NoveLSM", "2.6x", tn, fmt="{:.2f}x")
        q = ratio(lat(r0, "write", "p99_us"), lat(m, "write", "p99_us"))
        self.above(p, "write p99, RocksDB-L0-NVM / matrixkv", "5x lower", q, DRAM_NOTE, fmt="{:.2f}x")
        wa = ratio(get(rk, "process", "write_amplification"), get(m, "process", "write_amplification"))
        self.above(p, "SSD write amplification, RocksDB / matrixkv", "2.56x lower", wa, fmt="{:.2f}x")
        series = {}
        for n, f in fills.items():
            tl = get(f, "timeline_ops_per_sec") or []
            if tl:
                series[n] = [(i + 1, v) for i, v in enumerate(tl)]
        if series:
            svg_lines(os.path.join(self.d, "matrixkv-fill-timeline.svg"),
                      "MatrixKV: random 4 KiB fill, throughput per second", "second", "ops/s", series, dots=False)
            self.md.append("\n![fill throughput per second](matrixkv-fill-timeline.svg)\n")
        ycsb = {n: bench(self.runs(p, f"ycsb-{lab}"), "ycsb-a") for n, lab in names if lab != "novelsm"}
        if any(ycsb.values()):
            self.md.append("YCSB-A (open loop, 4 KiB records), latency from each request's intended start, µs:\n")
            self.md.append("| engine | ops/s | update p99 | update p99.9 | read p99 |")
            self.md.append("|---|---|---|---|---|")
            for n, y in ycsb.items():
                self.md.append(f"| {n} | {fx(get(y, 'ops_per_sec'), '{:,.0f}')} | {fx(update_lat(y, 'p99_us'), '{:.0f}')} | "
                               f"{fx(update_lat(y, 'p999_us'), '{:.0f}')} | {fx(lat(y, 'read', 'p99_us'), '{:.0f}')} |")
            a = ycsb.get("mezzanine:matrixkv")
            b = ycsb.get("rocksdb-l0-nvm")
            pa = update_lat(a, "p99_us")
            pb = update_lat(b, "p99_us")
            q = ratio(pb, pa)
            self.above(p, "YCSB-A update p99, RocksDB-L0-NVM / matrixkv", "lower tail (Table 2)", q, DRAM_NOTE, fmt="{:.2f}x")
        self.md.append("")

    # ------------------------------------------------------------ Mezzanine (all designs)
    def mezzanine(self):
        p = "mezzanine"
        engines = ["mezzanine", "matrixkv", "tlsm", "novelsm", "leveldb", "rocksdb-l0-nvm", "rocksdb"]
        fills = {e: self.runs(p, f"fill-{e}") for e in engines}
        ycsbs = {e: self.runs(p, f"ycsb-{e}") for e in engines}
        smalls = {e: self.runs(p, f"small-{e}") for e in engines}
        if not any(fills.values()):
            return
        workloads = [("fillrandom", fills, "fillrandom"), ("readrandom", fills, "readrandom"),
                     ("ycsb-b", ycsbs, "ycsb-b"), ("ycsb-c", ycsbs, "ycsb-c"), ("ycsb-d", ycsbs, "ycsb-d"),
                     ("fill 100 B", smalls, "fillrandom"), ("read 100 B", smalls, "readrandom")]
        ops = {e: {w: get(bench(src[e], b), "ops_per_sec") for w, src, b in workloads} for e in engines}
        self.md.append("## Mezzanine: the designs composed, random 4 KiB records, the same DRAM and NVM pool\n")
        self.md.append("ops/s per workload (`fill 100 B`, `read 100 B`: the same with 100-byte values); the 4 KiB "
                       "fill's write p99.9, stall seconds and SSD write amplification:\n")
        self.md.append("| engine | " + " | ".join(w for w, _, _ in workloads) +
                       " | fill p99.9 µs | stall s | SSD WA | reopen ms | fill: host steal |")
        self.md.append("|---|" + "---|" * (len(workloads) + 5))
        for e in engines:
            f = bench(fills[e], "fillrandom")
            ro = bench(fills[e], "reopen")
            self.md.append(f"| {e} | " + " | ".join(fx(ops[e][w], '{:,.0f}') for w, _, _ in workloads) +
                           f" | {fx(lat(f, 'write', 'p999_us'), '{:.0f}')} | {fx(get(f, 'stall_seconds'), '{:.0f}')} | "
                           f"{fx(get(f, 'process', 'write_amplification'))} | "
                           f"{fx(None if ro is None else get(ro, 'elapsed_secs') * 1e3, '{:.0f}')} | "
                           f"{fx(steal_share(f), '{:.0%}')} |")
        ub = self.runs(p, "fill-rocksdb-l0-nvm-unbounded")
        if ub:
            f, rd, ro = bench(ub, "fillrandom"), bench(ub, "readrandom"), bench(ub, "reopen")
            cells = [fx(get(f, "ops_per_sec"), '{:,.0f}'), fx(get(rd, "ops_per_sec"), '{:,.0f}')]
            cells += ["n/a"] * (len(workloads) - 2)
            self.md.append("| rocksdb-l0-nvm, RocksDB's own L0 triggers (L0 not held to the NVM bytes; not a claim) | "
                           + " | ".join(cells) +
                           f" | {fx(lat(f, 'write', 'p999_us'), '{:.0f}')} | {fx(get(f, 'stall_seconds'), '{:.0f}')} | "
                           f"{fx(get(f, 'process', 'write_amplification'))} | "
                           f"{fx(None if ro is None else get(ro, 'elapsed_secs') * 1e3, '{:.0f}')} | "
                           f"{fx(steal_share(f), '{:.0%}')} |")
        ablations = [("ablate-no-nvm-memtable", "without the NVM memtable (NoveLSM)"),
                     ("ablate-mutable", "NoveLSM's rule (`mutable`: every other memtable in NVM) for `overflow`"),
                     ("ablate-with-nvm-wal", "with the WAL in NVM (MatrixKV)"),
                     ("ablate-no-nvm-tables", "without NVM tables (TLSM): SST levels"),
                     ("ablate-with-matrix", "with a matrix container as L0 (MatrixKV), columns into NVM tables at L1")]
        rows = [(n, bench(self.runs(p, lab), "fillrandom"), bench(self.runs(p, lab), "readrandom"),
                 bench(self.runs(p, f"small-{lab}"), "fillrandom"))
                for lab, n in ablations]
        if any(f for _, f, _, _ in rows):
            self.md.append("\nWhat each part buys: the preset with one part turned off or added (fill and read ops/s, "
                           "SSD WA; the fill of 100-byte values where it was run):\n")
            self.md.append("| configuration | fillrandom | readrandom | SSD WA | fill 100 B |")
            self.md.append("|---|---|---|---|---|")
            m = bench(fills["mezzanine"], "fillrandom")
            mr = bench(fills["mezzanine"], "readrandom")
            ms = bench(smalls["mezzanine"], "fillrandom")
            for n, f, r, sm in [("mezzanine (all parts)", m, mr, ms)] + rows:
                self.md.append(f"| {n} | {fx(get(f, 'ops_per_sec'), '{:,.0f}')} | {fx(get(r, 'ops_per_sec'), '{:,.0f}')} | "
                               f"{fx(get(f, 'process', 'write_amplification'))} | {fx(get(sm, 'ops_per_sec'), '{:,.0f}')} |")
        self.md.append("")
        # The targets of the composed design (ours / theirs as ratios; RocksDB-L0-NVM's NVM
        # is at DRAM speed, which favours it).
        mz = ops["mezzanine"]
        srcs = {w: (src, b) for w, src, b in workloads}

        def run_of(e, w):
            src, b = srcs[w]
            return bench(src[e], b)

        for w, _, _ in workloads:
            best = max(((e, ops[e][w]) for e in ["matrixkv", "tlsm", "novelsm", "leveldb"] if ops[e][w]),
                       key=lambda x: x[1], default=(None, None))
            self.claim(p, f"{w}: mezzanine / the best single-design preset ({best[0] or 'n/a'})", ">= 1",
                       fx(ratio(mz[w], best[1]), "{:.2f}x"),
                       None if ratio(mz[w], best[1]) is None else ratio(mz[w], best[1]) >= 1,
                       steal_note(run_of("mezzanine", w), run_of(best[0], w) if best[0] else None))
        f, r0 = bench(fills["mezzanine"], "fillrandom"), bench(fills["rocksdb-l0-nvm"], "fillrandom")
        t = ratio(get(f, "ops_per_sec"), get(r0, "ops_per_sec"))
        self.claim(p, "random 4 KiB fill, mezzanine / RocksDB-L0-NVM", ">= 2.5x", fx(t, "{:.2f}x"),
                   None if t is None else t >= 2.5, "; ".join(n for n in (DRAM_NOTE, steal_note(f, r0)) if n))
        q = ratio(lat(r0, "write", "p999_us"), lat(f, "write", "p999_us"))
        self.claim(p, "fill write p99.9, RocksDB-L0-NVM / mezzanine", ">= 10x", fx(q, "{:.2f}x"),
                   None if q is None else q >= 10, "; ".join(n for n in (DRAM_NOTE, steal_note(f, r0)) if n))
        st = get(f, "stall_seconds")
        self.claim(p, "fill stall seconds, mezzanine", "0", fx(st, "{:.0f}"), None if st is None else st == 0)
        for w in ["readrandom", "ycsb-b", "ycsb-c", "ycsb-d"]:
            t = ratio(mz[w], ops["rocksdb"][w])
            self.claim(p, f"{w}: mezzanine / RocksDB", ">= 1.5x", fx(t, "{:.2f}x"), None if t is None else t >= 1.5)
        wa = get(f, "process", "write_amplification")
        self.claim(p, "fill SSD write amplification, mezzanine", "<= 1.5", fx(wa), None if wa is None else wa <= 1.5)
        ro = bench(fills["mezzanine"], "reopen")
        ms = None if ro is None else get(ro, "elapsed_secs") * 1e3
        self.claim(p, "reopen with full NVM structures, mezzanine (ms)", "<= 100", fx(ms, "{:.0f}"),
                   None if ms is None else ms <= 100,
                   "a close that leaves the memtables to the WAL, then an open: the recovery a crash needs, "
                   "not a killed process")

    # ------------------------------------------------------------ JigsawDB
    def jigsaw(self):
        p = "jigsaw"
        res = {}
        for tier in ["ssd", "nvm"]:
            for fmt in ["keyset", "prefix"]:
                rows = self.runs(p, f"{tier}-{fmt}")
                fills = [r for r in rows if r["benchmark"] == "fillrandom"]
                reads = [r for r in rows if r["benchmark"] == "readrandom"]
                if not fills:
                    continue
                enc, work = [], []
                for r in fills:
                    s = r.get("engine_stats") or {}
                    w = s.get("flush_micros", 0) + s.get("compaction_micros", 0)
                    work.append(w / 1e6)
                    enc.append(s.get("encode_micros", 0) / w if w else 0)
                dec = []
                for i, r in enumerate(rows):
                    if r["benchmark"] != "readrandom" or i == 0:
                        continue
                    before = get(rows[i - 1], "engine_stats", "decode_micros", default=0)
                    spent = (get(r, "engine_stats", "decode_micros", default=0) - before) / 1e6
                    dec.append(spent / r["elapsed_secs"] if r["elapsed_secs"] else 0)
                med = statistics.median
                res[(tier, fmt)] = {
                    "fill": med([r["elapsed_secs"] for r in fills]),
                    "read": med([r["elapsed_secs"] for r in reads]) if reads else 0,
                    "bg": med(work), "enc": med(enc), "dec": med(dec) if dec else None,
                    "rounds": len(fills),
                }
        if not res:
            return
        self.md.append("## JigsawDB (seed 001): KeySet blocks against prefix blocks\n")
        self.md.append("| tier | format | rounds | fill s | flush + compaction s | encode share | read s | decode share of reads | total s |")
        self.md.append("|---|---|---|---|---|---|---|---|---|")
        for (tier, fmt), r in res.items():
            self.md.append(f"| {tier} | {fmt} | {r['rounds']} | {r['fill']:.2f} | {r['bg']:.2f} | {100 * r['enc']:.1f} % | "
                           f"{r['read']:.2f} | {fx(r['dec'] and 100 * r['dec'], '{:.1f} %')} | {r['fill'] + r['read']:.2f} |")
        for tier, label in [("ssd", "SSD tier"), ("nvm", "with NVM tables")]:
            k, pr = res.get((tier, "keyset")), res.get((tier, "prefix"))
            if not (k and pr):
                continue
            tot = (k["fill"] + k["read"]) / (pr["fill"] + pr["read"])
            self.below(p, f"total time, KeySet / prefix ({label})", "0.72 (-28.1 %)", tot, fmt="{:.3f}")
            self.below(p, f"encode share of flush + compaction, KeySet / prefix ({label})",
                       "(encode/decode removed)", ratio(k["enc"], pr["enc"]))
        self.md.append("")

    # ------------------------------------------------------------ isolation
    def isolation(self):
        p = "isolation"
        res = {}
        for pl in ["striped", "isolated", "isolated-unpaced"]:
            rows = self.runs(p, pl)
            c, a = bench(rows, "ycsb-c"), bench(rows, "ycsb-a")
            if not (c and a):
                continue

            def reads_per_s(r):
                n = get(r, "latency", "read", "count")
                return n / r["elapsed_secs"] if n and r["elapsed_secs"] else None
            ro = reads_per_s(c)
            res[pl] = {"ro": ro, "mix_reads": reads_per_s(a), "share": ratio(reads_per_s(a), ro),
                       "ops": a["ops_per_sec"], "p99": lat(a, "read", "p99_us")}
        if not res:
            return
        self.md.append("## Read/write isolation (seed 003): a 50 % read mix on an SSD with 32 parallel units\n")
        self.md.append("| placement | read-only reads/s | reads/s at 50 % | read share of read-only | total ops/s at 50 % | read p99 µs |")
        self.md.append("|---|---|---|---|---|---|")
        for pl, r in res.items():
            self.md.append(f"| {pl} | {fx(r['ro'], '{:,.0f}')} | {fx(r['mix_reads'], '{:,.0f}')} | "
                           f"{fx(r['share'] and 100 * r['share'], '{:.1f} %')} | {fx(r['ops'], '{:,.0f}')} | {fx(r['p99'], '{:.0f}')} |")
        s, i = res.get("striped"), res.get("isolated")
        if s:
            self.claim(p, "read share of read-only at a 50 % mix, striped (conventional)", "25.6 %",
                       fx(s["share"] and 100 * s["share"], "{:.1f} %"),
                       None if s["share"] is None else s["share"] < 0.5, "the paper's conventional SSD loses reads")
        if s and i:
            self.above(p, "read share at 50 %, isolated / striped", "higher (reads keep their units)",
                       ratio(i["share"], s["share"]))
            self.above(p, "read p99 at 50 %, striped / isolated", "lower with isolation", ratio(s["p99"], i["p99"]))
            t = ratio(i["ops"], s["ops"])
            self.claim(p, "total throughput at 50 %, isolated / striped", "(not lower)", fx(t),
                       None if t is None else t >= 0.9)
        self.md.append("")

    def write(self):
        for part in [self.novelsm, self.tlsm, self.matrixkv, self.mezzanine, self.jigsaw, self.isolation]:
            part()
        head = ["# The seed papers on the tiered testbed\n",
                f"Run: `bench/papers{' --quick' if self.quick else ''}` "
                f"(NVM cost profile `{self.profile}`; SSD tier on direct I/O). "
                "Every figure below is from this directory's JSON lines, one build, one run.\n"]
        mach = os.path.join(self.d, "machine.txt")
        if os.path.exists(mach):
            with open(mach) as f:
                lines = [x.strip() for x in f.read().split("\n") if x.strip()]
            commit = next((x for x in lines if len(x) == 40 and all(c in "0123456789abcdef" for c in x)), None)
            binary = next((x[len("papers: binary "):] for x in lines if x.startswith("papers: binary ")), None)
            took = next((x[len("papers: "):] for x in lines if x.startswith("papers: ") and x.endswith("in all")), None)
            pages = next((x[len("papers: NVM files on "):] for x in lines
                          if x.startswith("papers: NVM files on ")), "4 KiB pages (/dev/shm)")
            head.append(f"Build: commit {commit[:7] if commit else 'n/a'}, binary {binary or 'n/a'}; "
                        f"the run took {took or 'n/a'} (machine.txt has the load before it). "
                        f"NVM files of every engine on {pages}.\n")
        head.append("| paper | claim | the paper | ours | direction reproduced | note |")
        head.append("|---|---|---|---|---|---|")
        for r in self.rows:
            head.append("| " + " | ".join(r) + " |")
        yes = sum(1 for r in self.rows if r[4] == "yes")
        no = sum(1 for r in self.rows if r[4] == "no")
        head.append(f"\nDirection reproduced on {yes} of {yes + no} measured claims.\n")
        fail = os.path.join(self.d, "failures.txt")
        if os.path.exists(fail):
            with open(fail) as f:
                head.append("Runs that failed:\n\n```\n" + f.read().strip() + "\n```\n")
        with open(os.path.join(self.d, "summary.md"), "w") as f:
            f.write("\n".join(head + [""] + self.md) + "\n")
        with open(os.path.join(self.d, "summary.json"), "w") as f:
            json.dump({"quick": bool(self.quick), "profile": self.profile, "claims": self.json}, f, indent=1)
            f.write("\n")
        groups = []
        for paper, claims in self.json.items():
            ok = sum(1 for c in claims if c["direction_reproduced"] == "yes")
            bad = sum(1 for c in claims if c["direction_reproduced"] == "no")
            groups.append((paper, {"reproduced": ok, "not reproduced": bad}))
        svg_bars(os.path.join(self.d, "directions.svg"), "Seed papers: claims whose direction is reproduced",
                 "claims", groups, ["reproduced", "not reproduced"])


def main(argv):
    d = argv[1]
    quick = 0
    profile = "optane"
    i = 2
    while i < len(argv):
        if argv[i] == "--quick":
            quick = int(argv[i + 1])
            i += 2
        elif argv[i] == "--profile":
            profile = argv[i + 1]
            i += 2
        else:
            raise SystemExit(f"unknown argument {argv[i]}")
    s = Summary(d, quick, profile)
    s.write()
    print(open(os.path.join(d, "summary.md")).read())


if __name__ == "__main__":
    main(sys.argv)
