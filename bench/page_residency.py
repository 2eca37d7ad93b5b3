#!/usr/bin/env python3
"""Which pages of some files are in the page cache (mincore(2) on a read-only mapping).

    python3 bench/page_residency.py DB_DIR/*.sst

Prints, per file, its pages, how many are not resident, and the first runs of missing
pages. A table read whose block is not resident goes to the disk: on a machine whose
kernel pages out cold page cache on its own (DAMON's `pageout` scheme, for instance), a
freshly written table loses pages within a minute, with no memory pressure at all.
"""
import ctypes
import os
import sys

libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
PROT_READ, MAP_SHARED, PAGE = 1, 1, os.sysconf("SC_PAGE_SIZE")


def missing_pages(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0, []
        addr = libc.mmap(None, size, PROT_READ, MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            n = (size + PAGE - 1) // PAGE
            vec = ctypes.create_string_buffer(n)
            if libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            return n, [i for i, b in enumerate(vec.raw) if not b & 1]
        finally:
            libc.munmap(ctypes.c_void_p(addr), size)
    finally:
        os.close(fd)


def runs(pages):
    out = []
    for p in pages:
        if out and out[-1][1] == p - 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return out


total = gone = 0
for path in sys.argv[1:]:
    n, missing = missing_pages(path)
    total += n
    gone += len(missing)
    first = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in runs(missing)[:8])
    print(f"{path}: {n} pages, {len(missing)} not resident"
          + (f" (first runs: {first})" if missing else ""))
if len(sys.argv) > 2:
    print(f"all: {total} pages, {gone} not resident ({100.0 * gone / max(total, 1):.1f} %)")
