//! The harness's error type.
//!
//! Engine errors are kept as their own variant (wrapping the engine's message, so adapters of
//! other engines can use it too); everything the harness itself detects is an
//! `InvalidArgument` (bad configuration) or an `Io` error naming the path involved.

use std::path::PathBuf;

/// Result alias.
pub type Result<T> = std::result::Result<T, BenchError>;

/// Every error the harness reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The configuration or an argument is invalid (unknown benchmark, bad size, a `--db`
    /// directory that must not be touched, ...).
    #[error("{0}")]
    InvalidArgument(String),
    /// An engine operation failed.
    #[error("{engine}: {source}")]
    Engine {
        /// The engine's name.
        engine: String,
        /// The engine's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An I/O error of the harness itself (database directory, JSON output).
    #[error("{}: {source}", .path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `--memory-limit` could not put the process in a memory cgroup (what is missing).
    #[error("--memory-limit: {0}")]
    MemoryLimit(String),
    /// A worker thread panicked (a bug in an engine adapter or in the harness).
    #[error("benchmark thread panicked: {0}")]
    ThreadPanic(String),
}

impl BenchError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// Wraps an engine error.
    pub fn engine(
        engine: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Engine {
            engine: engine.into(),
            source: source.into(),
        }
    }
}

impl From<mezzanine::Error> for BenchError {
    fn from(e: mezzanine::Error) -> Self {
        Self::engine("mezzanine", e)
    }
}
