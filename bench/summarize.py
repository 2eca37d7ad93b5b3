#!/usr/bin/env python3
"""Summarizes `mezz bench --json` result files of one suite run.

First one markdown table per workload file: ops/s, p99 of the benchmark's main operation,
stall seconds, write amplification (engine statistics; /proc/self/io in parentheses), and
ops/s as a ratio to RocksDB's in the same workload. Then a "Targets" table: each
performance target of the suite next to the measured ratio, marked met / not met (or "not
measured" when a workload or engine it needs is missing from the files). Standard library
only.

    python3 bench/summarize.py bench/results/<date>/*.jsonl > summary.md

The workload of a result is its file's name without `.jsonl` (bench/suite writes fill-100,
fill-4k, fill-100-t2, read-t2, fill-mem, fill-sustained, ycsb, ycsb-e, open-loop). Targets
compare Mezzanine's presets (`mezzanine:leveldb`, `mezzanine:novelsm`) with the reference
engines `rocksdb` and `leveldb` of the same run:

- fillrandom throughput, 100 B (fill-100) and 4 KiB (fill-4k) values: the best preset's
  ops/s over the best reference's >= 1.3. The suite runs fill-4k in three rounds (engine
  order rotated): an engine's figure is then its median round, with the range beside it.
- write amplification of those fills: the best (lowest) preset's over RocksDB's <= 1
  (median rounds likewise).
- open loop (YCSB A at a fixed rate), for each preset: read and update p99 and p99.9 <= the
  best (lowest) reference's, max latency <= 10 ms, zero stall seconds. The suite runs the
  open loop in rounds (engine order rotated); each latency figure is the engine's median
  over its rounds (the lower middle one for an even count), with the range of the rounds
  beside it, and stall seconds are summed over the rounds. Files with one round give that
  round.
- 2-thread scaling, from pairs of runs: fill-100-t2 holds a 1-thread and a 2-thread fill
  back to back, three times per engine (older suites: one 2-thread fill, paired with
  fill-100's fillrandom); read-t2 holds 2-, 1-, 2-, 1-, 2-, 1-thread readrandom runs on one
  database. Results record the round trip of a cache line between two cores before and
  after each benchmark: under 200 ns the two cores share a cache ("shared"), above it they
  do not ("split": about 400 ns on the 2-vCPU EPYC VM, whose host moves it between the two
  from one minute to the next). On split cores every engine's 2-thread rate falls far
  below its 1-thread rate, so a ratio across placements measures the host, not the engine:
  pairs are grouped by the placement all four round trips agree on ("mixed" otherwise),
  and an engine's scaling in a placement is its mean 2-thread rate over its mean 1-thread
  rate there. Target: the best preset's scaling >= RocksDB's in every placement both were
  measured in; when they share none (or results predate the round trips), all pairs
  pooled, marked so.
- sustained fills, for each preset: fillrandom of 100 B values over a data set of at least
  10x the DRAM budget (fill-sustained) at >= 0.8 of the same engine's memtable-only rate
  (fill-mem: a fill that never flushes; the median of its rounds when the file holds
  several); both rates are reported.
- readrandom (fill-100): the best preset's ops/s over the best reference's, reported only.
"""
import json
import os
import sys

PRESETS = ["mezzanine:leveldb", "mezzanine:novelsm"]
REFERENCES = ["rocksdb", "leveldb"]
FILL_RATIO_GOAL = 1.3
SUSTAINED_GOAL = 0.8
OPEN_LOOP_MAX_US = 10_000.0


def fmt_ops(x):
    return f"{x / 1000:,.1f} K" if x >= 1000 else f"{x:,.0f}"


def load(paths):
    """{workload: [result, ...]} in file order."""
    out = {}
    for path in paths:
        workload = os.path.splitext(os.path.basename(path))[0]
        rows = out.setdefault(workload, [])
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
    return out


def print_results(data):
    print("| workload | benchmark | engine | ops/s | p99 µs | stall s | WA | vs RocksDB |")
    print("|---|---|---|---|---|---|---|---|")
    versions = {}
    for workload, rows in data.items():
        # A result is matched with RocksDB's of the same benchmark, point, thread count
        # and repetition.
        def key(r, seen):
            k = (r["benchmark"], r.get("point"), threads_of(r))
            n = seen.get((r["engine"], k), 0)
            seen[(r["engine"], k)] = n + 1
            return k + (n,)

        ref, seen = {}, {}
        for r in rows:
            k = key(r, seen)
            if r["engine"] == "rocksdb":
                ref[k] = r["ops_per_sec"]
        seen = {}
        for r in rows:
            k = key(r, seen)
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
            base = ref.get(k)
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
            threads = threads_of(r)
            if threads > 1:
                bench += f" ({threads} threads)"
            print(
                f"| {workload} | {bench} | {r['engine']} | {fmt_ops(r['ops_per_sec'])} | "
                f"{'-' if p99 is None else f'{p99:,.1f}'} | {r.get('stall_seconds', 0)} | "
                f"{wa_s} | {ratio} |"
            )
    print()
    print("Engines: " + "; ".join(f"{k} = {v}" for k, v in sorted(versions.items())))
    return versions


