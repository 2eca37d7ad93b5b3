"""The plyvel-compatible API of the mezzanine package, end to end."""

import threading

import pytest

import mezzanine


def fill(db, keys):
    for k in keys:
        db.put(k, b"v" + k)


# -- open / close -----------------------------------------------------------------------


def test_readme_example(tmp_path):
    # Keep in sync with the README's "Python" section.
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        db.put(b"user:1", b"ann")
        db.put(b"user:2", b"bob")
        assert db.get(b"user:1") == b"ann"
        assert db.get(b"nope", b"default") == b"default"
        with db.write_batch(transaction=True) as wb:
            wb.put(b"user:3", b"cy")
            wb.delete(b"user:1")
        assert [k for k, _ in db.iterator(prefix=b"user:")] == [b"user:2", b"user:3"]
        with db.snapshot() as snap:
            db.put(b"user:4", b"dee")
            assert snap.get(b"user:4") is None
        users = db.prefixed_db(b"user:")
        assert users.get(b"4") == b"dee"
    assert db.closed


def test_create_if_missing_false_raises_not_found(tmp_path):
    with pytest.raises(mezzanine.NotFoundError):
        mezzanine.DB(str(tmp_path / "missing"))


def test_error_if_exists(tmp_path):
    mezzanine.DB(str(tmp_path / "db"), create_if_missing=True).close()
    with pytest.raises(mezzanine.InvalidArgumentError):
        mezzanine.DB(str(tmp_path / "db"), error_if_exists=True)


def test_opening_twice_raises_locked(db):
    with pytest.raises(mezzanine.LockedError):
        mezzanine.DB(db.name)


def test_error_hierarchy():
    for cls in (
        mezzanine.IOError,
        mezzanine.CorruptionError,
        mezzanine.InvalidArgumentError,
        mezzanine.NotFoundError,
        mezzanine.LockedError,
        mezzanine.ClosedError,
        mezzanine.BackgroundError,
    ):
        assert issubclass(cls, mezzanine.Error)
    assert issubclass(mezzanine.Error, Exception)


def test_close_is_idempotent_and_later_calls_raise(tmp_path):
    db = mezzanine.DB(str(tmp_path / "db"), create_if_missing=True)
    assert not db.closed
    db.close()
    db.close()
    assert db.closed
    with pytest.raises(mezzanine.ClosedError):
        db.get(b"a")
    with pytest.raises(mezzanine.ClosedError):
        db.put(b"a", b"b")
    # Reopening works once closed.
    mezzanine.DB(str(tmp_path / "db")).close()


def test_options_presets_and_unknown_option(tmp_path):
    db = mezzanine.DB(
        str(tmp_path / "a"),
        create_if_missing=True,
        preset="leveldb",
        write_buffer_size=1 << 20,
        lru_cache_size=1 << 20,
        block_size=4096,
        bloom_filter_bits=10,
        max_file_size=1 << 20,
        paranoid_checks=True,
        max_background_jobs=2,
    )
    options = db.get_property(b"mezz.options")
    assert b"write_buffer_size=1M" in options or b"write_buffer_size=1048576" in options
    db.close()
    with pytest.raises(mezzanine.InvalidArgumentError):
        mezzanine.DB(str(tmp_path / "b"), create_if_missing=True, no_such_option=1)
    with pytest.raises(mezzanine.InvalidArgumentError):
        mezzanine.DB(str(tmp_path / "c"), create_if_missing=True, preset="nope")
    with pytest.raises(mezzanine.InvalidArgumentError):
        mezzanine.DB(str(tmp_path / "d"), create_if_missing=True, compression="zlib")


def test_novelsm_preset_with_an_nvm_dir(tmp_path):
    nvm = tmp_path / "nvm"
    nvm.mkdir()
    with mezzanine.DB(
        str(tmp_path / "db"),
        create_if_missing=True,
        preset="novelsm",
        nvm_dir=str(nvm),
        nvm_persistence="msync",
        nvm_capacity=64 << 20,
        nvm_memtable_size=8 << 20,
        nvm_prefault=False,
    ) as db:
        for i in range(1000):
            db.put(b"k%04d" % i, b"x" * 50)
        assert db.get(b"k0500") == b"x" * 50


