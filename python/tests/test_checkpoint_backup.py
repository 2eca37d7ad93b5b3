"""DB.checkpoint and BackupEngine: consistent copies and incremental backups from Python,
column families included."""

import os

import pytest

import mezzanine


def fill(db, cf, start, n, tag):
    with db.write_batch() as wb:
        for i in range(start, start + n):
            k = b"k%06d" % i
            wb.put(k, tag + b"-d")
            wb.put(k, tag + b"-u", column_family=cf)


def contents(db, cf=None):
    view = db if cf is None else cf
    return dict(view.iterator())


def test_checkpoint_holds_every_family_and_opens(tmp_path):
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        users = db.create_column_family("users")
        fill(db, users, 0, 500, b"a")
        info = db.checkpoint(str(tmp_path / "copy"))
        assert info["last_sequence"] >= 1000
        assert info["materialised"] >= 1  # the memtables, written as tables
        fill(db, users, 500, 100, b"b")  # after the checkpoint: not in the copy
        want_default = contents(db)
        with pytest.raises(mezzanine.InvalidArgumentError):
            db.checkpoint(str(tmp_path / "copy"))  # the target exists
    with mezzanine.DB(str(tmp_path / "copy")) as copy:
        assert copy.column_families() == ["default", "users"]
        got = contents(copy)
        assert len(got) == 500
        assert all(want_default[k] == v for k, v in got.items() if k < b"k000500")
        assert contents(copy, copy.column_family("users"))[b"k000499"] == b"a-u"


def test_backups_are_incremental_verified_and_restored(tmp_path):
    backups = mezzanine.BackupEngine(str(tmp_path / "backups"))
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        users = db.create_column_family("users")
        fill(db, users, 0, 300, b"one")
        db.compact_range()
        first = backups.create_backup(db)
        fill(db, users, 300, 300, b"two")
        second = backups.create_backup(db)
        assert second["backup_id"] > first["backup_id"]
        assert second["sequence"] > first["sequence"]
    infos = backups.get_backup_info()
    assert [i["backup_id"] for i in infos] == [first["backup_id"], second["backup_id"]]
    backups.verify_backup(first["backup_id"])
    backups.restore_backup(first["backup_id"], str(tmp_path / "r1"))
    with mezzanine.DB(str(tmp_path / "r1")) as r:
        assert len(contents(r)) == 300
        assert len(contents(r, r.column_family("users"))) == 300
    backups.restore_latest_backup(str(tmp_path / "r2"))
    with mezzanine.DB(str(tmp_path / "r2")) as r:
        assert len(contents(r)) == 600
        assert contents(r, r.column_family("users"))[b"k000599"] == b"two-u"
    # A restore never overwrites a database.
    with pytest.raises(mezzanine.Error):
        backups.restore_latest_backup(str(tmp_path / "r2"))
    assert backups.purge_old_backups(1) == [first["backup_id"]]
    assert [i["backup_id"] for i in backups.get_backup_info()] == [second["backup_id"]]
    backups.delete_backup(second["backup_id"])
    assert backups.get_backup_info() == []
    with pytest.raises(mezzanine.NotFoundError):
        backups.restore_latest_backup(str(tmp_path / "r3"))


def test_verify_finds_a_damaged_backup(tmp_path):
    backups = mezzanine.BackupEngine(str(tmp_path / "backups"))
    with mezzanine.DB(str(tmp_path / "db"), create_if_missing=True) as db:
        db.put(b"k", b"v" * 1000)
        b = backups.create_backup(db)
    shared = tmp_path / "backups" / "shared"
    tables = sorted(shared.iterdir())
    assert tables
    data = bytearray(tables[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    tables[0].write_bytes(bytes(data))
    with pytest.raises(mezzanine.CorruptionError):
        backups.verify_backup(b["backup_id"])
    with pytest.raises(mezzanine.CorruptionError):
        backups.restore_backup(b["backup_id"], str(tmp_path / "r"))
    assert not os.path.exists(tmp_path / "r" / "CURRENT")
