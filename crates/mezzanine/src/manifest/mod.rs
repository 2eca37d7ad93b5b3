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

pub mod edit;

use std::path::{Path, PathBuf};

use mezz_env::FileSystem;
use mezz_format::SeqNo;
use mezz_format::log::{LogRead, LogReader, LogWriter};

use crate::error::{Error, Result};
use crate::filename;
use crate::options::RecoveryMode;
use crate::version::Version;

pub use edit::{COMPARATOR_NAME, MANIFEST_FORMAT_VERSION, VersionEdit};

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
            .map_err(|e| e.in_file(&self.path))
    }
}

/// What replaying a manifest produced.
#[derive(Debug)]
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
    pub manifest_number: u64,
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
    let mut version = Version::new(num_levels.max(crate::options::MAX_NUM_LEVELS));
    let mut log_number = None;
    let mut next_file_number = None;
    let mut last_sequence = None;
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
                if let Some(c) = &edit.comparator
                    && c != COMPARATOR_NAME
                {
                    return Err(Error::corruption(
                        offset,
                        format!("comparator {c:?} does not match {COMPARATOR_NAME:?}"),
                    )
                    .in_file(&path));
                }
                version = version.apply(&edit).map_err(|e| match e {
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
            }
        }
    }
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

/// Writes `data` to `path` through a temp file: write, sync, rename, sync the directory.
///
/// # Errors
/// I/O errors (with the path involved).
pub fn write_file_atomically(
    fs: &dyn FileSystem,
    dir: &Path,
    path: &Path,
    data: &[u8],
    temp_number: u64,
) -> Result<()> {
    let tmp = filename::temp_file(dir, temp_number);
    let res = (|| -> std::io::Result<()> {
        let mut f = fs.create(&tmp)?;
        f.append(data)?;
        f.sync()?;
        drop(f);
        fs.rename(&tmp, path)?;
        fs.sync_dir(dir)
    })();
    res.map_err(|e| {
        let _ = fs.remove_file(&tmp);
        Error::from(e).in_file(path)
    })
}
