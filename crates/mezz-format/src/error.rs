//! The format crate's error: what a decoder or encoder of this crate, or the file under it,
//! reports. The engine has its own error (`mezzanine::Error`) with these cases and its own.
//!
//! `Corruption` is kept apart from `Io` and always names the file (when known), the byte
//! offset and what was wrong, so a user can find the damage. What was wrong is a
//! [`CorruptionDetail`]: a checksum mismatch and a bad magic number keep their numbers as
//! fields, anything else is described in words.
//!
//! Invariant: the engine's error mirrors every variant here, with the same fields, and
//! converts from this type variant by variant (an exhaustive match). So this enum is not
//! `#[non_exhaustive]`: a variant added here does not compile until the engine gives it its
//! place.
//!
//! Thread-safety: plain values (`Send + Sync`).

use std::fmt;
use std::path::PathBuf;

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// Every error of the persisted formats and the files holding them.
#[derive(Debug, thiserror::Error)]
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
}

/// What was wrong with corrupt bytes. Its `Display` is the text the error shows after the
/// file and offset.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorruptionDetail {
    /// A stored checksum does not match the checksum of the bytes it covers.
    Checksum {
        /// What the checksum covers: `block`, `footer`, `fragment at offset 4096`.
        what: String,
        /// The checksum stored in the file (unmasked).
        stored: u32,
        /// The checksum of the bytes as read.
        computed: u32,
    },
    /// A magic number is not the one the structure must carry.
    BadMagic {
        /// Which structure: `footer`, `KeySet block trailer`.
        what: &'static str,
        /// The bytes found where the magic number belongs, as a little-endian integer.
        found: u64,
    },
    /// Anything else, in words: an impossible length, a field out of range, a short read.
    Other(String),
}

impl fmt::Display for CorruptionDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Checksum {
                what,
                stored,
                computed,
            } => write!(
                f,
                "{what} checksum mismatch: got {computed:#010x}, expected {stored:#010x}"
            ),
            Self::BadMagic { what, found } => write!(f, "{what}: bad magic {found:#x}"),
            Self::Other(detail) => f.write_str(detail),
        }
    }
}

impl From<String> for CorruptionDetail {
    fn from(detail: String) -> Self {
        Self::Other(detail)
    }
}

impl From<&str> for CorruptionDetail {
    fn from(detail: &str) -> Self {
        Self::Other(detail.to_owned())
    }
}

impl Error {
    /// A corruption error with no file attached yet (decoders use this; callers add the file
    /// with [`Error::in_file`]). `detail` is a [`CorruptionDetail`] or, for any other
    /// damage, its description in words.
    #[must_use]
    pub fn corruption(offset: u64, detail: impl Into<CorruptionDetail>) -> Self {
        Self::Corruption {
            file: None,
            offset,
            detail: detail.into(),
        }
    }

    /// A checksum mismatch of `what` at `offset` (no file attached yet): `stored` is the
    /// checksum in the file, `computed` the checksum of the bytes read.
    #[must_use]
    pub fn checksum_mismatch(
        offset: u64,
        what: impl Into<String>,
        stored: u32,
        computed: u32,
    ) -> Self {
        Self::corruption(
            offset,
            CorruptionDetail::Checksum {
                what: what.into(),
                stored,
                computed,
            },
        )
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

    /// A copy of this error, for `status()` methods that must report one stored error
    /// again. `Io` errors keep their kind and message (the source chain is flattened into
    /// the text).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_read_as_before() {
        let e = Error::checksum_mismatch(8, "block", 0xdead_beef, 0x1234_5678).in_file("1.sst");
        assert_eq!(
            e.to_string(),
            "corruption in 1.sst: at offset 8: block checksum mismatch: got 0x12345678, \
             expected 0xdeadbeef"
        );
        let e = Error::corruption(
            64,
            CorruptionDetail::BadMagic {
                what: "footer",
                found: 0x0102,
            },
        );
        assert_eq!(
            e.to_string(),
            "corruption in <unknown>: at offset 64: footer: bad magic 0x102"
        );
        let e = Error::corruption(3, format!("bad length {}", 7));
        assert_eq!(
            e.to_string(),
            "corruption in <unknown>: at offset 3: bad length 7"
        );
        assert!(e.is_corruption());
    }

    #[test]
    fn a_duplicate_keeps_the_structure() {
        let e = Error::checksum_mismatch(8, "footer", 1, 2).in_file("x.sst");
        match e.duplicate() {
            Error::Corruption {
                file,
                offset: 8,
                detail:
                    CorruptionDetail::Checksum {
                        what,
                        stored: 1,
                        computed: 2,
                    },
            } => {
                assert_eq!(file.as_deref(), Some(std::path::Path::new("x.sst")));
                assert_eq!(what, "footer");
            }
            other => panic!("{other:?}"),
        }
        // A file already named stays.
        let e = Error::corruption(1, "x").in_file("a").in_file("b");
        assert!(e.to_string().contains("corruption in a:"), "{e}");
    }
}