# -- get / put / delete -----------------------------------------------------------------


def test_get_put_delete(db):
    assert db.get(b"a") is None
    db.put(b"a", b"1")
    db.put(b"b", b"2", sync=True)
    assert db.get(b"a") == b"1"
    assert db.get(b"b", fill_cache=False, verify_checksums=True) == b"2"
    db.delete(b"a")
    assert db.get(b"a") is None
    assert db.get(b"a", default=b"d") == b"d"
    db.delete(b"never-there")


def test_values_survive_flush_compaction_and_reopen(tmp_path):
    path = str(tmp_path / "db")
    db = mezzanine.DB(path, create_if_missing=True, write_buffer_size=64 << 10)
    for i in range(5000):
        db.put(b"k%05d" % i, bytes([i % 256]) * 100)
    db.compact_range()
    db.close()
    db = mezzanine.DB(path)
    assert db.get(b"k01234") == bytes([1234 % 256]) * 100
    assert len(list(db)) == 5000
    db.close()


def test_str_and_other_types_raise_type_error(db):
    with pytest.raises(TypeError):
        db.put("a", b"1")
    with pytest.raises(TypeError):
        db.put(b"a", "1")
    with pytest.raises(TypeError):
        db.get("a")
    with pytest.raises(TypeError):
        db.delete(1)
    with pytest.raises(TypeError):
        db.iterator(start="a")
    with pytest.raises(TypeError):
        db.write_batch().put("a", b"b")


def test_binary_keys_and_empty_values(db):
    db.put(b"\x00\xff", b"")
    assert db.get(b"\x00\xff") == b""
    assert list(db) == [(b"\x00\xff", b"")]


# -- write batches ----------------------------------------------------------------------


def test_write_batch_explicit_write_and_clear(db):
    wb = db.write_batch()
    wb.put(b"a", b"1")
    wb.put(b"b", b"2")
    assert len(wb) == 2
    wb.clear()
    wb.put(b"c", b"3")
    assert db.get(b"c") is None
    wb.write()
    assert db.get(b"c") == b"3" and db.get(b"a") is None


def test_write_batch_context_manager_writes_on_exit(db):
    with db.write_batch(sync=True) as wb:
        wb.put(b"a", b"1")
        wb.delete(b"a")
        wb.put(b"b", b"2")
    assert db.get(b"a") is None and db.get(b"b") == b"2"


def test_non_transaction_batch_writes_even_if_the_block_raises(db):
    with pytest.raises(ValueError):
        with db.write_batch() as wb:
            wb.put(b"a", b"1")
            raise ValueError("boom")
    assert db.get(b"a") == b"1"


def test_transaction_batch_writes_nothing_if_the_block_raises(db):
    with pytest.raises(ValueError):
        with db.write_batch(transaction=True) as wb:
            wb.put(b"a", b"1")
            raise ValueError("boom")
    assert db.get(b"a") is None


# -- iterators --------------------------------------------------------------------------

KEYS = [b"a", b"b", b"ba", b"bb", b"c", b"d"]


def keys(it):
    return [k for k, _ in it]


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        ({}, KEYS),
        ({"start": b"b"}, [b"b", b"ba", b"bb", b"c", b"d"]),
        ({"start": b"b", "include_start": False}, [b"ba", b"bb", b"c", b"d"]),
        ({"stop": b"c"}, [b"a", b"b", b"ba", b"bb"]),
        ({"stop": b"c", "include_stop": True}, [b"a", b"b", b"ba", b"bb", b"c"]),
        ({"start": b"b", "stop": b"c"}, [b"b", b"ba", b"bb"]),
        ({"start": b"bz", "stop": b"zz"}, [b"c", b"d"]),
        ({"start": b"c", "stop": b"b"}, []),
        ({"prefix": b"b"}, [b"b", b"ba", b"bb"]),
        ({"prefix": b"x"}, []),
    ],
)
def test_iterator_ranges_forward_and_reverse(db, kwargs, expected):
    fill(db, KEYS)
    assert keys(db.iterator(**kwargs)) == expected
    assert keys(db.iterator(reverse=True, **kwargs)) == expected[::-1]


