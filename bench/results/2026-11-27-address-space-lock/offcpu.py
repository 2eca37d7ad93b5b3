#!/usr/bin/env python3
"""The open-loop client thread's off-CPU intervals, grouped by the thread's state when it
left the CPU (R preempted, S sleeping, D waiting in the kernel) and the kernel stack.

    python3 offcpu.py NAME.txt      (perf script output of offcpu.sh)

The client is the bench process's busiest thread that never sleeps in nanosleep (the
harness's main thread polls with sleeps; the client spins until each intended start).
"""
import collections
import re
import sys

BENCH_COMMS = ("mezz", "mezz-before", "mezz-after")
evs, cur = [], None
for line in open(sys.argv[1]):
    if not line.startswith("\t") and line.strip():
        m = re.match(r"(\S+)\s+(\d+)\s+([\d.]+): prev_comm=(.*) prev_pid=(\d+) .*"
                     r"prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)", line.strip())
        cur = dict(comm=m[1], tid=int(m[2]), t=float(m[3]), state=m[6], nextcomm=m[7],
                   next=int(m[8]), stack=[]) if m else None
        if cur:
            evs.append(cur)
    elif cur is not None and line.strip():
        p = line.strip().split(None, 1)
        if len(p) == 2:
            cur["stack"].append(p[1])
# The last 60 % of the run is the YCSB-A phase's client.
cut = evs[0]["t"] + (evs[-1]["t"] - evs[0]["t"]) * 0.4
ins = collections.Counter(e["next"] for e in evs if e["t"] > cut and e["nextcomm"] in BENCH_COMMS)
sleepers = {e["tid"] for e in evs if e["t"] > cut and any("nanosleep" in f for f in e["stack"])}
tid = [t for t, _ in ins.most_common() if t not in sleepers][0]
out, agg, durs = None, collections.defaultdict(lambda: [0, 0.0, 0.0]), []
skip = ("schedule", "__switch", "finish_task", "preempt_", "_raw_spin", "unknown")
for e in evs:
    if e["tid"] == tid and e["t"] > cut:
        out = e
    elif e["next"] == tid and out is not None:
        d = (e["t"] - out["t"]) * 1e6
        durs.append(d)
        kern = [f for f in out["stack"] if not any(w in f for w in skip)][:4]
        a = agg[(out["state"], " < ".join(k[:40] for k in kern))]
        a[0] += 1
        a[1] += d
        a[2] = max(a[2], d)
        out = None
print(f"client {tid}: {len(durs)} off-CPU intervals, total {sum(durs) / 1000:.1f} ms, "
      f"over 100 µs {sum(1 for d in durs if d > 100)}, over 1 ms {sum(1 for d in durs if d > 1000)}")
for k, v in sorted(agg.items(), key=lambda kv: -kv[1][1])[:14]:
    print(f"  n={v[0]:5d} total={v[1] / 1000:7.2f} ms max={v[2]:7.0f} µs {k[0]:3s} {k[1]}")
