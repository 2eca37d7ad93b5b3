#!/usr/bin/env python3
"""How long one system call holds the address-space lock while a WAL window is prepared
and retired: MADV_POPULATE_WRITE over a fresh 1 MiB window of a file (fallocated, mapped
shared), and munmap of such a window once written, each done in one call or in steps.
Twenty windows per step size; times are per call, so the longest call is the longest
hold another thread changing a mapping (an allocator's mprotect) can wait behind.

    python3 lock_hold.py DIR      (DIR on the file system the WALs live on)
"""
import ctypes
import os
import sys
import time

DIR = sys.argv[1] if len(sys.argv) > 1 else "."
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
MADV_POPULATE_WRITE, PROT_RW, MAP_SHARED = 23, 3, 1
W = 1 << 20


def window(i):
    path = os.path.join(DIR, f"lock-hold-{i}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    os.posix_fallocate(fd, 0, W)
    return path, fd, libc.mmap(None, W, PROT_RW, MAP_SHARED, fd, 0)


def q(v, f):
    return v[min(len(v) - 1, int(len(v) * f))]


for step in (W, 256 << 10, 64 << 10, 16 << 10):
    first, rest = [], []
    for i in range(20):
        path, fd, a = window(i)
        for off in range(0, W, step):
            t = time.perf_counter()
            libc.madvise(a + off, step, MADV_POPULATE_WRITE)
            (first if off == 0 else rest).append((time.perf_counter() - t) * 1e6)
        libc.munmap(a, W)
        os.close(fd)
        os.unlink(path)
    first.sort()
    rest.sort()
    more = f"; later calls median {q(rest, .5):.0f}, max {rest[-1]:.0f} µs" if rest else ""
    print(f"populate in {step >> 10:4d} KiB steps: first call median {q(first, .5):.0f} µs{more}")

for step in (W, 256 << 10, 64 << 10):
    longest = []
    for i in range(20):
        path, fd, a = window(i)
        libc.madvise(a, W, MADV_POPULATE_WRITE)
        ctypes.memset(a, 1, W)
        worst = 0.0
        for off in range(0, W, step):
            t = time.perf_counter()
            libc.munmap(a + off, step)
            worst = max(worst, time.perf_counter() - t)
        longest.append(worst * 1e6)
        os.close(fd)
        os.unlink(path)
    longest.sort()
    print(f"unmap of a written window in {step >> 10:4d} KiB steps: longest call median "
          f"{q(longest, .5):.0f} µs, max {longest[-1]:.0f} µs")
