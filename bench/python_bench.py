"""Put/get loops through a Python binding (mezzanine or plyvel), printed as one JSON object.

usage: python_bench.py ENGINE DIR NUM VALUE_SIZE
Same workload as `mezz bench --benchmarks fillseq,readrandom`: NUM sequential puts of
16-byte keys and VALUE_SIZE-byte values, then NUM gets of uniformly random existing keys.
"""

import json
import random
import sys
import time


def main():
    engine, path, num, value_size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if engine == "mezzanine":
        import mezzanine as mod
    else:
        import plyvel as mod
    db = mod.DB(path, create_if_missing=True)
    keys = [b"%016d" % i for i in range(num)]
    value = b"x" * value_size
    put, get = db.put, db.get
    t = time.perf_counter()
    for k in keys:
        put(k, value)
    fill = time.perf_counter() - t
    rng = random.Random(42)
    order = [keys[rng.randrange(num)] for _ in range(num)]
    found = 0
    t = time.perf_counter()
    for k in order:
        if get(k) is not None:
            found += 1
    read = time.perf_counter() - t
    db.close()
    assert found == num, (found, num)
    print(json.dumps({
        "engine": f"python/{engine}",
        "num": num,
        "value_size": value_size,
        "fillseq_us_per_op": fill / num * 1e6,
        "readrandom_us_per_op": read / num * 1e6,
    }))


if __name__ == "__main__":
    main()
