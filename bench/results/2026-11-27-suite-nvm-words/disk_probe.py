#!/usr/bin/env python3
"""Latency of 4 KiB reads that miss the page cache, alone and while a 3 GB buffered write
(dd, then fsync) runs on the same disk. Run from a directory on the disk under test:
python3 disk_probe.py"""
import os, random, subprocess, time

def pct(lat):
    lat = sorted(lat)
    q = [lat[int(len(lat) * f)] * 1e6 for f in (0.5, 0.9, 0.99, 0.999)]
    return "p50 %.0f p90 %.0f p99 %.0f p99.9 %.0f max %.0f us" % (*q, lat[-1] * 1e6)

p = "probe-read.bin"
with open(p, "wb") as f:
    for _ in range(256):
        f.write(os.urandom(1 << 20))
    f.flush()
    os.fsync(f.fileno())
fd = os.open(p, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
lat = []
for _ in range(3000):
    off = random.randrange(0, 256 << 20, 4096)
    t = time.perf_counter()
    os.pread(fd, 4096, off)
    lat.append(time.perf_counter() - t)
print("cold reads, idle disk:      ", len(lat), pct(lat))
w = subprocess.Popen("dd if=/dev/zero of=probe-write.bin bs=1M count=3000 conv=fsync 2>/dev/null",
                     shell=True)
lat = []
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
while w.poll() is None:
    off = random.randrange(0, 256 << 20, 4096)
    t = time.perf_counter()
    os.pread(fd, 4096, off)
    lat.append(time.perf_counter() - t)
    time.sleep(0.001)
    if len(lat) % 500 == 0:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
print("cold reads, during writeback:", len(lat), pct(lat))
os.close(fd)
os.remove(p)
os.remove("probe-write.bin")
