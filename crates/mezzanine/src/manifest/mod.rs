//! The MANIFEST: the log of version edits that records durably which tables and NVM objects
//! make up the database.
//!
//! Owns: [`edit`] ([`VersionEdit`] and its encoding; spec: `docs/formats/manifest.md`),
//! [`Manifest`] (the open manifest being appended to), [`recover_manifest`] (replay at
//! open), [`write_new_manifest`], [`set_current`] and [`write_file_atomically`].
//!
//! Invariants: every edit is synced before the engine acts on it; `CURRENT` is replaced
//! atomically (temp file, rename, directory sync); a torn last record is only what an
//! interrupted append leaves (see [`recover_manifest`]).
//!
//! Thread-safety: `Manifest` is owned by one writer at a time (the engine serialises
//! version changes with a lock).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mezz_env::FileSystem;
use mezz_format::KeyOrder;
use mezz_format::SeqNo;
use mezz_format::log::{LogRead, LogReader, LogWriter};

use crate::error::{Error, Result};
use crate::filename;
pub use crate::filename::write_file_atomically;
use crate::options::RecoveryMode;
use crate::version::{Version, VersionBuilder};

pub use crate::version::edit::{
    COMPARATOR_NAME, FAMILIES_FORMAT_VERSION, FamilyRecord, MANIFEST_BASE_VERSION,
    MANIFEST_FORMAT_VERSION, VersionEdit,
};

/// An open manifest being appended to.
#[derive(Debug)]
pub struct Manifest {
    writer: LogWriter,
    number: u64,
    path: PathBuf,
}

impl Manifest {
    /// The manifest's file number.
    #[must_use]
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written to this manifest.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.writer.size()
    }

    /// Appends one edit and syncs it.
    ///
    /// # Errors
    /// I/O errors (with the manifest's path).
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        let mut buf = Vec::with_capacity(256);
        edit.encode(&mut buf);
        self.writer
            .add_record(&buf)
            .and_then(|()| self.writer.sync())
            .map_err(|e| e.in_file(&self.path).into())
    }
}

/// What replaying a manifest produced.
#[derive(Debug)]
#[allow(dead_code)] // set for diagnostics and tests; not read by the engine
pub struct RecoveredManifest {
    /// The version.
    pub version: Version,
    /// WALs below this number are obsolete.
    pub log_number: u64,
    /// The next unused file number recorded.
    pub next_file_number: u64,
    /// The last sequence number recorded.
    pub last_sequence: SeqNo,
    /// The manifest's own file number.
    #[allow(dead_code)] // set for diagnostics and tests; not read by the engine
    pub manifest_number: u64,
    /// The live column families (other than the default), by id.
    pub families: BTreeMap<u32, FamilyRecord>,
    /// The id the next column family gets: above every id ever added or dropped.
    pub next_family_id: u32,
}

/// The edit that records the column families `families` (live, by id) and the next family
/// id in a new manifest (`None` when there is nothing to record: no family was ever
/// created). Ids are never reused, so the highest id ever used is kept even when that
/// family was dropped (as a drop record).
#[must_use]
pub fn family_snapshot_edit(
    families: &BTreeMap<u32, FamilyRecord>,
    next_family_id: u32,
) -> Option<VersionEdit> {
    if next_family_id <= 1 {
        return None;
    }
    let mut edit = VersionEdit {
        families_added: families.values().cloned().collect(),
        ..Default::default()
    };
    let highest = next_family_id - 1;
    if !families.contains_key(&highest) {
        edit.families_dropped.push(highest);
    }
    Some(edit)
}

