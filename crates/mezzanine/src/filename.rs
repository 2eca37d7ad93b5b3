//! File names inside a DB directory: `000123.sst`, `000124.log`, `MANIFEST-000005`,
//! `CURRENT`, `LOCK`, `OPTIONS-000006`, `000007.dbtmp`; and the atomic replacement of a
//! small file (`CURRENT`, `OPTIONS`, a unit's `UNIT`) through a temp file.

use std::path::{Path, PathBuf};

use mezz_env::FileSystem;

use crate::error::{Error, Result};

/// The name of the identity file in each further SSD directory (`ssd_paths`).
pub const UNIT_FILE: &str = "UNIT";

/// The NVM pool file's name inside `nvm_dir`.
pub const POOL_FILE: &str = "NVM-POOL";

/// The kinds of files the engine creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// A write-ahead log.
    Wal,
    /// A table file.
    Sst,
    /// A manifest (log of version edits).
    Manifest,
    /// The pointer to the current manifest.
    Current,
    /// The lock file.
    Lock,
    /// The database's id (`IDENTITY`).
    Identity,
    /// An options file.
    Options,
    /// A temporary file (renamed into place or deleted on open).
    Temp,
    /// The info log (`LOG`) or a previous one (`LOG.old.<micros>`; the number).
    InfoLog,
}

/// `<dir>/LOG`: the info log.
#[must_use]
pub fn info_log_file(dir: &Path) -> PathBuf {
    dir.join("LOG")
}

/// `<dir>/LOG.old.<micros>`: an earlier open's info log.
#[must_use]
pub fn old_info_log_file(dir: &Path, micros: u64) -> PathBuf {
    dir.join(format!("LOG.old.{micros}"))
}

/// `<dir>/<number>.sst`
#[must_use]
pub fn sst_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}
/// `<dir>/<number>.log`
#[must_use]
pub fn wal_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}
/// `<dir>/MANIFEST-<number>`
#[must_use]
pub fn manifest_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{number:06}"))
}
/// `<dir>/CURRENT`
#[must_use]
pub fn current_file(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}
/// `<dir>/LOCK`
#[must_use]
pub fn lock_file(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}
/// `<dir>/IDENTITY`: the database's id, written when the database is created, before
/// anything else records it (the NVM pool's superblock).
#[must_use]
pub fn identity_file(dir: &Path) -> PathBuf {
    dir.join("IDENTITY")
}
/// `<dir>/OPTIONS-<number>`
#[must_use]
pub fn options_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("OPTIONS-{number:06}"))
}
/// `<dir>/<number>.dbtmp`
#[must_use]
pub fn temp_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.dbtmp"))
}

/// Parses a file name (not a path) into its type and number (0 for `CURRENT` and `LOCK`).
#[must_use]
pub fn parse_file_name(name: &str) -> Option<(FileType, u64)> {
    match name {
        "CURRENT" => return Some((FileType::Current, 0)),
        "LOCK" => return Some((FileType::Lock, 0)),
        "IDENTITY" => return Some((FileType::Identity, 0)),
        "LOG" => return Some((FileType::InfoLog, 0)),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("LOG.old.") {
        return n.parse().ok().map(|n| (FileType::InfoLog, n));
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(|n| (FileType::Manifest, n));
    }
    if let Some(n) = name.strip_prefix("OPTIONS-") {
        return n.parse().ok().map(|n| (FileType::Options, n));
    }
    let (num, ext) = name.split_once('.')?;
    let n: u64 = num.parse().ok()?;
    let t = match ext {
        "sst" => FileType::Sst,
        "log" => FileType::Wal,
        "dbtmp" => FileType::Temp,
        _ => return None,
    };
    Some((t, n))
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
    let tmp = temp_file(dir, temp_number);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        let d = Path::new("db");
        for (p, t, n) in [
            (sst_file(d, 7), FileType::Sst, 7),
            (wal_file(d, 12), FileType::Wal, 12),
            (manifest_file(d, 3), FileType::Manifest, 3),
            (options_file(d, 9), FileType::Options, 9),
            (temp_file(d, 1_234_567), FileType::Temp, 1_234_567),
        ] {
            let name = p.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse_file_name(name), Some((t, n)), "{name}");
        }
        assert_eq!(parse_file_name("CURRENT"), Some((FileType::Current, 0)));
        assert_eq!(parse_file_name("LOCK"), Some((FileType::Lock, 0)));
        assert_eq!(parse_file_name("IDENTITY"), Some((FileType::Identity, 0)));
        assert_eq!(parse_file_name("foo.txt"), None);
        assert_eq!(parse_file_name("MANIFEST-x"), None);
    }
}
