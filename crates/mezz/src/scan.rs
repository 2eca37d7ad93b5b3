//! `mezz scan DB [--from K] [--to K] [--limit N] [--reverse]`: prints `key<TAB>value` lines
//! of the keys in `[from, to)`, ascending (or descending with `--reverse`), with bytes
//! escaped by [`escape_bytes`] so each entry stays on one line.

use std::ffi::OsString;
use std::io::{BufWriter, Write};

use mezzanine::ReadOptions;

use crate::common::{CliError, DbArgs, Result, arg_bytes, close, escape_bytes, stdout_error};

/// Arguments of `mezz scan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// First key (inclusive).
    #[arg(long)]
    from: Option<OsString>,
    /// End key (exclusive).
    #[arg(long)]
    to: Option<OsString>,
    /// Print at most this many entries.
    #[arg(long)]
    limit: Option<u64>,
    /// Walk from the last key down.
    #[arg(long)]
    reverse: bool,
}

/// Runs `mezz scan`.
pub fn run(a: &Args) -> Result<()> {
    let db = a.db.open(false)?;
    let opts = ReadOptions {
        lower_bound: a.from.as_ref().map(arg_bytes),
        upper_bound: a.to.as_ref().map(arg_bytes),
        fill_cache: false,
        ..ReadOptions::default()
    };
    // The iterator lives in this block so that it is gone before the database closes.
    let (status, write_result) = {
        let mut it = db.cursor(&opts)?;
        if a.reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let mut out = BufWriter::new(std::io::stdout().lock());
        let mut printed = 0u64;
        let mut write_result = Ok(());
        while it.valid() && a.limit.is_none_or(|l| printed < l) {
            write_result = writeln!(
                out,
                "{}\t{}",
                escape_bytes(it.key()),
                escape_bytes(it.value())
            );
            if write_result.is_err() {
                break;
            }
            printed += 1;
            if a.reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        (it.status(), write_result.and_then(|()| out.flush()))
    };
    status?;
    close(&db)?;
    match write_result {
        Ok(()) => Ok(()),
        Err(e) => stdout_error(&e).map_or(Ok(()), Err::<(), CliError>),
    }
}