def test_iterator_include_key_and_value(db):
    fill(db, [b"a", b"b"])
    assert list(db.iterator(include_value=False)) == [b"a", b"b"]
    assert list(db.iterator(include_key=False)) == [b"va", b"vb"]
    assert list(db.iterator()) == [(b"a", b"va"), (b"b", b"vb")]
    # Neither: one None per entry, as plyvel.
    assert list(db.iterator(include_key=False, include_value=False)) == [None, None]


def test_prefix_with_start_is_a_type_error(db):
    with pytest.raises(TypeError):
        db.iterator(prefix=b"a", start=b"a")


def test_iterator_prev_seek_and_rewind(db):
    fill(db, KEYS)
    it = db.iterator(include_value=False)
    assert next(it) == b"a"
    assert next(it) == b"b"
    assert it.prev() == b"b"
    assert it.prev() == b"a"
    with pytest.raises(StopIteration):
        it.prev()
    assert next(it) == b"a"
    it.seek(b"bb")
    assert next(it) == b"bb"
    it.seek(b"bz")
    assert next(it) == b"c"
    it.seek_to_stop()
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"d"
    it.seek_to_start()
    assert list(it) == KEYS
    it.close()


def test_reverse_iterator_prev_and_seek(db):
    fill(db, KEYS)
    it = db.iterator(reverse=True, include_value=False)
    assert next(it) == b"d"
    assert next(it) == b"c"
    assert it.prev() == b"c"
    it.seek(b"c")
    assert next(it) == b"bb"
    # seek_to_start / seek_to_stop are in key order, as plyvel's: a reverse iterator
    # at the start has nothing left, at the stop it has every entry.
    it.seek_to_start()
    with pytest.raises(StopIteration):
        next(it)
    it.seek_to_stop()
    assert next(it) == b"d"


def test_iterator_is_a_consistent_view(db):
    fill(db, [b"a", b"b"])
    it = db.iterator()
    db.put(b"c", b"new")
    db.delete(b"a")
    assert keys(it) == [b"a", b"b"]


def test_iterating_the_db_and_context_manager(db):
    fill(db, [b"a"])
    with db.iterator() as it:
        assert list(it) == [(b"a", b"va")]


# -- snapshots --------------------------------------------------------------------------


def test_snapshot_get_and_iterator(db):
    fill(db, [b"a", b"b"])
    snap = db.snapshot()
    db.put(b"a", b"changed")
    db.put(b"c", b"new")
    db.delete(b"b")
    db.compact_range()
    assert snap.get(b"a") == b"va"
    assert snap.get(b"c") is None
    assert snap.get(b"c", b"dflt") == b"dflt"
    assert keys(snap.iterator()) == [b"a", b"b"]
    assert keys(snap.iterator(reverse=True, start=b"b")) == [b"b"]
    assert keys(snap) == [b"a", b"b"]
    assert keys(db.iterator(snapshot=snap)) == [b"a", b"b"]
    snap.release()
    assert snap.closed
    with pytest.raises(mezzanine.ClosedError):
        snap.get(b"a")
    snap.close()


def test_snapshot_context_manager_releases(db):
    with db.snapshot() as snap:
        assert snap.get(b"a") is None
    assert snap.closed


# -- prefixed databases -----------------------------------------------------------------


