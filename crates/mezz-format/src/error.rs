//! The error type shared by every layer of Mezzanine.
//!
//! `Corruption` is kept apart from `Io` and always names the file (when known), the byte
//! offset and what was wrong, so a user can find the damage.

use std::path::PathBuf;

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
        /// What was wrong, e.g. "block checksum mismatch: got 0x.., expected 0x..".
        detail: String,
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
}

impl Error {
    /// A corruption error with no file attached yet (decoders use this; callers add the file
    /// with [`Error::in_file`]).
    #[must_use]
    pub fn corruption(offset: u64, detail: impl Into<String>) -> Self {
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
        }
    }

    /// Whether this is a corruption error.
    #[must_use]
    pub fn is_corruption(&self) -> bool {
        matches!(self, Self::Corruption { .. })
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Self::Io { path: None, source }
    }
}
