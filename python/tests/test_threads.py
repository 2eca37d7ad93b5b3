"""Threads using one DB while another thread closes it and opens the path again, for
several rounds. Why: close() once returned while a call on another thread (a compact_range,
a flush, a write) was still working, and the reopen lost tables. Checked, as the close
contract states it: close() returns only after the calls in flight have finished (or
raised ClosedError) and releases the LOCK, so the immediate reopen works; every write whose
call returned reads back after the reopen (a write that raised may or may not be there);
a call that begins after close() returned raises ClosedError, and an iterator made before
the close raises ClosedError at its next step; nothing crashes or hangs (every wait has a
timeout). Each writer thread owns its keys and models them; values name key and version.
Bounded by counts: ROUNDS rounds of about OPS_PER_ROUND operations.
"""

import random
import threading
import time

import pytest

import mezzanine

WRITERS = 3
KEYS = 64  # per writer
ROUNDS = 40  # closes and reopens (many short rounds: more races)
OPS_PER_ROUND = 100  # writer operations before the closer closes
OPS_AFTER_CLOSED = 20  # calls a thread makes once one raised ClosedError, then it waits
TIMEOUT = 60.0  # seconds any wait may take before the test fails (a hang)
OPTIONS = dict(create_if_missing=True, write_buffer_size=64 << 10, max_file_size=64 << 10)
# Written once, before the writers' keys ("t..."): iterators made at a round's start have
# entries to step to.
SENTINELS = [(b"a-sentinel-1", b""), (b"a-sentinel-2", b"2")]


def key(w, k):
    return b"t%d-k%03d" % (w, k)


def value(w, k, version):
    head = b"t%d-k%03d-v%08d-" % (w, k, version)
    return head + bytes([97 + version % 26]) * (version % 300)


def version_of(w, k, v):
    head = b"t%d-k%03d-v" % (w, k)
    assert v.startswith(head), (w, k, v[:40])
    version = int(v[len(head) : len(head) + 8])
    assert v == value(w, k, version), (w, k, v[:40])
    return version


class KeyState:
    """What a writer knows about one key: the last acknowledged update, and the failed
    ones since (which may or may not have landed)."""

    def __init__(self):
        self.present = False  # the last acknowledged update was a put
        self.acked = 0  # its version (0: none)
        self.floor = 0  # a version <= floor other than `acked` must not show up
        self.failed = 0  # highest version of a failed put since, 0 if none
        self.failed_delete = False

    def check(self, w, k, v, where):
        if v is None:
            assert not self.present or self.failed_delete, (
                f"{where}: {key(w, k)!r} is missing; version {self.acked} was acknowledged"
            )
            return
        version = version_of(w, k, v)
        ok = (self.present and version == self.acked) or self.floor < version <= self.failed
        assert ok, (
            f"{where}: {key(w, k)!r} has version {version}; acknowledged "
            f"{'put' if self.present else 'delete/none'} {self.acked}, floor {self.floor}, "
            f"failed puts up to {self.failed}, failed delete {self.failed_delete}"
        )

    def record(self, version, is_put, ok):
        if ok:
            self.present, self.acked, self.floor = is_put, version, version
            self.failed, self.failed_delete = 0, False
        elif is_put:
            self.failed = version
        else:
            self.failed_delete = True

    def resolve(self, w, k, v, last_version):
        """After a verified reopen, what was read is the key's state."""
        self.present = v is not None
        self.acked = version_of(w, k, v) if v is not None else 0
        self.floor = last_version
        self.failed, self.failed_delete = 0, False


class Round:
    def __init__(self, number, db):
        self.number = number
        self.db = db
        self.closed = threading.Event()  # set once db.close() has returned
        self.ops = 0  # writer operations (approximate: updated without a lock)


