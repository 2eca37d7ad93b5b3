"""Column families through the Python package: separate key spaces, options recorded at
creation, batches spanning families (atomic), snapshots across families, iterators and
prefixed views inside a family, listing, reopen, drop, and misuse."""

import pytest

import mezzanine


def test_families_are_separate_key_spaces_and_survive_reopen(tmp_path):
    path = str(tmp_path / "db")
    with mezzanine.DB(path, create_if_missing=True) as db:
        users = db.create_column_family("users", write_buffer_size=64 * 1024)
        logs = db.create_column_family("logs")
        assert users.name == "users" and users.id != logs.id
        assert db.column_families() == ["default", "users", "logs"]
        db.put(b"k", b"default")
        users.put(b"k", b"ann")
        assert db.get(b"k") == b"default"
        assert users.get(b"k") == b"ann"
        assert logs.get(b"k") is None
        assert logs.get(b"k", b"dflt") == b"dflt"
        users.delete(b"k")
        assert users.get(b"k") is None
        for i in range(300):
            users.put(b"u%03d" % i, b"x" * 300)
        assert list(users.iterator(start=b"u100", stop=b"u103", include_value=False)) == [
            b"u100", b"u101", b"u102"]
        p = users.prefixed_db(b"u29")
        assert [k for k, _ in p] == [b"%d" % i for i in range(10)]
        p.put(b"z", b"1")
        assert users.get(b"u29z") == b"1"
        assert db.get(b"u29z") is None
        users.compact_range()
        assert users.get_property(b"leveldb.stats") is not None
    assert mezzanine.list_column_families(path) == ["default", "users", "logs"]
    with mezzanine.DB(path) as db:
        users = db.column_family("users")
        assert users.get(b"u000") == b"x" * 300
        assert db.column_family("default").get(b"k") == b"default"
        with pytest.raises(KeyError):
            db.column_family("nope")


def test_a_batch_spanning_families_is_atomic_and_snapshots_cover_them_all(tmp_path):
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        a = db.create_column_family("a")
        b = db.create_column_family("b")
        snap = db.snapshot()
        with db.write_batch() as wb:
            wb.put(b"k", b"0")
            wb.put(b"k", b"1", column_family=a)
            wb.put(b"k", b"2", column_family=b)
            wb.delete(b"gone", column_family=a)
        assert (db.get(b"k"), a.get(b"k"), b.get(b"k")) == (b"0", b"1", b"2")
        assert snap.get(b"k") is None
        snap_a = a.snapshot()
        a.put(b"k", b"changed")
        assert snap_a.get(b"k") == b"1"
        assert list(a.iterator(snapshot=snap)) == []
        # A transaction-mode batch that raises writes nothing in any family.
        with pytest.raises(RuntimeError):
            with db.write_batch(transaction=True) as wb:
                wb.put(b"t", b"1", column_family=a)
                wb.put(b"t", b"1", column_family=b)
                raise RuntimeError("abort")
        assert a.get(b"t") is None and b.get(b"t") is None
        # A batch made from a family writes to it.
        with a.write_batch() as wb:
            wb.put(b"from-a", b"1")
        assert a.get(b"from-a") == b"1" and db.get(b"from-a") is None


def test_drop_and_misuse(tmp_path):
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db, \
            mezzanine.DB(str(tmp_path / "other"), create_if_missing=True) as other:
        logs = db.create_column_family("logs")
        logs.put(b"k", b"v")
        with pytest.raises(mezzanine.InvalidArgumentError):
            db.create_column_family("logs")
        with pytest.raises(mezzanine.InvalidArgumentError):
            db.drop_column_family("default")
        wb = other.write_batch()
        with pytest.raises(mezzanine.InvalidArgumentError):
            wb.put(b"k", b"v", column_family=logs)
        db.drop_column_family(logs)
        assert db.column_families() == ["default"]
        with pytest.raises(mezzanine.InvalidArgumentError):
            logs.get(b"k")
        with pytest.raises(mezzanine.InvalidArgumentError):
            logs.put(b"k", b"v")
        again = db.create_column_family("logs")
        assert again.get(b"k") is None
    with pytest.raises(mezzanine.ClosedError):
        again.get(b"k")
