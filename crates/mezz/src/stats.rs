//! `mezz stats DB`: prints the `mezz.stats` property (the engine's statistics as text).

use crate::common::{CliError, DbArgs, Result, close};

/// Arguments of `mezz stats`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
}

/// Runs `mezz stats`.
pub fn run(a: &Args) -> Result<()> {
    let db = a.db.open(false)?;
    let text = db.property("mezz.stats");
    close(&db)?;
    let text =
        text.ok_or_else(|| CliError::Failed("the engine has no mezz.stats property".into()))?;
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(())
}