/// Reads `CURRENT` and replays the manifest it names into a version of `num_levels` levels.
///
/// A torn last record (what a crash during a manifest append leaves: an edit that was never
/// acknowledged — zeros, or a record cut short) is ignored unless `mode` is
/// `AbsoluteConsistency`; a complete last record with a bad checksum is a `Corruption`.
///
/// # Errors
/// `InvalidArgument` if the database has tables at level `num_levels` or deeper (it was
/// open with more levels); `Corruption` (with file and offset) for a bad CURRENT, a damaged
/// manifest, a comparator mismatch or an edit that does not apply; `Io` errors.
pub fn recover_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    num_levels: usize,
    mode: RecoveryMode,
    order: &KeyOrder,
) -> Result<RecoveredManifest> {
    let cur_path = filename::current_file(dir);
    let cur = fs
        .read_all(&cur_path)
        .map_err(|e| Error::from(e).in_file(&cur_path))?;
    let name = std::str::from_utf8(&cur)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .ok_or_else(|| Error::corruption(0, "CURRENT is not a file name ending in a newline"))
        .map_err(|e| e.in_file(&cur_path))?;
    let manifest_number = match filename::parse_file_name(name) {
        Some((filename::FileType::Manifest, n)) => n,
        _ => {
            return Err(
                Error::corruption(0, format!("CURRENT names {name:?}, not a manifest"))
                    .in_file(&cur_path),
            );
        }
    };
    let path = filename::manifest_file(dir, manifest_number);
    let file = fs
        .open_read(&path)
        .map_err(|e| Error::from(e).in_file(&path))?;
    let mut reader = LogReader::new(file);
    // Replayed with as many levels as any options allow, so that a database last open with
    // more levels than `num_levels` is refused below with a clear message instead of a
    // failing edit.
    let empty =
        Version::new(num_levels.max(crate::options::MAX_NUM_LEVELS)).with_order(order.clone());
    // One builder for the whole replay: each level is sorted once, at the end, instead of
    // the whole version being copied for every edit.
    let mut builder = VersionBuilder::new(&empty);
    let mut log_number = None;
    let mut next_file_number = None;
    let mut last_sequence = None;
    let mut families = BTreeMap::new();
    let mut next_family_id = 1u32;
    let mut first = true;
    loop {
        match reader.read_record() {
            LogRead::Eof => break,
            LogRead::Corrupt {
                offset,
                detail,
                at_tail,
            } => {
                if at_tail
                    && mode == RecoveryMode::TolerateCorruptTail
                    && is_torn_append(fs, &path, offset)
                {
                    break;
                }
                return Err(Error::corruption(offset, detail).in_file(&path));
            }
            LogRead::Record { data, offset } => {
                let edit = VersionEdit::decode(&data, offset).map_err(|e| e.in_file(&path))?;
                if first && edit.format_version.is_none() {
                    return Err(Error::corruption(
                        offset,
                        "first manifest record has no format version",
                    )
                    .in_file(&path));
                }
                first = false;
                if let Some(c) = &edit.comparator {
                    // Databases created before comparators were configurable record the
                    // bytewise order as `COMPARATOR_NAME`.
                    let recorded = if c == COMPARATOR_NAME {
                        mezz_format::order::BYTEWISE_NAME
                    } else {
                        c.as_str()
                    };
                    if recorded != order.name() {
                        return Err(Error::InvalidArgument(format!(
                            "comparator name mismatch: {} was created with the comparator \
                             {recorded:?}, the options give {:?}",
                            dir.display(),
                            order.name()
                        )));
                    }
                }
                builder.apply(&edit).map_err(|e| match e {
                    Error::Corruption { detail, .. } => Error::Corruption {
                        file: Some(path.clone()),
                        offset,
                        detail,
                    },
                    other => other,
                })?;
                log_number = edit.log_number.or(log_number);
                next_file_number = edit.next_file_number.or(next_file_number);
                last_sequence = edit.last_sequence.or(last_sequence);
                for f in &edit.families_added {
                    next_family_id = next_family_id.max(f.id.saturating_add(1));
                    families.insert(f.id, f.clone());
                }
                for id in &edit.families_dropped {
                    next_family_id = next_family_id.max(id.saturating_add(1));
                    families.remove(id);
                }
            }
        }
    }
    let mut version = builder.finish();
    if let Some(deepest) = version.deepest_nonempty_level()
        && deepest >= num_levels
    {
        return Err(Error::InvalidArgument(format!(
            "num_levels {num_levels} is too few for the database at {}: it has tables down to \
             level {deepest}; open it with num_levels >= {}",
            dir.display(),
            deepest + 1
        )));
    }
    version.levels.truncate(num_levels);
    version.compact_pointers.truncate(num_levels);
    let missing =
        |what: &str| Error::corruption(0, format!("manifest has no {what}")).in_file(&path);
    Ok(RecoveredManifest {
        version,
        log_number: log_number.ok_or_else(|| missing("log number"))?,
        next_file_number: next_file_number.ok_or_else(|| missing("next file number"))?,
        last_sequence: last_sequence.ok_or_else(|| missing("last sequence"))?,
        manifest_number,
        families,
        next_family_id,
    })
}

