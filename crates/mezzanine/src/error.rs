//! The engine's error type: the one defined in `mezz-format`, re-exported so that every
//! layer reports the same typed errors (`Corruption` with file and offset, `Io`, ...).

pub use mezz_format::error::{Error, Result};
