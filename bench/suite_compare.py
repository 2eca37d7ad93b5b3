#!/usr/bin/env python3
"""Compares two sets of `bench/suite` result directories (the same workloads, run by two
builds on one machine, alternating): for each (workload, benchmark, engine, threads), the
median ops/s of each side and their ratio, then the geometric mean of the ratios.

    bench/suite_compare.py 'DIR/before-*' 'DIR/after-*'

Runs whose two-thread rates depend on where the VM put the cores (fill-100-t2) are split by
the cache-line round trip each result recorded (`near`: under 100 ns, a shared cache).
"""
import collections
import glob
import json
import statistics
import sys


def load(pattern):
    res = collections.defaultdict(list)
    for d in sorted(glob.glob(pattern)):
        for f in sorted(glob.glob(d + "/*.jsonl")):
            workload = f.split("/")[-1][: -len(".jsonl")]
            for line in open(f):
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                place = ""
                rt = r.get("core_round_trip_ns") or []
                if workload == "fill-100-t2" and rt:
                    place = "near" if statistics.mean(rt) < 100 else "far"
                key = (workload, r["benchmark"], r["engine"], r.get("threads", 1), place)
                res[key].append(r["ops_per_sec"])
    return res


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = load(sys.argv[1]), load(sys.argv[2])
    ratios = []
    print("| workload | benchmark | engine | threads | before ops/s | after ops/s | after/before | runs |")
    print("|---|---|---|---|---|---|---|---|")
    for k in sorted(set(before) & set(after)):
        b, a = statistics.median(before[k]), statistics.median(after[k])
        r = a / b if b else float("nan")
        ratios.append(r)
        wl, bench, engine, threads, place = k
        t = f"{threads}{' ' + place if place else ''}"
        print(f"| {wl} | {bench} | {engine} | {t} | {b / 1e3:,.1f} K | {a / 1e3:,.1f} K "
              f"| {r:.3f} | {len(before[k])}/{len(after[k])} |")
    if ratios:
        print(f"\ngeometric mean of after/before over {len(ratios)} rows: "
              f"{statistics.geometric_mean(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