/// Whether the damage at `offset` is what an interrupted append leaves: the bytes from
/// there to the end are zeros, or a record whose fragments all verify but whose end is
/// missing. A complete fragment with a bad checksum is not a torn append: every manifest
/// edit is synced before the engine acts on it, so dropping a complete edit could resurrect
/// deleted data or lose flushed writes.
fn is_torn_append(fs: &dyn FileSystem, path: &Path, offset: u64) -> bool {
    use mezz_format::checksum::{crc32c, unmask};
    use mezz_format::log::{FIRST, LOG_BLOCK_SIZE, LOG_HEADER_LEN, MIDDLE};
    let Ok(bytes) = fs.read_all(path) else {
        return false;
    };
    let Some(rest) = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)) else {
        return false;
    };
    if rest.iter().all(|&b| b == 0) {
        return true;
    }
    let mut pos = offset as usize;
    loop {
        let left_in_block = LOG_BLOCK_SIZE - pos % LOG_BLOCK_SIZE;
        if left_in_block < LOG_HEADER_LEN {
            pos += left_in_block;
        }
        let Some(header) = bytes.get(pos..pos + LOG_HEADER_LEN) else {
            // The file ends inside a header (or exactly here, mid-record).
            return true;
        };
        let (Some(crc), Some(len), Some(&kind)) = (
            header
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes),
            header
                .get(4..6)
                .and_then(|b| b.try_into().ok())
                .map(u16::from_le_bytes),
            header.get(6),
        ) else {
            return false;
        };
        let end = pos + LOG_HEADER_LEN + usize::from(len);
        let Some(payload) = bytes.get(pos + LOG_HEADER_LEN..end) else {
            // The fragment runs past the end of the file: cut short by the crash, unless
            // what is there is a whole fragment whose length field was damaged (its
            // checksum matches the bytes up to the end of the file).
            let rest = bytes.get(pos + LOG_HEADER_LEN..).unwrap_or_default();
            let mut covered = Vec::with_capacity(rest.len() + 1);
            covered.push(kind);
            covered.extend_from_slice(rest);
            return crc32c(&covered) != unmask(crc);
        };
        let mut covered = Vec::with_capacity(payload.len() + 1);
        covered.push(kind);
        covered.extend_from_slice(payload);
        if crc32c(&covered) != unmask(crc) {
            return false;
        }
        if kind != FIRST && kind != MIDDLE {
            // A complete, valid record: the damage was something else.
            return false;
        }
        pos = end;
    }
}

/// Creates manifest `number` holding a snapshot of `version` plus the given counters, and
/// syncs it. The caller then points `CURRENT` at it with [`set_current`].
///
/// # Errors
/// I/O errors.
pub fn write_new_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    version: &Version,
    log_number: u64,
    next_file_number: u64,
    last_sequence: SeqNo,
) -> Result<Manifest> {
    let path = filename::manifest_file(dir, number);
    let file = fs
        .create(&path)
        .map_err(|e| Error::from(e).in_file(&path))?;
    let mut m = Manifest {
        writer: LogWriter::new(file),
        number,
        path,
    };
    let mut edit = version.snapshot_edit();
    edit.log_number = Some(log_number);
    edit.next_file_number = Some(next_file_number);
    edit.last_sequence = Some(last_sequence);
    m.append(&edit)?;
    Ok(m)
}

