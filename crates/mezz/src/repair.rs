//! `mezz repair DB`: runs `mezzanine::repair_db` (LevelDB's `RepairDB`) with the options
//! the arguments give and prints its report; a repair that fails is an error (exit code 2).
//! Damage the repair works around (a dropped table, a torn log) is in the report, not an
//! error. A database with column families: a line names the families repaired (marking the
//! names a repair had to make up, `recovered-cf-<id>`), and the report then has each
//! family's own, indented.

use crate::common::{CliError, DbArgs, Result};

/// Arguments of `mezz repair`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
}

/// Runs `mezz repair`.
pub fn run(a: &Args) -> Result<()> {
    let options = a.db.engine.options(&[])?;
    let report = mezzanine::repair_db(&a.db.db, &options)
        .map_err(|e| CliError::Failed(format!("repair of {} failed: {e}", a.db.db.display())))?;
    println!("repaired {}", a.db.db.display());
    if !report.families.is_empty() {
        let names: Vec<String> = report
            .families
            .iter()
            .map(|f| {
                if f.name_recovered {
                    format!("{} (id {}, name recovered)", f.name, f.id)
                } else {
                    format!("{} (id {})", f.name, f.id)
                }
            })
            .collect();
        println!("column families: {}", names.join(", "));
    }
    println!("{report}");
    Ok(())
}