def threads_of(r):
    return r.get("threads") or (r.get("config") or {}).get("threads") or 1


def find_all(data, workload, benchmark, engine):
    """Every result of `engine` for `benchmark` in `workload` outside sweeps, in file order."""
    return [r for r in data.get(workload, [])
            if r["benchmark"] == benchmark and r["engine"] == engine and not r.get("point")]


def find(data, workload, benchmark, engine):
    """The (last) result of `engine` for `benchmark` in `workload`, outside sweeps."""
    hits = find_all(data, workload, benchmark, engine)
    return hits[-1] if hits else None


def ops_rounds(data, workload, benchmark, engine):
    """(median, lowest, highest) ops/s of the engine's runs (rounds), or None."""
    return median_round(r["ops_per_sec"] for r in find_all(data, workload, benchmark, engine))


def ops(data, workload, benchmark, engine):
    """The engine's ops/s: its median round when the file holds several."""
    m = ops_rounds(data, workload, benchmark, engine)
    return None if m is None else m[0]


def wa(data, workload, benchmark, engine):
    """The engine's write amplification: its median round when the file holds several."""
    m = median_round((r.get("engine_interval") or {}).get("write_amplification")
                     for r in find_all(data, workload, benchmark, engine))
    return None if m is None else m[0]


def fmt_ops_rounds(data, workload, benchmark, engine):
    """`171.3 K (novelsm; rounds 126.9-189.3)`: the median round, with the range of the
    rounds when they differ."""
    m = ops_rounds(data, workload, benchmark, engine)
    return fmt_rounds(m, 1000.0, "K", 1, short(engine))


SHARED_CACHE_NS = 200.0


def placement(runs):
    """'shared', 'split' or 'mixed' for the core round trips of `runs`, or None if no run
    recorded one."""
    seen = set()
    for r in runs:
        for ns in r.get("core_round_trip_ns") or []:
            seen.add("shared" if ns < SHARED_CACHE_NS else "split")
    if not seen:
        return None
    return seen.pop() if len(seen) == 1 else "mixed"


def best(values, lowest=False):
    """(engine, value) of the best present value, or None."""
    present = [(e, v) for e, v in values if v is not None]
    if not present:
        return None
    return (min if lowest else max)(present, key=lambda ev: ev[1])


def short(engine):
    return engine.split(":", 1)[1] if engine.startswith("mezzanine:") else engine


class Targets:
    def __init__(self):
        self.rows = []

    def add(self, target, measured, reference, ratio, goal, met):
        status = "not measured" if met is None else ("met" if met else "**not met**")
        self.rows.append((target, measured, reference, ratio, goal, status))

    def missing(self, target, goal, why):
        self.add(target, f"not measured ({why})", "-", "-", goal, None)

    def print(self):
        print("| target | Mezzanine | reference | ratio | goal | status |")
        print("|---|---|---|---|---|---|")
        for row in self.rows:
            print("| " + " | ".join(row) + " |")


def throughput_targets(t, data):
    for workload, label in [("fill-100", "100 B"), ("fill-4k", "4 KiB")]:
        name = f"fillrandom {label} throughput"
        goal = f"≥ {FILL_RATIO_GOAL}x best of {' / '.join(REFERENCES)}"
        m = best((e, ops(data, workload, "fillrandom", e)) for e in PRESETS)
        r = best((e, ops(data, workload, "fillrandom", e)) for e in REFERENCES)
        if m is None or r is None:
            t.missing(name, goal, f"{workload}: no {'Mezzanine preset' if m is None else 'reference'}")
            continue
        ratio = m[1] / r[1]
        t.add(name, fmt_ops_rounds(data, workload, "fillrandom", m[0]),
              fmt_ops_rounds(data, workload, "fillrandom", r[0]),
              f"{ratio:.2f}x", goal, ratio >= FILL_RATIO_GOAL)
    for workload, label in [("fill-100", "100 B"), ("fill-4k", "4 KiB")]:
        name = f"write amplification, fillrandom {label}"
        goal = "≤ 1.00x RocksDB's"
        m = best(((e, wa(data, workload, "fillrandom", e)) for e in PRESETS), lowest=True)
        r = wa(data, workload, "fillrandom", "rocksdb")
        if m is None or r is None or r <= 0:
            t.missing(name, goal, f"{workload}: no {'Mezzanine preset' if m is None else 'RocksDB'} WA")
            continue
        ratio = m[1] / r
        t.add(name, f"{m[1]:.2f} ({short(m[0])})", f"{r:.2f} (rocksdb)", f"{ratio:.2f}x",
              goal, ratio <= 1.0)


