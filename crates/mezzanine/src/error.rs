//! The engine's error type, [`Error`], and its [`Result`]: every error a database call,
//! iterator or background job reports.
//!
//! Owns: the cases of the format crate's error (`mezz_format::Error`: `Corruption` with file,
//! offset and a [`CorruptionDetail`], `Io`, `InvalidArgument`, `UnsupportedVersion`), with
//! the same fields, and the engine's own: `Locked`, `Background` and `Closed`. A format
//! error converts variant by variant (`From`, so `?` converts), never changing its kind.
//!
//! Invariant: the conversion from `mezz_format::Error` is an exhaustive match; that enum is
//! kept exhaustive for this reason, so a case added there must be given its place here.
//! An engine-only error never passes through the format crate: the engine's iterators
//! report this type through `InternalIterator<Error>` (see `iter`), and iterators of the
//! format crate are wrapped in an adapter that converts their errors
//! (`table::InFileIter`).
//!
//! Thread-safety: plain values (`Send + Sync`).

use std::path::PathBuf;

pub use mezz_format::CorruptionDetail;

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// Every error Mezzanine reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Persisted bytes are not what was written: a checksum mismatch, a bad magic number,
    /// an impossible length.
    #[error("corruption in {file}: at offset {offset}: {detail}", file = .file.as_ref().map_or_else(|| "<unknown>".to_string(), |p| p.display().to_string()))]
    Corruption {
        /// The file (or NVM pool) holding the bad bytes, when known.
        file: Option<PathBuf>,
        /// Byte offset of the damaged structure inside `file`.
        offset: u64,
        /// What was wrong.
        detail: CorruptionDetail,
    },
    /// An I/O error from the file system.
    #[error("I/O error{}: {source}", .path.as_ref().map_or_else(String::new, |p| format!(" on {}", p.display())))]
    Io {
        /// The path involved, when known.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A caller passed something invalid (options, arguments).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The format version of a persisted structure is not one this build understands.
    #[error("unsupported format version {found} in {what} (this build reads up to {supported})")]
    UnsupportedVersion {
        /// Which structure.
        what: &'static str,
        /// The version found.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },
    /// The database is locked by another handle (this process or another).
    #[error("database at {0} is already open (LOCK held by another handle or process)")]
    Locked(PathBuf),
    /// A background flush or compaction failed earlier; writes are refused until reopen.
    #[error("background error, writes refused until the database is reopened: {0}")]
    Background(String),
    /// The database has been closed.
    #[error("database is closed")]
    Closed,
    /// A transaction could not commit: a key it marked (read for update, or wrote) was
    /// written by another writer after the transaction's snapshot. Nothing of the
    /// transaction was written; retrying it from the start may succeed.
    #[error("busy: {0}")]
    Busy(String),
}

impl Error {
    /// A corruption error with no file attached yet (callers add the file with
    /// [`Error::in_file`]). `detail` is a [`CorruptionDetail`] or the damage in words.
    #[must_use]
    pub fn corruption(offset: u64, detail: impl Into<CorruptionDetail>) -> Self {
        Self::Corruption {
            file: None,
            offset,
            detail: detail.into(),
        }
    }

    /// Attaches a file path to a `Corruption` or `Io` error that has none; other errors
    /// are returned unchanged.
    #[must_use]
    pub fn in_file(self, path: impl Into<PathBuf>) -> Self {
        match self {
            Self::Corruption {
                file: None,
                offset,
                detail,
            } => Self::Corruption {
                file: Some(path.into()),
                offset,
                detail,
            },
            Self::Io { path: None, source } => Self::Io {
                path: Some(path.into()),
                source,
            },
            other => other,
        }
    }

    /// A copy of this error, for `status()` methods and group-commit members that must
    /// report one stored error again. `Io` errors keep their kind and message (the source
    /// chain is flattened into the text).
    #[must_use]
    pub fn duplicate(&self) -> Self {
        match self {
            Self::Corruption {
                file,
                offset,
                detail,
            } => Self::Corruption {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            Self::Io { path, source } => Self::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Self::InvalidArgument(m) => Self::InvalidArgument(m.clone()),
            Self::UnsupportedVersion {
                what,
                found,
                supported,
            } => Self::UnsupportedVersion {
                what,
                found: *found,
                supported: *supported,
            },
            Self::Locked(p) => Self::Locked(p.clone()),
            Self::Background(m) => Self::Background(m.clone()),
            Self::Closed => Self::Closed,
            Self::Busy(m) => Self::Busy(m.clone()),
        }
    }

    /// Whether this is a transaction conflict ([`Error::Busy`]): the transaction wrote
    /// nothing and may be retried.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        matches!(self, Self::Busy(_))
    }

    /// Whether this is a corruption error.
    #[must_use]
    pub fn is_corruption(&self) -> bool {
        matches!(self, Self::Corruption { .. })
    }
}

impl From<mezz_format::Error> for Error {
    fn from(e: mezz_format::Error) -> Self {
        use mezz_format::Error as F;
        match e {
            F::Corruption {
                file,
                offset,
                detail,
            } => Self::Corruption {
                file,
                offset,
                detail,
            },
            F::Io { path, source } => Self::Io { path, source },
            F::InvalidArgument(m) => Self::InvalidArgument(m),
            F::UnsupportedVersion {
                what,
                found,
                supported,
            } => Self::UnsupportedVersion {
                what,
                found,
                supported,
            },
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Self::Io { path: None, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_error_keeps_its_kind_fields_and_text() {
        let f = mezz_format::Error::checksum_mismatch(8, "block", 1, 2).in_file("7.sst");
        let text = f.to_string();
        let e = Error::from(f);
        assert_eq!(e.to_string(), text);
        match e {
            Error::Corruption {
                file,
                offset: 8,
                detail:
                    CorruptionDetail::Checksum {
                        stored: 1,
                        computed: 2,
                        ..
                    },
            } => assert_eq!(file.as_deref(), Some(std::path::Path::new("7.sst"))),
            other => panic!("{other:?}"),
        }
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let f = mezz_format::Error::from(io).in_file("x");
        let text = f.to_string();
        let e = Error::from(f);
        assert_eq!(e.to_string(), text);
        assert!(
            matches!(&e, Error::Io { path: Some(_), source } if source.kind() == std::io::ErrorKind::NotFound)
        );
        let e = Error::from(mezz_format::Error::InvalidArgument("no".into()));
        assert!(matches!(&e, Error::InvalidArgument(m) if m == "no"));
        let e = Error::from(mezz_format::Error::UnsupportedVersion {
            what: "SST file",
            found: 2,
            supported: 1,
        });
        assert!(matches!(
            e,
            Error::UnsupportedVersion {
                what: "SST file",
                found: 2,
                supported: 1
            }
        ));
    }
}
