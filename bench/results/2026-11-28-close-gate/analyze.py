#!/usr/bin/env python3
"""Median ops/s of each benchmark, old against new, from run.sh's JSON lines."""
import collections
import json
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
for suffix, preset in [("", "leveldb"), ("-novelsm", "novelsm")]:
    res = collections.defaultdict(lambda: collections.defaultdict(list))
    for v in ["old", "new"]:
        with open(f"{d}/{v}{suffix}.jsonl") as f:
            for line in f:
                r = json.loads(line)
                name = r["benchmark"] + (f"@{r['threads']}" if r.get("threads", 1) != 1 else "")
                res[name][v].append(r["ops_per_sec"])
    for name, vv in res.items():
        o, n = statistics.median(vv["old"]), statistics.median(vv["new"])
        print(f"{preset:8s} {name:14s} old {o:>10.0f} new {n:>10.0f} new/old {n / o:.3f} "
              f"(rounds, K ops/s: old {[round(x / 1000) for x in vv['old']]}, "
              f"new {[round(x / 1000) for x in vv['new']]})")
