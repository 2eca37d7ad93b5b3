//! `mezz check DB`: runs `Db::verify()` (every table, every checksum, the version's
//! invariants) and prints a summary; a corruption is reported as an error (exit code 2).

use crate::common::{CliError, DbArgs, Result, close};

/// Arguments of `mezz check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
}

/// Runs `mezz check`.
pub fn run(a: &Args) -> Result<()> {
    let db = a.db.open(false)?;
    let report = db
        .verify()
        .map_err(|e| CliError::Failed(format!("check failed: {e}")))?;
    close(&db)?;
    println!(
        "OK: {} tables, {} entries, {} bytes verified in {}",
        report.tables,
        report.entries,
        report.bytes,
        a.db.db.display()
    );
    Ok(())
}
