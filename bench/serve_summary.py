"""Summarises a bench/serve.sh run: requests per second of each target and test, and the
ratios the targets are judged by (mezz / redis everysec, mezz --sync / redis always,
proxy / one server). Usage: python3 bench/serve_summary.py RUN_DIR > RUN_DIR/summary.md"""

import csv
import sys
from pathlib import Path

TARGETS = ["redis-everysec", "redis-always", "mezz", "mezz-sync", "mezz-proxy3"]
RATIOS = [("mezz", "redis-everysec"), ("mezz-sync", "redis-always"),
          ("mezz-proxy3", "mezz")]


def load(path):
    rps = {}
    if not path.exists():
        return rps
    with path.open() as f:
        for row in csv.reader(f):
            if len(row) >= 2 and row[0] != "test":
                test = row[0].split(" ")[0]
                try:
                    rps[test] = float(row[1])
                except ValueError:
                    pass
    return rps


def main():
    run = Path(sys.argv[1])
    print(f"# redis-benchmark, `-c 50`, requests per second ({run.name})\n")
    for p in ("16", "1", "16r"):
        data = {t: load(run / f"{t}-P{p}.csv") for t in TARGETS}
        if not any(data.values()):
            continue
        tests = sorted({k for d in data.values() for k in d},
                       key=lambda k: ["SET", "GET", "INCR", "MSET"].index(k)
                       if k in ["SET", "GET", "INCR", "MSET"] else 9)
        print("## -P 16, random keys (-r)\n" if p == "16r" else f"## -P {p}\n")
        print("| target | " + " | ".join(tests) + " |")
        print("|---|" + "---:|" * len(tests))
        for t in TARGETS:
            print(f"| {t} | " + " | ".join(
                f"{data[t][k]:,.0f}" if k in data[t] else "-" for k in tests) + " |")
        for a, b in RATIOS:
            cells = []
            for k in tests:
                if k in data[a] and k in data[b] and data[b][k] > 0:
                    cells.append(f"{data[a][k] / data[b][k]:.2f}x")
                else:
                    cells.append("-")
            print(f"| {a} / {b} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
