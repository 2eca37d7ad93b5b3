#!/usr/bin/env python3
"""Does the machine page out cold page cache on its own, and does a mapping protect it?

    python3 mapped_vs_read.py DIR [SECONDS]

Writes two 64 MiB files in DIR (on the file system under test), syncs them, reads one
through the page cache once (`read.bin`) and maps the other and touches each of its pages
once (`mapped.bin`, the mapping kept for the whole run), then, with no further access and
no memory pressure, reports every 30 s how many pages of each are still resident
(mincore). Neither file is accessed after the first touch, so both are equally cold.
"""
import mmap
import os
import subprocess
import sys
import time

d = sys.argv[1]
secs = int(sys.argv[2]) if len(sys.argv) > 2 else 180
os.makedirs(d, exist_ok=True)
size = 64 << 20
paths = {name: os.path.join(d, name) for name in ("read.bin", "mapped.bin")}
for p in paths.values():
    with open(p, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
with open(paths["read.bin"], "rb") as f:
    while f.read(1 << 20):
        pass
mf = open(paths["mapped.bin"], "rb")
m = mmap.mmap(mf.fileno(), size, prot=mmap.PROT_READ)
touched = sum(m[i] for i in range(0, size, 4096))
residency = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../page_residency.py")
start = time.time()
while True:
    t = time.time() - start
    out = subprocess.run([sys.executable, residency, paths["read.bin"], paths["mapped.bin"]],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if not line.startswith("all"):
            print(f"{t:5.0f} s  {line.split(' (first')[0]}", flush=True)
    if t >= secs:
        break
    time.sleep(30)
m.close()
mf.close()
for p in paths.values():
    os.remove(p)