def latency(r, op, key):
    return ((r.get("latency") or {}).get(op) or {}).get(key)


def median_round(values):
    """(median, lowest, highest) of the present values, or None; for an even count the
    lower of the two middle values."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return v[(len(v) - 1) // 2], v[0], v[-1]


def fmt_rounds(m, scale=1.0, unit="µs", digits=1, engine=None):
    """A median with the engine and the range of the rounds: `41.2 µs (rocksdb; rounds
    33.0-58.1)`."""
    notes = [engine] if engine else []
    if m[1] != m[2]:
        notes.append(f"rounds {m[1] / scale:,.{digits}f}-{m[2] / scale:,.{digits}f}")
    text = f"{m[0] / scale:,.{digits}f} {unit}"
    return text + (f" ({'; '.join(notes)})" if notes else "")


def open_loop_targets(t, data):
    workload, bench = "open-loop", "ycsb-a"
    refs = {e: find_all(data, workload, bench, e) for e in REFERENCES}
    for preset in PRESETS:
        runs = find_all(data, workload, bench, preset)
        who = short(preset)
        n = f", median of {len(runs)} rounds" if len(runs) > 1 else ""
        for op in ["read", "update"]:
            for key, label in [("p99_us", "p99"), ("p999_us", "p99.9")]:
                name = f"open-loop {op} {label} ({who}{n})"
                goal = "≤ best of " + " / ".join(REFERENCES)
                ref_m = {e: median_round(latency(x, op, key) for x in xs)
                         for e, xs in refs.items()}
                ref = best(((e, m[0]) for e, m in ref_m.items() if m), lowest=True)
                mine = median_round(latency(x, op, key) for x in runs)
                if mine is None or ref is None:
                    t.missing(name, goal, f"{workload}: no {preset if mine is None else 'reference'}")
                    continue
                ratio = mine[0] / ref[1] if ref[1] > 0 else float("inf")
                t.add(name, fmt_rounds(mine), fmt_rounds(ref_m[ref[0]], engine=ref[0]),
                      f"{ratio:.2f}x", goal, mine[0] <= ref[1])
        name = f"open-loop max latency ({who}{n})"
        goal = f"≤ {OPEN_LOOP_MAX_US / 1000:g} ms"
        worst = median_round(
            max((latency(x, op, "max_us") or 0.0) for op in ["read", "update"]) for x in runs)
        if worst is None:
            t.missing(name, goal, f"{workload}: no {preset}")
        else:
            t.add(name, fmt_rounds(worst, 1000.0, "ms", 2), "-", "-", goal,
                  worst[0] <= OPEN_LOOP_MAX_US)
        name = f"open-loop stall seconds ({who}{', sum of rounds' if len(runs) > 1 else ''})"
        if not runs:
            t.missing(name, "0", f"{workload}: no {preset}")
        else:
            s = sum(x.get("stall_seconds", 0) for x in runs)
            t.add(name, str(s), "-", "-", "0", s == 0)


def pairs(runs):
    """Consecutive (1-thread, 2-thread) pairs of `runs` (one engine's, in file order), in
    either order: [(one, two), ...]."""
    out, i = [], 0
    while i + 1 < len(runs):
        a, b = runs[i], runs[i + 1]
        if {threads_of(a), threads_of(b)} == {1, 2}:
            out.append((a, b) if threads_of(a) == 1 else (b, a))
            i += 2
        else:
            i += 1
    return out


def scaling(ps):
    """Mean 2-thread rate over mean 1-thread rate of pairs `ps`, or None."""
    one = sum(a["ops_per_sec"] for a, _ in ps)
    return sum(b["ops_per_sec"] for _, b in ps) / one if one > 0 else None


def by_placement(ps):
    """Pairs `ps` grouped by the placement of their two runs' four round trips ('mixed'
    when they disagree; 'unknown' when none was recorded): {placement: [pair, ...]}."""
    groups = {}
    for one, two in ps:
        groups.setdefault(placement([one, two]) or "unknown", []).append((one, two))
    return groups


def scaling_targets(t, data):
    for label, one, two in [
        ("fill", ("fill-100", "fillrandom"), ("fill-100-t2", "fillrandom")),
        ("read", ("fill-100", "readrandom"), ("read-t2", "readrandom")),
    ]:
        name = f"2-thread {label} scaling (2 threads / 1)"
        goal = "≥ RocksDB's, cores placed alike"

        def engine_pairs(e):
            """The engine's pairs of runs in `two`'s file; for files without pairs (older
            suites: one 2-thread fill), the 2-thread run with `one`'s 1-thread run."""
            ps = pairs(find_all(data, two[0], two[1], e))
            if not ps:
                a, b = find(data, *one, e), find(data, *two, e)
                if a is not None and b is not None and threads_of(b) == 2:
                    ps = [(a, b)]
            return ps

        def fmt(groups):
            return ", ".join(f"{p} {scaling(g):.2f}x ({len(g)})"
                             for p, g in sorted(groups.items()))

        mine = {e: engine_pairs(e) for e in PRESETS}
        present = [e for e in PRESETS if mine[e]]
        ref = engine_pairs("rocksdb")
        if not present or not ref:
            what = "Mezzanine preset" if not present else "RocksDB"
            t.missing(name, goal, f"{two[0]}: no {what}")
            continue
        groups = {e: by_placement(mine[e]) for e in present}
        ref_groups = by_placement(ref)
        # Placements both sides measured, known and not mixed: like against like.
        alike = [p for p in ("shared", "split")
                 if p in ref_groups and any(p in groups[e] for e in present)]
        if alike:
            best_m = {p: max(scaling(groups[e][p]) for e in present if p in groups[e])
                      for p in alike}
            ratios = ", ".join(f"{p} {best_m[p] / scaling(ref_groups[p]):.2f}" for p in alike)
            met = all(best_m[p] >= scaling(ref_groups[p]) for p in alike)
        else:
            # No placement in common (or none recorded): all pairs pooled, flagged.
            best_m = max(scaling(mine[e]) for e in present)
            ratios = f"{best_m / scaling(ref):.2f} (placements differ or unknown)"
            met = best_m >= scaling(ref)
        measured = "; ".join(f"{short(e)}: {fmt(groups[e])}" for e in present)
        t.add(name, measured, f"rocksdb: {fmt(ref_groups)}", ratios, goal, met)