def test_prefixed_db(db):
    db.put(b"x", b"outside")
    p = db.prefixed_db(b"p:")
    assert p.prefix == b"p:"
    p.put(b"a", b"1")
    p.put(b"b", b"2")
    assert db.get(b"p:a") == b"1"
    assert p.get(b"a") == b"1" and p.get(b"x") is None
    assert list(p) == [(b"a", b"1"), (b"b", b"2")]
    assert keys(p.iterator(reverse=True)) == [b"b", b"a"]
    assert keys(p.iterator(start=b"b")) == [b"b"]
    it = p.iterator(include_value=False)
    it.seek(b"b")
    assert next(it) == b"b"
    with p.write_batch(transaction=True) as wb:
        wb.put(b"c", b"3")
        wb.delete(b"a")
    assert keys(p) == [b"b", b"c"]
    snap = p.snapshot()
    p.delete(b"b")
    assert snap.get(b"b") == b"2"
    assert keys(snap.iterator()) == [b"b", b"c"]
    q = p.prefixed_db(b"q:")
    q.put(b"z", b"9")
    assert db.get(b"p:q:z") == b"9"
    assert q.prefix == b"p:q:"
    assert p.db.get(b"x") == b"outside"
    p.delete(b"a")


# -- sizes and compaction ---------------------------------------------------------------


def test_approximate_sizes_and_compact_range(tmp_path):
    db = mezzanine.DB(str(tmp_path / "db"), create_if_missing=True)
    for i in range(3000):
        db.put(b"k%05d" % i, b"x" * 100)
    assert db.approximate_size(b"k", b"l") == 0  # memtables are not counted
    db.compact_range(start=b"k", stop=b"l")
    total = db.approximate_size(b"k", b"l")
    assert total > 300_000
    a, b = db.approximate_sizes((b"k", b"l"), (b"x", b"y"))
    assert a == total and b == 0
    db.compact_range()
    with pytest.raises(mezzanine.InvalidArgumentError):
        db.approximate_size(b"z", b"a")
    db.close()


# -- threads ----------------------------------------------------------------------------


def test_many_threads(db):
    def work(t):
        for i in range(500):
            db.put(b"t%d-%d" % (t, i), b"v")
            assert db.get(b"t%d-%d" % (t, i)) == b"v"

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(list(db)) == 2000


def test_raw_iterator_on_a_prefixed_view(db):
    fill(db, [b"a1", b"a2", b"b1"])
    it = db.prefixed_db(b"a").raw_iterator()
    it.seek_to_first()
    assert it.item() == (b"1", b"va1")
    it.next()
    assert it.key() == b"2"
    it.next()
    assert not it.valid()
    with pytest.raises(mezzanine.IteratorInvalidError):
        it.key()
    it.seek(b"2")
    assert it.value() == b"va2"
    it.seek_to_last()
    assert it.key() == b"2"
    it.close()
    with pytest.raises(RuntimeError):
        it.valid()


def test_destroy_db_refuses_an_open_database_then_removes_it(tmp_path):
    path = str(tmp_path / "db")
    db = mezzanine.DB(path, create_if_missing=True)
    db.put(b"k", b"v")
    with pytest.raises(mezzanine.LockedError):
        mezzanine.destroy_db(path)
    db.close()
    mezzanine.destroy_db(path)
    assert not (tmp_path / "db").exists()


# -- custom comparators -------------------------------------------------------------------


def reverse(a, b):
    return (a < b) - (a > b)


def test_reverse_comparator_orders_every_read(tmp_path):
    path = str(tmp_path / "db")
    keys = [b"k%04d" % i for i in range(3000)]
    with mezzanine.DB(path, create_if_missing=True, write_buffer_size=64 << 10,
                      comparator=reverse, comparator_name=b"reverse") as db:
        for k in keys:
            db.put(k, b"v" + k)
        db.delete(b"k0007")
        db.compact_range()
        want = sorted(set(keys) - {b"k0007"}, reverse=True)
        assert list(db.iterator(include_value=False)) == want
        assert list(db.iterator(include_value=False, reverse=True)) == want[::-1]
        # start/stop follow the database's order: from k0100 down to (not including) k0090.
        got = list(db.iterator(start=b"k0100", stop=b"k0090", include_value=False))
        assert got == [b"k%04d" % i for i in range(100, 90, -1)]
        got = list(db.iterator(start=b"k0100", stop=b"k0090", include_start=False,
                               include_stop=True, include_value=False))
        assert got == [b"k%04d" % i for i in range(99, 89, -1)]
        assert db.get(b"k0007") is None and db.get(b"k0008") == b"vk0008"
    with mezzanine.DB(path, comparator=reverse, comparator_name=b"reverse") as db:
        assert next(db.iterator(include_value=False)) == b"k2999"
    with pytest.raises(mezzanine.Error, match="comparator name mismatch"):
        mezzanine.DB(path)