class Shared:
    def __init__(self, path):
        self.path = path
        self.errors = []
        self.round = None
        self.stopping = False
        # Writers, the compactor and the closer meet at the start and end of each round.
        self.start = threading.Barrier(WRITERS + 2)
        self.ready = threading.Barrier(WRITERS + 2)
        self.end = threading.Barrier(WRITERS + 2)
        self.racing_failures = 0


def attempt(call, closed_before, what):
    """Runs call(); returns (True, result) or (False, None) if it raised ClosedError. If the
    handle was closed before the call began it must raise ClosedError; otherwise the call
    raced with the close, and may either work or raise ClosedError."""
    try:
        result = call()
    except mezzanine.ClosedError:
        return False, None
    assert not closed_before, f"{what} on a closed handle did not raise ClosedError"
    return True, result


def wait_closed(rnd, thread_name):
    assert rnd.closed.wait(TIMEOUT), f"{thread_name}: close() did not return in {TIMEOUT}s"


class Writer:
    def __init__(self, shared, wid):
        self.shared = shared
        self.id = wid
        self.rng = random.Random(1000 + wid)
        self.next_version = 1
        self.keys = [KeyState() for _ in range(KEYS)]

    def update(self, db, k, is_put, closed_before):
        version = self.next_version
        self.next_version += 1
        if is_put:
            call, what = (lambda: db.put(key(self.id, k), value(self.id, k, version))), "put"
        else:
            call, what = (lambda: db.delete(key(self.id, k))), "delete"
        ok, _ = attempt(call, closed_before, what)
        self.keys[k].record(version, is_put, ok)
        return ok

    def batch(self, db, k, closed_before):
        """Three keys, the middle one deleted, in one write batch."""
        ks = [k, (k + 1) % KEYS, (k + 2) % KEYS]
        first = self.next_version
        self.next_version += 3

        def write():
            with db.write_batch() as wb:
                for i, kk in enumerate(ks):
                    if i == 1:
                        wb.delete(key(self.id, kk))
                    else:
                        wb.put(key(self.id, kk), value(self.id, kk, first + i))

        ok, _ = attempt(write, closed_before, "write_batch")
        for i, kk in enumerate(ks):
            self.keys[kk].record(first + i, i != 1, ok)
        return ok

    def scan(self, db, closed_before, reverse):
        """Iterates over the writer's keys and checks each entry; a scan that ends without
        ClosedError must have seen every key the model says is present."""
        seen = set()
        prefix = b"t%d-" % self.id

        def run():
            for k, v in db.iterator(prefix=prefix, reverse=reverse):
                i = int(k[len(prefix) + 1 :])
                assert k == key(self.id, i) and i not in seen, k
                seen.add(i)
                self.keys[i].check(self.id, i, v, "scan of own keys")

        ok, _ = attempt(run, closed_before, "iteration")
        if ok:
            for i in range(KEYS):
                if i not in seen:
                    self.keys[i].check(self.id, i, None, "scan of own keys")
        return ok

    def op(self, rnd):
        db = rnd.db
        closed_before = rnd.closed.is_set()
        k = self.rng.randrange(KEYS)
        r = self.rng.randrange(100)
        if r < 40:
            return self.update(db, k, True, closed_before)
        if r < 50:
            return self.update(db, k, False, closed_before)
        if r < 65:
            return self.batch(db, k, closed_before)
        if r < 80:
            ok, v = attempt(lambda: db.get(key(self.id, k)), closed_before, "get")
            if ok:
                self.keys[k].check(self.id, k, v, "get")
            return ok
        if r < 90:
            return self.scan(db, closed_before, reverse=r >= 85)
        if r < 95:
            # A snapshot taken before a put still reads the value from before it.
            ok, snap = attempt(db.snapshot, closed_before, "snapshot")
            if not ok:
                return False
            with snap:
                before = self.keys[k]
                after = KeyState()
                after.__dict__.update(before.__dict__)
                self.keys[k] = after
                self.update(db, k, True, False)
                ok, v = attempt(lambda: snap.get(key(self.id, k)), False, "snapshot get")
                if ok:
                    before.check(self.id, k, v, "get at a snapshot")
            return ok
        if r < 98:
            ok, _ = attempt(lambda: db.get_property("mezz.stats"), closed_before, "get_property")
            return ok
        ok, _ = attempt(
            lambda: db.compact_range(start=b"t%d-" % self.id, stop=b"t%d-~" % self.id),
            closed_before,
            "compact_range",
        )
        return ok

    def run(self):
        s = self.shared
        while True:
            s.start.wait(TIMEOUT)
            if s.stopping:
                return
            rnd = s.round
            # Made and stepped while the handle is open; stepped again after the close. One
            # is between two entries, one exhausted, one reverse.
            held = [rnd.db.iterator(), rnd.db.iterator(stop=b"b"), rnd.db.iterator(reverse=True)]
            assert next(held[0]) == SENTINELS[0]
            assert list(held[1]) == SENTINELS
            next(held[2])
            s.ready.wait(TIMEOUT)
            failed = 0
            ops = 0
            while not rnd.closed.is_set():
                if not self.op(rnd):
                    failed += 1
                    s.racing_failures += 1
                rnd.ops += 1
                ops += 1
                assert ops < 1_000_000, "the closer never closed the database"
                if failed >= OPS_AFTER_CLOSED:
                    wait_closed(rnd, f"writer {self.id}")
            for it in held:
                with pytest.raises(mezzanine.ClosedError):
                    next(it)
            with pytest.raises(mezzanine.ClosedError):
                held[2].prev()
            with pytest.raises(mezzanine.ClosedError):
                held[0].seek(b"t")
            check_closed_handle(rnd.db)
            s.end.wait(TIMEOUT)


