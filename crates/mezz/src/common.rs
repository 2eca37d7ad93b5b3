//! What the subcommands share: the database arguments and how a database is opened from
//! them, the error type and its exit codes, and the escaping of bytes for printing.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;

use mezzanine::{Db, Options};

/// How a subcommand fails.
#[derive(Debug)]
pub enum CliError {
    /// The key asked for has no value (exit code 1, like `grep`).
    NotFound,
    /// Anything else (exit code 2), with a one-line message.
    Failed(String),
}

impl From<mezzanine::Error> for CliError {
    fn from(e: mezzanine::Error) -> Self {
        CliError::Failed(e.to_string())
    }
}

impl From<mezz_bench::BenchError> for CliError {
    fn from(e: mezz_bench::BenchError) -> Self {
        CliError::Failed(e.to_string())
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, CliError>;

/// Engine options every subcommand that opens a database accepts.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Start from this preset's options (default: leveldb).
    #[arg(long)]
    pub preset: Option<String>,
    /// Set one engine option, `name=value` (repeatable; applied after the preset).
    #[arg(long = "opt", value_name = "NAME=VALUE")]
    pub opts: Vec<String>,
}

/// The database directory plus the engine options.
#[derive(Debug, Clone, clap::Args)]
pub struct DbArgs {
    /// The database directory.
    #[arg(value_name = "DB")]
    pub db: PathBuf,
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl EngineArgs {
    /// Builds the options: preset, then `defaults`, then the user's `--opt`s (which win).
    pub fn options(&self, defaults: &[(&str, &str)]) -> Result<Options> {
        let mut overrides: Vec<(String, String)> = defaults
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        for o in &self.opts {
            overrides.push(mezz_bench::parse_opt(o)?);
        }
        Ok(mezz_bench::build_options(
            self.preset.as_deref(),
            &overrides,
        )?)
    }
}

impl DbArgs {
    /// Opens the database; with `create == false` a missing database is an error rather
    /// than silently created (unless `--opt create_if_missing=true` is given).
    pub fn open(&self, create: bool) -> Result<Db> {
        let defaults: &[(&str, &str)] = if create {
            &[]
        } else {
            &[("create_if_missing", "false")]
        };
        let options = self.engine.options(defaults)?;
        Db::open(&self.db, options)
            .map_err(|e| CliError::Failed(format!("cannot open {}: {e}", self.db.display())))
    }
}

/// The bytes of a command-line argument, exactly as given.
pub fn arg_bytes(s: &OsString) -> Vec<u8> {
    s.clone().into_encoded_bytes()
}

/// Renders bytes for a line-oriented output: valid UTF-8 is kept except that `\`, tab,
/// newline, carriage return and other control characters are escaped (`\\`, `\t`, `\n`,
/// `\r`, `\xNN`); bytes that are not UTF-8 become `\xNN`.
pub fn escape_bytes(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                '\t' => s.push_str("\\t"),
                '\n' => s.push_str("\\n"),
                '\r' => s.push_str("\\r"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for byte in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(s, "\\x{byte:02x}");
                    }
                }
                c => s.push(c),
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(s, "\\x{byte:02x}");
        }
    }
    s
}

/// Closes the database, turning a close error into a `CliError`.
pub fn close(db: &Db) -> Result<()> {
    db.close()
        .map_err(|e| CliError::Failed(format!("closing {}: {e}", db.path().display())))
}

/// Maps an error writing to stdout: a closed pipe (`mezz scan DB | head`) ends quietly.
pub fn stdout_error(e: &std::io::Error) -> Option<CliError> {
    (e.kind() != std::io::ErrorKind::BrokenPipe)
        .then(|| CliError::Failed(format!("writing to stdout: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(escape_bytes(b"hello world"), "hello world");
        assert_eq!(escape_bytes("h\u{e9}llo".as_bytes()), "h\u{e9}llo");
    }

    #[test]
    fn separators_controls_and_invalid_bytes_are_escaped() {
        assert_eq!(escape_bytes(b"a\tb\nc\\d"), "a\\tb\\nc\\\\d");
        assert_eq!(escape_bytes(b"\x00\x7f"), "\\x00\\x7f");
        assert_eq!(escape_bytes(b"ok\xff\xfe"), "ok\\xff\\xfe");
    }
}