def test_comparator_arguments_are_checked_as_plyvel_checks_them(tmp_path):
    path = str(tmp_path / "db")
    with pytest.raises(ValueError):
        mezzanine.DB(path, comparator=None, comparator_name=b"x")
    with pytest.raises(TypeError):
        mezzanine.DB(path, comparator=reverse, comparator_name=12)
    with pytest.raises(TypeError):
        mezzanine.DB(path, comparator=b"not-a-callable", comparator_name=b"x")


# -- transactions ------------------------------------------------------------------------


def test_transaction_reads_its_writes_over_its_snapshot(tmp_path):
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        db.put(b"a", b"1")
        with db.transaction() as txn:
            db.put(b"b", b"after")
            assert txn.get(b"b") is None
            assert txn.get(b"b", b"dflt") == b"dflt"
            txn.put(b"c", b"t")
            assert txn.get(b"c") == b"t"
            assert txn.get_for_update(b"a") == b"1"
            txn.put(b"a", b"2")
            txn.set_savepoint()
            txn.delete(b"a")
            assert txn.get(b"a") is None
            txn.rollback_to_savepoint()
        assert db.get(b"a") == b"2"
        assert db.get(b"c") == b"t"
        with pytest.raises(mezzanine.InvalidArgumentError):
            txn.put(b"x", b"y")


def test_transaction_conflict_raises_busy_and_writes_nothing(tmp_path):
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        db.put(b"k", b"0")
        txn = db.transaction()
        assert txn.get_for_update(b"k") == b"0"
        db.put(b"k", b"other")
        txn.put(b"k", b"mine")
        txn.put(b"j", b"mine")
        with pytest.raises(mezzanine.BusyError):
            txn.commit()
        assert issubclass(mezzanine.BusyError, mezzanine.Error)
        assert db.get(b"k") == b"other"
        assert db.get(b"j") is None


def test_transaction_block_that_raises_writes_nothing(tmp_path):
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        with pytest.raises(KeyError):
            with db.transaction() as txn:
                txn.put(b"k", b"v")
                raise KeyError("stop")
        assert db.get(b"k") is None


def test_repair_db_rebuilds_a_database_without_its_manifest(tmp_path):
    path = tmp_path / "db"
    db = mezzanine.DB(str(path), create_if_missing=True)
    for i in range(100):
        db.put(b"k%03d" % i, b"v%d" % i)
    db.delete(b"k007")
    db.close()
    for f in path.iterdir():
        if f.name.startswith("MANIFEST-") or f.name == "CURRENT":
            f.unlink()
    with pytest.raises(mezzanine.Error):
        mezzanine.DB(str(path))
    assert mezzanine.repair_db(str(path)) is None
    assert (path / "lost").is_dir()
    assert "repair finished" in (path / "LOG").read_text()
    with mezzanine.DB(str(path)) as db:
        assert db.get(b"k042") == b"v42"
        assert db.get(b"k007") is None
        assert len(list(db.iterator())) == 99


def test_repair_db_refuses_an_open_database_and_a_missing_one(tmp_path):
    path = str(tmp_path / "db")
    db = mezzanine.DB(path, create_if_missing=True)
    with pytest.raises(mezzanine.LockedError):
        mezzanine.repair_db(path)
    db.close()
    with pytest.raises(mezzanine.InvalidArgumentError):
        mezzanine.repair_db(str(tmp_path / "missing"))