def check_closed_handle(db):
    """Every call on a closed handle raises ClosedError."""
    calls = [
        lambda: db.put(b"x", b"y"),
        lambda: db.get(b"x"),
        lambda: db.delete(b"x"),
        lambda: db.compact_range(),
        lambda: db.iterator(),
        lambda: list(db),
        db.snapshot,
        lambda: db.get_property("mezz.stats"),
        lambda: db.approximate_size(b"a", b"z"),
    ]
    for call in calls:
        with pytest.raises(mezzanine.ClosedError):
            call()
    wb = db.write_batch()
    with pytest.raises(mezzanine.ClosedError):
        wb.put(b"x", b"y")
    with pytest.raises(mezzanine.ClosedError):
        wb.write()
    assert db.closed


def compactor(shared):
    s = shared
    while True:
        s.start.wait(TIMEOUT)
        if s.stopping:
            return
        rnd = s.round
        s.ready.wait(TIMEOUT)
        failed = 0
        n = 0
        while not rnd.closed.is_set():
            closed_before = rnd.closed.is_set()
            start, stop = (None, None) if n % 3 else (b"t1", b"t2~")
            ok, _ = attempt(
                lambda: rnd.db.compact_range(start, stop), closed_before, "compact_range"
            )
            n += 1
            if not ok:
                failed += 1
            if failed >= OPS_AFTER_CLOSED:
                wait_closed(rnd, "compactor")
        check_closed_handle(rnd.db)
        s.end.wait(TIMEOUT)


def verify(db, writers, where):
    """Every writer key of the reopened db against the models, and a full scan against the
    reads; then what was read becomes the model."""
    present = 0
    for w in writers:
        for k in range(KEYS):
            v = db.get(key(w.id, k))
            w.keys[k].check(w.id, k, v, where)
            w.keys[k].resolve(w.id, k, v, w.next_version)
            present += v is not None
    scanned = 0
    for k, v in db.iterator(start=b"t"):
        wid, i = int(k[1 : k.index(b"-")]), int(k[k.index(b"-k") + 2 :])
        assert writers[wid].keys[i].present, (where, k)
        writers[wid].keys[i].check(wid, i, v, where)
        scanned += 1
    assert scanned == present, f"{where}: a scan saw {scanned} keys, reads found {present}"
    for k, v in SENTINELS:
        assert db.get(k) == v


