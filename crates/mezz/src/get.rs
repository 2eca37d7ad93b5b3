//! `mezz get DB KEY`: prints the value and a newline (escaped as by `scan` if it is not
//! UTF-8); `CliError::NotFound` (exit code 1) when the key has no value.

use std::ffi::OsString;
use std::io::Write;

use crate::common::{CliError, DbArgs, Result, arg_bytes, close, escape_bytes, stdout_error};

/// Arguments of `mezz get`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// The key (taken byte for byte).
    key: OsString,
}

/// Runs `mezz get`.
pub fn run(a: &Args) -> Result<()> {
    let db = a.db.open(false)?;
    let value = db.get(&arg_bytes(&a.key))?;
    close(&db)?;
    let Some(v) = value else {
        return Err(CliError::NotFound);
    };
    let text = match std::str::from_utf8(&v) {
        Ok(s) => s.to_string(),
        Err(_) => escape_bytes(&v),
    };
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) => stdout_error(&e).map_or(Ok(()), Err),
    }
}
