#!/usr/bin/env python3
"""One line per open-loop run: read and update tails, the slowest reads and writes the
engine traced, and the foreground time spent syncing older WALs."""
import json
import sys

for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        if r.get("benchmark") != "ycsb-a":
            continue
        lat = r["latency"]
        es = r.get("engine_stats", {})
        sr = es.get("slow_reads", {})
        sw = es.get("slow_writes", {})
        ph = sw.get("phases", {})
        slow_r = [s["total"] / 1000 for s in sr.get("slowest", [])][:3]
        slow_w = [s["total"] / 1000 for s in sw.get("slowest", [])][:3]
        print(f"{path.rsplit('/', 1)[-1]:14} read p99 {lat['read']['p99_us']:7.1f} "
              f"p99.9 {lat['read']['p999_us']:9.0f} max {lat['read']['max_us'] / 1000:6.1f} ms | "
              f"update p99.9 {lat['update']['p999_us']:9.0f} max {lat['update']['max_us'] / 1000:6.1f} ms | "
              f"slow reads {sr.get('reads', 0)} {slow_r} | slow writes {sw.get('groups', 0)} "
              f"{slow_w} older-WAL sync {ph.get('older_wal_sync', 0) / 1000:.1f} ms, "
              f"switch {ph.get('switch', 0) / 1000:.1f} ms, WAL {ph.get('wal', 0) / 1000:.1f} ms")
