//! `mezz delete DB KEY`: one synchronous delete (deleting an absent key succeeds).

use std::ffi::OsString;

use mezzanine::WriteOptions;

use crate::common::{DbArgs, Result, arg_bytes, close};

/// Arguments of `mezz delete`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// The key (taken byte for byte).
    key: OsString,
}

/// Runs `mezz delete`.
pub fn run(a: &Args) -> Result<()> {
    let db = a.db.open(false)?;
    db.delete_opt(&WriteOptions { sync: true }, &arg_bytes(&a.key))?;
    close(&db)
}
