//! The info log: what the engine did and why, in words, for the person who reads a
//! database directory after the fact (LevelDB's and RocksDB's `LOG`).
//!
//! Owns: the `LOG` file of a database directory (at open the previous one is renamed to
//! `LOG.old.<microseconds since the epoch>`, as RocksDB does), or a caller's [`Logger`]
//! (option `info_log`, the C API's `leveldb_options_set_info_log`). Lines are
//! `YYYY/MM/DD-HH:MM:SS.uuuuuu <thread> <message>` in UTC. What is logged: the options in
//! force at open, the recovery steps, flushes, compactions, write stops and their causes,
//! background errors, close.
//!
//! Invariant: logging never fails an operation. A `LOG` that cannot be created or written
//! is given up silently (a read-only directory still opens for reading).
//!
//! Thread-safety: `InfoLog` is `Send + Sync`; lines from several threads never interleave
//! (one lock around each write).

use std::fmt::{self, Debug};
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use mezz_env::{FileSystem, WritableFile};
use parking_lot::Mutex;

use crate::filename;

/// A destination for the info log's lines (option `info_log`).
pub trait Logger: Send + Sync + Debug {
    /// Takes one line, without its newline.
    fn log(&self, line: &str);
}

/// Where the lines go.
enum Sink {
    /// The database directory's `LOG`.
    File(Mutex<Option<Box<dyn WritableFile>>>),
    /// The caller's logger.
    User(Arc<dyn Logger>),
    /// Nowhere (the `LOG` could not be created).
    Off,
}

/// The info log of one open database. See the module documentation.
pub struct InfoLog {
    sink: Sink,
}

impl Debug for InfoLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.sink {
            Sink::File(_) => "InfoLog(LOG)",
            Sink::User(_) => "InfoLog(user)",
            Sink::Off => "InfoLog(off)",
        })
    }
}

impl InfoLog {
    /// The info log of the database in `dir`: `user` if given, else a new `LOG` (the
    /// previous one renamed to `LOG.old.<micros>`).
    #[must_use]
    pub fn open(fs: &dyn FileSystem, dir: &Path, user: Option<Arc<dyn Logger>>) -> InfoLog {
        if let Some(u) = user {
            return InfoLog {
                sink: Sink::User(u),
            };
        }
        let path = filename::info_log_file(dir);
        if fs.exists(&path) {
            let _ = fs.rename(&path, &filename::old_info_log_file(dir, now_micros()));
            remove_old_logs(fs, dir);
        }
        match fs.create(&path) {
            Ok(f) => InfoLog {
                sink: Sink::File(Mutex::new(Some(f))),
            },
            Err(_) => InfoLog { sink: Sink::Off },
        }
    }

    /// An info log that drops every line (tests, tools).
    #[must_use]
    pub fn off() -> InfoLog {
        InfoLog { sink: Sink::Off }
    }

    /// Logs one line (or several, one per line of `msg`).
    pub fn log(&self, msg: fmt::Arguments<'_>) {
        if matches!(self.sink, Sink::Off) {
            return;
        }
        let prefix = format!("{} {}", timestamp(SystemTime::now()), thread_label());
        let text = msg.to_string();
        match &self.sink {
            Sink::User(u) => {
                for line in text.lines() {
                    u.log(&format!("{prefix} {line}"));
                }
            }
            Sink::File(f) => {
                let mut out = String::new();
                for line in text.lines() {
                    out.push_str(&prefix);
                    out.push(' ');
                    out.push_str(line);
                    out.push('\n');
                }
                let mut g = f.lock();
                if let Some(file) = g.as_mut()
                    && (file.append(out.as_bytes()).is_err() || file.flush().is_err())
                {
                    // Give up on a LOG that cannot be written.
                    g.take();
                }
            }
            Sink::Off => {}
        }
    }