/// Points `CURRENT` at manifest `manifest_number`: writes a temp file, syncs it, renames it
/// over `CURRENT` and syncs the directory.
///
/// # Errors
/// I/O errors.
pub fn set_current(
    fs: &dyn FileSystem,
    dir: &Path,
    manifest_number: u64,
    temp_number: u64,
) -> Result<()> {
    let contents = format!("MANIFEST-{manifest_number:06}\n");
    write_file_atomically(
        fs,
        dir,
        &filename::current_file(dir),
        contents.as_bytes(),
        temp_number,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::tests::meta;

    fn manifest_with_edits(fs: &mezz_env::MemFs, dir: &Path) -> PathBuf {
        fs.create_dir_all(dir).unwrap();
        let v = Version::new(4);
        let mut m = write_new_manifest(fs, dir, 3, &v, 2, 10, 0).unwrap();
        for id in 10..13 {
            m.append(&VersionEdit {
                new_tables: vec![(0, meta(id, "a", "b", (id, id), 100))],
                last_sequence: Some(id),
                ..VersionEdit::default()
            })
            .unwrap();
        }
        set_current(fs, dir, 3, 99).unwrap();
        filename::manifest_file(dir, 3)
    }

    #[test]
    fn manifest_recovery_replays_every_edit() {
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        manifest_with_edits(&fs, dir);
        let r = recover_manifest(
            &fs,
            dir,
            4,
            RecoveryMode::AbsoluteConsistency,
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        assert_eq!(r.version.num_files(0), 3);
        assert_eq!(
            (r.log_number, r.next_file_number, r.last_sequence),
            (2, 10, 12)
        );
        assert_eq!(r.manifest_number, 3);
    }

    #[test]
    fn torn_manifest_append_is_tolerated_but_a_bad_complete_edit_is_not() {
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        let path = manifest_with_edits(&fs, dir);
        let len = fs.file_size(&path).unwrap();
        // Cut the last edit short: a torn append.
        fs.truncate(&path, len - 5).unwrap();
        let r = recover_manifest(
            &fs,
            dir,
            4,
            RecoveryMode::TolerateCorruptTail,
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        assert_eq!(r.version.num_files(0), 2);
        assert!(
            recover_manifest(
                &fs,
                dir,
                4,
                RecoveryMode::AbsoluteConsistency,
                &mezz_format::KeyOrder::default()
            )
            .is_err()
        );

        let fs = mezz_env::MemFs::new();
        let path = manifest_with_edits(&fs, dir);
        let len = fs.file_size(&path).unwrap();
        // Flip a bit inside the last, complete edit.
        fs.corrupt(&path, len - 5, 0x10).unwrap();
        match recover_manifest(
            &fs,
            dir,
            4,
            RecoveryMode::TolerateCorruptTail,
            &mezz_format::KeyOrder::default(),
        ) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file.as_deref(), Some(&*path)),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_damaged_length_field_of_the_last_edit_is_corruption_not_a_torn_append() {
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        let path = manifest_with_edits(&fs, dir);
        let bytes = fs.read_all(&path).unwrap();
        // Find the last record's header: walk the records from the start.
        let mut pos = 0usize;
        let mut last = 0usize;
        while pos + 7 <= bytes.len() {
            let len = u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]) as usize;
            if len == 0 {
                break;
            }
            last = pos;
            pos += 7 + len;
        }
        // Make the length claim more bytes than the file has: it looks cut short, but the
        // bytes that are there match the checksum, so the edit was complete.
        fs.corrupt(&path, (last + 5) as u64, 0x80).unwrap();
        match recover_manifest(
            &fs,
            dir,
            4,
            RecoveryMode::TolerateCorruptTail,
            &mezz_format::KeyOrder::default(),
        ) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_manifest_of_many_thousands_of_edits_recovers() {
        use crate::storage::nvm::{NvmObject, NvmObjectKind};
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let mut m = write_new_manifest(&fs, dir, 3, &Version::new(4), 2, 10, 0).unwrap();
        let wal = |id: u64| NvmObject {
            id,
            kind: NvmObjectKind::Wal,
            offset: (id % 2) * 4096,
            len: 4096,
            weight: 0,
        };
        // Flushes (a table into L0, the WAL on NVM replaced) and, every eighth edit, a
        // compaction of L0 into one new L1 table: L1 keeps growing.
        let (mut l0, mut l1) = (Vec::new(), Vec::new());
        let edits = 20_000u64;
        let mut edit_count = 0;
        for id in 100..100 + edits {
            let mut e = VersionEdit {
                last_sequence: Some(id),
                next_file_number: Some(id + 1),
                ..VersionEdit::default()
            };
            if id.is_multiple_of(8) && !l0.is_empty() {
                e.deleted_tables = l0.drain(..).map(|t| (0, t)).collect();
                let key = format!("{id:08}");
                e.new_tables = vec![(1, meta(id, &key, &key, (id, id), 100))];
                l1.push(id);
            } else {
                e.log_number = Some(id);
                e.new_tables = vec![(0, meta(id, "a", "z", (id, id), 100))];
                e.new_nvm_objects = vec![wal(id)];
                if id > 100 {
                    e.deleted_nvm_objects = vec![id - 1 - u64::from((id - 1).is_multiple_of(8))];
                }
                l0.push(id);
            }
            m.append(&e).unwrap();
            edit_count += 1;
        }
        assert_eq!(edit_count, edits);
        set_current(&fs, dir, 3, 99).unwrap();
        let r = recover_manifest(
            &fs,
            dir,
            4,
            RecoveryMode::AbsoluteConsistency,
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        let ids = |l: usize| r.version.tables(l).iter().map(|t| t.id).collect::<Vec<_>>();
        l0.reverse();
        assert_eq!(ids(0), l0, "L0 newest first");
        assert_eq!(ids(1), l1, "L1 by key");
        assert!(l1.len() > 2000);
        r.version.check_invariants().unwrap();
        let last = 100 + edits - 1;
        assert_eq!(r.last_sequence, last);
        assert_eq!(r.next_file_number, last + 1);
        let live: Vec<u64> = r.version.nvm_objects.keys().copied().collect();
        assert_eq!(
            live,
            vec![*l0.first().unwrap()],
            "only the newest WAL is live"
        );
    }
}
