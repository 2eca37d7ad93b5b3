"""Scale-out of `mezz serve`: three servers behind nutcracker (twemproxy), and three
servers with a static slot map driven by redis-py's RedisCluster. Both start the processes
with scripts/serve-cluster.sh and stop them at the end, also on failure.

Needs redis-cli, redis-benchmark and nutcracker (scripts/setup.sh installs them) and the
`redis` package; skips with a message naming what is missing otherwise. The mezz binary is
$MEZZ, or built by the script.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

redis = pytest.importorskip("redis", reason="the redis package is not installed")

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = ROOT / "scripts" / "serve-cluster.sh"


def need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/setup.sh installs them)")


def read_env(d):
    env = {}
    for line in (Path(d) / "cluster.env").read_text().splitlines():
        k, _, v = line.partition("=")
        env[k] = v.strip("'")
    return env


@pytest.fixture
def group(request):
    """Starts a group with the given script arguments; always stops it."""
    d = tempfile.mkdtemp(prefix="mezz-serve-group-")
    started = []

    def start(*args):
        subprocess.run([str(SCRIPT), "start", d, *args], check=True, capture_output=True,
                       timeout=300)
        started.append(True)
        return d, read_env(d)

    yield start
    subprocess.run([str(SCRIPT), "stop", d], check=False, timeout=120)
    shutil.rmtree(d, ignore_errors=True)


def node_clients(env):
    return [redis.Redis(port=int(p), socket_timeout=10) for p in env["NODE_PORTS"].split()]


def proxy_client(port):
    """twemproxy knows neither HELLO nor CLIENT: RESP2, and no CLIENT SETINFO on connect."""
    kw = {"port": port, "socket_timeout": 10, "protocol": 2}
    try:
        from redis.driver_info import DriverInfo
        kw["driver_info"] = DriverInfo(name=None, lib_version=None)
    except ImportError:
        kw.update(lib_name=None, lib_version=None)
    return redis.Redis(**kw)


def holders_of(env, keys):
    """Which servers hold each key, from each server's own KEYS (not routed by slot)."""
    held = [set(n.keys("*")) for n in node_clients(env)]
    return {k: [i for i, h in enumerate(held) if k.encode() in h] for k in keys}


def test_three_servers_behind_twemproxy(group):
    need("redis-cli", "redis-benchmark", "nutcracker")
    d, env = group("3")
    proxy_port = env["PROXY_PORT"]
    bench = subprocess.run(
        ["redis-benchmark", "-p", proxy_port, "-t", "set,get,incr,mset", "-n", "3000",
         "-r", "500", "-c", "10", "-P", "4", "-q", "--csv"],
        capture_output=True, text=True, timeout=300)
    assert bench.returncode == 0, bench.stderr
    rows = [l for l in bench.stdout.splitlines() if l.startswith('"')]
    assert any(r.startswith('"SET"') for r in rows), bench.stdout
    assert any(r.startswith('"MSET') for r in rows), bench.stdout

    proxy = proxy_client(int(proxy_port))
    keys = [f"py:{i}" for i in range(300)]
    for k in keys:
        assert proxy.set(k, k.upper())
    assert proxy.incr("py:counter", 5) == 5
    assert proxy.mget(keys[:50]) == [k.upper().encode() for k in keys[:50]]
    keys.append("py:counter")

    # Every key lives on exactly one server, and each server holds some.
    per_node = [0] * 3
    for k, holders in holders_of(env, keys).items():
        assert len(holders) == 1, (k, holders)
        per_node[holders[0]] += 1
    assert all(c > 0 for c in per_node), per_node

    # A server restart (clean close, reopen of its database) loses nothing.
    subprocess.run([str(SCRIPT), "restart", d, "2"], check=True, timeout=120)
    for k in keys[:-1]:
        assert proxy.get(k) == k.upper().encode(), k
    assert proxy.get("py:counter") == b"5"


def test_redis_cluster_client_routes_by_slot(group):
    need("redis-cli")
    d, env = group("3", "--slots")
    ports = [int(p) for p in env["NODE_PORTS"].split()]
    rc = redis.RedisCluster(host="127.0.0.1", port=ports[0], socket_timeout=10)
    try:
        keys = [f"rc:{i}" for i in range(300)]
        for k in keys:
            assert rc.set(k, k)
        for k in keys:
            assert rc.get(k) == k.encode()
        assert rc.incr("{tag}n") == 1
        assert rc.mset({"{tag}a": "1", "{tag}b": "2"})
        assert rc.mget("{tag}a", "{tag}b") == [b"1", b"2"]
        assert rc.hset("{tag}h", mapping={"f": "v"}) == 1
        assert rc.hgetall("{tag}h") == {b"f": b"v"}
        assert rc.keyslot("foo") == 12182
        assert rc.cluster_keyslot("foo") == 12182
        # Each key on exactly one node: the owner of its slot.
        where = holders_of(env, keys)
        for k, holders in where.items():
            assert len(holders) == 1, (k, holders)
        # A node asked for a key it does not serve answers MOVED to the owner.
        nodes = node_clients(env)
        other = next(i for i in range(3) if i not in where["rc:0"])
        with pytest.raises(redis.exceptions.MovedError):
            nodes[other].get("rc:0")
    finally:
        rc.close()
