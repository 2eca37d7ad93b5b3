//! `mezz put DB KEY VALUE`: one synchronous put; creates the database if missing.

use std::ffi::OsString;

use mezzanine::WriteOptions;

use crate::common::{DbArgs, Result, arg_bytes, close};

/// Arguments of `mezz put`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// The key (taken byte for byte).
    key: OsString,
    /// The value (taken byte for byte).
    value: OsString,
}

/// Runs `mezz put`.
pub fn run(a: &Args) -> Result<()> {
    let db = a.db.open(true)?;
    db.put_opt(
        &WriteOptions { sync: true },
        &arg_bytes(&a.key),
        &arg_bytes(&a.value),
    )?;
    close(&db)
}