def closer(shared, writers):
    s = shared
    db = mezzanine.DB(s.path, **OPTIONS)
    for k, v in SENTINELS:
        db.put(k, v)
    for number in range(ROUNDS):
        rnd = Round(number, db)
        s.round = rnd
        s.start.wait(TIMEOUT)
        s.ready.wait(TIMEOUT)
        deadline = time.monotonic() + 5.0  # enough operations, or 5 s, whichever first
        while rnd.ops < OPS_PER_ROUND and time.monotonic() < deadline:
            time.sleep(0.0005)
        db.close()
        rnd.closed.set()
        db = mezzanine.DB(s.path, **OPTIONS)  # at once: other threads may still be calling
        s.end.wait(TIMEOUT)
        verify(db, writers, f"after reopen {number + 1}")
    s.stopping = True
    s.start.wait(TIMEOUT)
    db.close()
    check_closed_handle(db)
    with mezzanine.DB(s.path, **OPTIONS) as db:
        verify(db, writers, "after the last reopen")


def guarded(shared, target, *args):
    """Runs target, recording an exception (and breaking the barriers so nobody waits)."""

    def run():
        try:
            target(*args)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            shared.errors.append((threading.current_thread().name, e))
            # Nobody waits for this thread any more: barriers break, the round "closes".
            for b in (shared.start, shared.ready, shared.end):
                b.abort()
            if shared.round is not None:
                shared.round.closed.set()

    return run


def test_close_and_reopen_under_concurrent_calls(tmp_path):
    shared = Shared(str(tmp_path / "db"))
    writers = [Writer(shared, w) for w in range(WRITERS)]
    threads = [
        threading.Thread(target=guarded(shared, w.run), name=f"writer {w.id}") for w in writers
    ]
    threads.append(threading.Thread(target=guarded(shared, compactor, shared), name="compactor"))
    threads.append(
        threading.Thread(target=guarded(shared, closer, shared, writers), name="closer")
    )
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 3)
        assert not t.is_alive(), f"{t.name} hangs"
    # The first error is the cause; the others are usually barriers broken by it.
    real = [e for e in shared.errors if not isinstance(e[1], threading.BrokenBarrierError)]
    if real or shared.errors:
        name, e = (real or shared.errors)[0]
        raise AssertionError(f"{name}: {e!r}") from e
    print(f"{shared.racing_failures} calls raced with a close and raised ClosedError")


def test_concurrent_closes_both_wait(tmp_path):
    """close() on two threads at once, while a compact_range runs on a third: the close
    that comes second returns only once the first has finished (LOCK released), so its
    thread can reopen at once."""
    path = str(tmp_path / "db")
    for attempt_no in range(10):
        db = mezzanine.DB(path, **OPTIONS)
        for i in range(2000):
            db.put(b"k%05d" % i, b"v" * 100)
        go = threading.Barrier(3)
        errors = []

        def compact():
            go.wait(TIMEOUT)
            try:
                db.compact_range()
            except mezzanine.ClosedError:
                pass

        def close_first():
            go.wait(TIMEOUT)
            time.sleep(0.0002 * attempt_no)
            db.close()

        threads = [threading.Thread(target=f) for f in (compact, close_first)]
        for t in threads:
            t.start()
        go.wait(TIMEOUT)
        time.sleep(0.0002 * attempt_no + 0.0005)
        try:
            db.close()  # usually the second close: it must wait for the first
            mezzanine.DB(path, **OPTIONS).close()
        except mezzanine.Error as e:
            errors.append(e)
        for t in threads:
            t.join(TIMEOUT)
            assert not t.is_alive()
        assert not errors, f"attempt {attempt_no}: reopen after close failed: {errors[0]!r}"