    /// Flushes and closes the `LOG` (at close; later lines are dropped).
    pub fn close(&self) {
        if let Sink::File(f) = &self.sink
            && let Some(mut file) = f.lock().take()
        {
            let _ = file.sync();
            let _ = file.close();
        }
    }
}

/// How many earlier info logs (`LOG.old.<micros>`) are kept.
pub const KEEP_OLD_LOGS: usize = 4;

/// Deletes all but the newest [`KEEP_OLD_LOGS`] earlier info logs.
fn remove_old_logs(fs: &dyn FileSystem, dir: &Path) {
    let Ok(names) = fs.list_dir(dir) else {
        return;
    };
    let mut old: Vec<u64> = names
        .iter()
        .filter_map(|n| match filename::parse_file_name(n) {
            Some((filename::FileType::InfoLog, m)) if n != "LOG" => Some(m),
            _ => None,
        })
        .collect();
    old.sort_unstable();
    let excess = old.len().saturating_sub(KEEP_OLD_LOGS);
    for m in old.into_iter().take(excess) {
        let _ = fs.remove_file(&filename::old_info_log_file(dir, m));
    }
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The calling thread's name, or its id.
fn thread_label() -> String {
    let t = std::thread::current();
    match t.name() {
        Some(n) => n.to_string(),
        None => {
            let id = format!("{:?}", t.id());
            id.trim_start_matches("ThreadId(")
                .trim_end_matches(')')
                .to_string()
        }
    }
}

/// `YYYY/MM/DD-HH:MM:SS.uuuuuu` in UTC (LevelDB's layout).
/// `t` as the info log writes it: `YYYY/MM/DD-HH:MM:SS.uuuuuu`, UTC (so that other logs
/// can be read side by side with a `LOG`).
#[must_use]
pub fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (y, m, day) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}/{m:02}/{day:02}-{:02}:{:02}:{:02}.{:06}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        d.subsec_micros()
    )
}

/// The proleptic Gregorian date of day `z` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970/01/01-00:00:00.000000");
        let t = UNIX_EPOCH + Duration::from_micros(1_795_923_440_123_456);
        assert_eq!(timestamp(t), "2026/11/29-03:37:20.123456");
        // A leap day.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(t), "2000/02/29-00:00:00.000000");
    }

    #[derive(Debug, Default)]
    struct Lines(Mutex<Vec<String>>);

    impl Logger for Lines {
        fn log(&self, line: &str) {
            self.0.lock().push(line.to_string());
        }
    }

    #[test]
    fn a_user_logger_gets_one_call_per_line_and_the_file_rotates() {
        let fs = mezz_env::MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let user = Arc::new(Lines::default());
        let log = InfoLog::open(&fs, dir, Some(user.clone()));
        log.log(format_args!("a\nb"));
        let got = user.0.lock().clone();
        assert_eq!(got.len(), 2);
        assert!(got[0].ends_with(" a") && got[1].ends_with(" b"), "{got:?}");
        assert!(!fs.exists(&filename::info_log_file(dir)));
        // The file: a second open keeps the first LOG as LOG.old.<micros>.
        let first = InfoLog::open(&fs, dir, None);
        first.log(format_args!("first"));
        first.close();
        let second = InfoLog::open(&fs, dir, None);
        second.log(format_args!("second"));
        second.close();
        let names = fs.list_dir(dir).unwrap();
        assert!(names.iter().any(|n| n.starts_with("LOG.old.")), "{names:?}");
        let text = String::from_utf8(fs.read_all(&filename::info_log_file(dir)).unwrap()).unwrap();
        assert!(
            text.ends_with(" second\n") && !text.contains("first"),
            "{text}"
        );
        // Old logs beyond the newest few are deleted.
        for _ in 0..KEEP_OLD_LOGS + 3 {
            InfoLog::open(&fs, dir, None).close();
            std::thread::sleep(Duration::from_micros(2));
        }
        let old = fs
            .list_dir(dir)
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("LOG.old."))
            .count();
        assert_eq!(old, KEEP_OLD_LOGS);
    }
}
