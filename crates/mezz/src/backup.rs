//! `mezz checkpoint DB DIR`, `mezz backup DB BACKUPDIR` (and `--list`, `--verify`,
//! `--purge`, `--delete` on a backup directory) and `mezz restore BACKUPDIR DB [--id N]`:
//! the engine's `Db::checkpoint` and `BackupEngine` from the command line.

use std::path::PathBuf;

use mezzanine::BackupEngine;

use crate::common::{CliError, DbArgs, EngineArgs, Result, close};

/// Arguments of `mezz checkpoint`.
#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The directory to create the copy in (must not exist).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

/// Runs `mezz checkpoint`.
pub fn checkpoint(a: &CheckpointArgs) -> Result<()> {
    let db = a.db.open(false)?;
    let info = db
        .checkpoint(&a.dir)
        .map_err(|e| CliError::Failed(format!("checkpoint failed: {e}")))?;
    close(&db)?;
    println!(
        "checkpoint {} at sequence {}: {} tables ({} linked, {} copied, {} written), {} bytes",
        a.dir.display(),
        info.last_sequence,
        info.tables.len(),
        info.linked,
        info.copied,
        info.materialised,
        info.table_bytes
    );
    Ok(())
}

/// Arguments of `mezz backup`.
#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// `DB BACKUPDIR` to take a backup; only `BACKUPDIR` with `--list`, `--verify`,
    /// `--purge` or `--delete`.
    #[arg(value_name = "DB BACKUPDIR", num_args = 1..=2, required = true)]
    paths: Vec<PathBuf>,
    /// List the backups: id, time, sequence number, files, bytes.
    #[arg(long, conflicts_with_all = ["verify", "purge", "delete"])]
    list: bool,
    /// Verify every file of every backup (of backup `--id N` only).
    #[arg(long, conflicts_with_all = ["purge", "delete"])]
    verify: bool,
    /// With `--verify`: the backup to verify.
    #[arg(long, value_name = "N", requires = "verify")]
    id: Option<u64>,
    /// Delete all but the newest N backups and the files no remaining backup needs.
    #[arg(long, value_name = "N", conflicts_with = "delete")]
    purge: Option<usize>,
    /// Delete backup ID and the files no other backup needs.
    #[arg(long, value_name = "ID")]
    delete: Option<u64>,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Runs `mezz backup`.
pub fn backup(a: &BackupArgs) -> Result<()> {
    let maintenance = a.list || a.verify || a.purge.is_some() || a.delete.is_some();
    let (db_dir, backup_dir) = match (a.paths.as_slice(), maintenance) {
        ([dir], true) => (None, dir),
        ([db, dir], false) => (Some(db), dir),
        (_, true) => {
            return Err(CliError::Failed(
                "--list, --verify, --purge and --delete take only BACKUPDIR".into(),
            ));
        }
        (_, false) => {
            return Err(CliError::Failed(
                "usage: mezz backup DB BACKUPDIR (or BACKUPDIR with --list, --verify, \
                 --purge or --delete)"
                    .into(),
            ));
        }
    };
    // Opening creates the directory: only a backup may do that.
    if maintenance && !backup_dir.exists() {
        return Err(CliError::Failed(format!(
            "no backup directory {}",
            backup_dir.display()
        )));
    }
    let mut engine = BackupEngine::open(backup_dir)?;
    if let Some(db_dir) = db_dir {
        let args = DbArgs {
            db: db_dir.clone(),
            engine: a.engine.clone(),
        };
        let db = args.open(false)?;
        let made = engine
            .create_backup(&db)
            .map_err(|e| CliError::Failed(format!("backup failed: {e}")))?;
        close(&db)?;
        println!(
            "backup {} at sequence {}: {} files, {} bytes ({} tables copied, {} already \
             there, {} bytes written)",
            made.info.id,
            made.info.sequence,
            made.info.num_files,
            made.info.size,
            made.tables_copied,
            made.tables_shared,
            made.bytes_copied
        );
    } else if a.list {
        println!("id\ttimestamp\tsequence\tfiles\tbytes");
        for b in engine.list()? {
            println!(
                "{}\t{}\t{}\t{}\t{}",
                b.id, b.timestamp, b.sequence, b.num_files, b.size
            );
        }
    } else if a.verify {
        let ids: Vec<u64> = match a.id {
            Some(id) => vec![id],
            None => engine.list()?.iter().map(|b| b.id).collect(),
        };
        for id in ids {
            let b = engine
                .verify(id)
                .map_err(|e| CliError::Failed(format!("verify failed: {e}")))?;
            println!("backup {id}: OK, {} files, {} bytes", b.num_files, b.size);
        }
    } else if let Some(n) = a.purge {
        let gone = engine.purge_old(n)?;
        println!("deleted {} backups {gone:?}", gone.len());
    } else if let Some(id) = a.delete {
        engine.delete(id)?;
        println!("deleted backup {id}");
    }
    Ok(())
}

/// Arguments of `mezz restore`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The backup directory.
    #[arg(value_name = "BACKUPDIR")]
    backup_dir: PathBuf,
    /// The database directory to restore into (must not hold a database).
    #[arg(value_name = "DB")]
    db: PathBuf,
    /// The backup to restore (default: the newest).
    #[arg(long)]
    id: Option<u64>,
}

/// Runs `mezz restore`.
pub fn restore(a: &RestoreArgs) -> Result<()> {
    if !a.backup_dir.join("meta").is_dir() {
        return Err(CliError::Failed(format!(
            "{} is not a backup directory",
            a.backup_dir.display()
        )));
    }
    let engine = BackupEngine::open(&a.backup_dir)?;
    let id =
        match a.id {
            Some(id) => id,
            None => engine.list()?.last().map(|b| b.id).ok_or_else(|| {
                CliError::Failed(format!("no backup in {}", a.backup_dir.display()))
            })?,
        };
    let b = engine
        .restore(id, &a.db)
        .map_err(|e| CliError::Failed(format!("restore failed: {e}")))?;
    println!(
        "restored backup {id} (sequence {}, {} files, {} bytes) to {}",
        b.sequence,
        b.num_files,
        b.size,
        a.db.display()
    );
    Ok(())
}