def sustained_targets(t, data):
    goal = f"≥ {SUSTAINED_GOAL:.2f}x the memtable-only rate"
    for e in PRESETS:
        name = f"sustained fill 100 B over memtable-only fill ({short(e)})"
        big = find(data, "fill-sustained", "fillrandom", e)
        # The median round of fill-mem (a run of under a second: the suite runs it three
        # times).
        rounds = median_round(r["ops_per_sec"] for r in find_all(data, "fill-mem", "fillrandom", e))
        mem = None if rounds is None else rounds[0]
        if big is None or mem is None or mem <= 0:
            t.missing(name, goal, f"no {'fill-sustained' if big is None else 'fill-mem'} run")
            continue
        data_mb = big["ops"] * (big["config"]["key_size"] + big["config"]["value_size"]) / 1e6
        ratio = big["ops_per_sec"] / mem
        spread = "" if rounds[1] == rounds[2] else \
            f"; rounds {fmt_ops(rounds[1])}-{fmt_ops(rounds[2])}"
        t.add(name, f"{fmt_ops(big['ops_per_sec'])} over {data_mb:,.0f} MB",
              f"{fmt_ops(mem)} (memtable only{spread})", f"{ratio:.2f}x", goal,
              ratio >= SUSTAINED_GOAL)


def read_report(t, data):
    name = "readrandom throughput (fill-100)"
    m = best((e, ops(data, "fill-100", "readrandom", e)) for e in PRESETS)
    r = best((e, ops(data, "fill-100", "readrandom", e)) for e in REFERENCES)
    if m is None or r is None:
        t.missing(name, "reported",
                  f"fill-100: no {'Mezzanine preset' if m is None else 'reference'} readrandom")
        return
    t.rows.append((name, f"{fmt_ops(m[1])} ({short(m[0])})", f"{fmt_ops(r[1])} ({r[0]})",
                   f"{m[1] / r[1]:.2f}x", "reported", "-"))


def print_targets(data, versions):
    t = Targets()
    throughput_targets(t, data)
    open_loop_targets(t, data)
    scaling_targets(t, data)
    sustained_targets(t, data)
    read_report(t, data)
    print()
    print("## Targets")
    print()
    print("Mezzanine's presets (`leveldb`, `novelsm`) against RocksDB and LevelDB of the same "
          "run; \"best\" is the preset or reference engine with the best value.")
    print()
    t.print()
    rv = versions.get("rocksdb", "")
    if rv and "release" not in rv:
        print()
        print(f"Note: the targets ask for a release RocksDB; this run's RocksDB is `{rv}`.")


def main(paths):
    data = load(paths)
    versions = print_results(data)
    print_targets(data, versions)


if __name__ == "__main__":
    main(sys.argv[1:])
