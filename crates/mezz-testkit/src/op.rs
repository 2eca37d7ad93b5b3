//! Operations of a test log, the observable outputs they produce, and their rendering as
//! Rust source (so a shrunken failing log can be pasted into a regression test).
//!
//! Owns: [`Op`] and its parts, [`Output`], [`make_value`] (the deterministic byte pattern the
//! generator uses for values and long keys) and [`ops_to_rust`].
//!
//! Invariants: an `Op` is self-contained: it names keys and values by their bytes and
//! snapshots by a slot number that is reduced modulo the number of live snapshots when the
//! op runs, so removing ops from a log (shrinking) never makes a later op invalid.
//!
//! Thread-safety: plain data (`Send + Sync`).

use std::fmt::{self, Write as _};

/// One update inside a [`Op::Batch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// Set `key` to `value`.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Delete `key`.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
}

/// One step of an iterator walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `DbIterator::next`.
    Next,
    /// `DbIterator::prev`.
    Prev,
}

/// How an iterator walk positions the iterator first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeekStart {
    /// `seek_to_first`.
    First,
    /// `seek_to_last`.
    Last,
    /// `seek(key)`: first key >= `key`.
    Seek(Vec<u8>),
    /// `seek_for_prev(key)`: last key <= `key`.
    SeekForPrev(Vec<u8>),
}

/// One operation of a test log, applied both to the database and to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `Db::put`.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// `Db::delete`.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
    /// `Db::write` of a batch (applied atomically, in order).
    Batch(Vec<BatchOp>),
    /// `Db::get` in the latest state.
    Get {
        /// The key.
        key: Vec<u8>,
    },
    /// A bounded scan of the latest state: up to `limit` entries, forward from the first key
    /// or backward from the last one.
    Iterate {
        /// Inclusive lower bound (`ReadOptions::lower_bound`).
        lower: Option<Vec<u8>>,
        /// Exclusive upper bound (`ReadOptions::upper_bound`).
        upper: Option<Vec<u8>>,
        /// Walk from the last key with `prev`.
        reverse: bool,
        /// Entries to read at most.
        limit: usize,
    },
    /// An iterator positioned by `start`, then moved by `steps` (mixed `next` / `prev`);
    /// the output records the position after the seek and after every step, and stops at
    /// the first step that leaves the iterator unpositioned.
    Walk {
        /// Inclusive lower bound.
        lower: Option<Vec<u8>>,
        /// Exclusive upper bound.
        upper: Option<Vec<u8>>,
        /// The first positioning call.
        start: SeekStart,
        /// The moves that follow.
        steps: Vec<Step>,
    },
    /// `Db::snapshot`; the snapshot joins the list of live snapshots.
    TakeSnapshot,
    /// A `get` and a bounded scan at a live snapshot (slot `snapshot % live`); a no-op with
    /// output [`Output::NoSnapshot`] when none is live.
    ReadAtSnapshot {
        /// Which live snapshot (reduced modulo the number of live snapshots).
        snapshot: usize,
        /// The key to get.
        key: Vec<u8>,
        /// Inclusive lower bound of the scan.
        lower: Option<Vec<u8>>,
        /// Exclusive upper bound of the scan.
        upper: Option<Vec<u8>>,
        /// Scan backward.
        reverse: bool,
        /// Entries to read at most.
        limit: usize,
    },
    /// Drops a live snapshot (slot `snapshot % live`; no-op when none is live).
    ReleaseSnapshot {
        /// Which live snapshot.
        snapshot: usize,
    },
    /// `Db::flush`.
    Flush,
    /// `Db::compact_range(begin, end)`.
    CompactRange {
        /// First key of the range (`None` = unbounded).
        begin: Option<Vec<u8>>,
        /// Last key of the range (`None` = unbounded).
        end: Option<Vec<u8>>,
    },
    /// `Db::close` then `Db::open` with the same options; every live snapshot and held
    /// iterator is dropped first (they do not survive a reopen).
    Reopen,
    /// Creates an iterator, positions it with `start` and keeps it: it must go on showing
    /// the state of this moment while later ops write, flush and compact. The output
    /// records its first position.
    IterOpen {
        /// Inclusive lower bound.
        lower: Option<Vec<u8>>,
        /// Exclusive upper bound.
        upper: Option<Vec<u8>>,
        /// The first positioning call.
        start: SeekStart,
    },
    /// Moves a held iterator (slot `iter % held`; output [`Output::NoIterator`] when none
    /// is held) and records its positions, stopping when it becomes invalid.
    IterStep {
        /// Which held iterator (reduced modulo the number held).
        iter: usize,
        /// The moves.
        steps: Vec<Step>,
    },
    /// Drops a held iterator (slot `iter % held`).
    IterClose {
        /// Which held iterator.
        iter: usize,
    },
    /// `Db::run_background_work(jobs)`: runs up to `jobs` due flushes and compactions on
    /// the test thread. Under `manual_background` these (and the writers that would wait
    /// for background work) are the only points where background work happens, so the
    /// seed decides every interleaving.
    Background {
        /// Jobs to run at most.
        jobs: usize,
    },
}

impl Op {
    /// Whether the op changes the database's contents.
    #[must_use]
    pub fn is_write(&self) -> bool {
        matches!(self, Op::Put { .. } | Op::Delete { .. } | Op::Batch(_))
    }
}

/// What one op lets a user observe. Two runs of one log agree iff their outputs are equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// The op returned `Ok(())` (writes, flush, compaction, snapshots, reopen).
    Done,
    /// The result of a `get`.
    Value(Option<Vec<u8>>),
    /// The entries a scan returned, in the order returned.
    Entries(Vec<(Vec<u8>, Vec<u8>)>),
    /// The positions of a walk: `None` = the iterator was not valid.
    Walk(Vec<Option<(Vec<u8>, Vec<u8>)>>),
    /// The result of a read at a snapshot.
    SnapshotRead {
        /// The `get`.
        value: Option<Vec<u8>>,
        /// The scan.
        entries: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// A snapshot op found no live snapshot.
    NoSnapshot,
    /// An iterator op found no held iterator.
    NoIterator,
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn entries(f: &mut fmt::Formatter<'_>, e: &[(Vec<u8>, Vec<u8>)]) -> fmt::Result {
            write!(f, "[")?;
            for (i, (k, v)) in e.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{} => {}", Abbrev(k), Abbrev(v))?;
            }
            write!(f, "] ({} entries)", e.len())
        }
        match self {
            Output::Done => write!(f, "Ok"),
            Output::Value(None) => write!(f, "None"),
            Output::Value(Some(v)) => write!(f, "Some({})", Abbrev(v)),
            Output::Entries(e) => entries(f, e),
            Output::Walk(w) => {
                write!(f, "walk [")?;
                for (i, p) in w.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    match p {
                        None => write!(f, "<invalid>")?,
                        Some((k, v)) => write!(f, "{} => {}", Abbrev(k), Abbrev(v))?,
                    }
                }
                write!(f, "]")
            }
            Output::SnapshotRead { value, entries: e } => {
                match value {
                    None => write!(f, "get None, scan ")?,
                    Some(v) => write!(f, "get Some({}), scan ", Abbrev(v))?,
                }
                entries(f, e)
            }
            Output::NoSnapshot => write!(f, "no live snapshot"),
            Output::NoIterator => write!(f, "no held iterator"),
        }
    }
}

/// Displays a byte string escaped, cut after 48 bytes with its length appended.
#[derive(Debug, Clone, Copy)]
pub struct Abbrev<'a>(pub &'a [u8]);

impl fmt::Display for Abbrev<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOW: usize = 48;
        let shown = self.0.get(..SHOW).unwrap_or(self.0);
        write!(f, "\"{}\"", escape(shown))?;
        if self.0.len() > SHOW {
            write!(f, "..(len {})", self.0.len())?;
        }
        Ok(())
    }
}

/// Escapes bytes for a Rust byte-string literal (without the quotes).
#[must_use]
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(char::from(b)),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

/// A deterministic byte string of length `len` identified by `tag`: the tag in hex, a `.`,
/// then printable pseudo-random filler seeded by the tag. Distinct tags give distinct
/// strings once `len` exceeds the tag's text, so overwritten values are told apart.
#[must_use]
pub fn make_value(tag: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{tag:x}.").into_bytes();
    v.truncate(len);
    let mut x = tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while v.len() < len {
        // xorshift64: cheap, deterministic, no dependency on the rand crate's streams.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = b'!' + u8::try_from(x % 94).unwrap_or(0);
        v.push(b);
    }
    v
}

/// If `bytes` is exactly `make_value(tag, bytes.len())` for some tag, that tag.
fn as_made_value(bytes: &[u8]) -> Option<u64> {
    let dot = bytes.iter().position(|&b| b == b'.')?;
    let hex = std::str::from_utf8(bytes.get(..dot)?).ok()?;
    let tag = u64::from_str_radix(hex, 16).ok()?;
    (make_value(tag, bytes.len()) == bytes).then_some(tag)
}

/// Rust source for a byte string: a literal when short, `make_value(..)` when it is one.
#[must_use]
pub fn bytes_to_rust(bytes: &[u8]) -> String {
    if bytes.len() > 64
        && let Some(tag) = as_made_value(bytes)
    {
        return format!("make_value({tag}, {})", bytes.len());
    }
    format!("b\"{}\".to_vec()", escape(bytes))
}

fn opt_to_rust(b: Option<&Vec<u8>>) -> String {
    match b {
        None => "None".to_string(),
        Some(b) => format!("Some({})", bytes_to_rust(b)),
    }
}

fn start_to_rust(start: &SeekStart) -> String {
    match start {
        SeekStart::First => "SeekStart::First".to_string(),
        SeekStart::Last => "SeekStart::Last".to_string(),
        SeekStart::Seek(k) => format!("SeekStart::Seek({})", bytes_to_rust(k)),
        SeekStart::SeekForPrev(k) => format!("SeekStart::SeekForPrev({})", bytes_to_rust(k)),
    }
}

fn steps_to_rust(steps: &[Step]) -> String {
    let steps: Vec<&str> = steps
        .iter()
        .map(|s| match s {
            Step::Next => "Step::Next",
            Step::Prev => "Step::Prev",
        })
        .collect();
    format!("vec![{}]", steps.join(", "))
}

/// Rust source for one op (an expression of type `Op`, assuming `use mezz_testkit::op::*`).
#[must_use]
pub fn op_to_rust(op: &Op) -> String {
    let b = |x: &Vec<u8>| bytes_to_rust(x);
    match op {
        Op::Put { key, value } => format!("Op::Put {{ key: {}, value: {} }}", b(key), b(value)),
        Op::Delete { key } => format!("Op::Delete {{ key: {} }}", b(key)),
        Op::Batch(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|i| match i {
                    BatchOp::Put { key, value } => {
                        format!("BatchOp::Put {{ key: {}, value: {} }}", b(key), b(value))
                    }
                    BatchOp::Delete { key } => format!("BatchOp::Delete {{ key: {} }}", b(key)),
                })
                .collect();
            format!("Op::Batch(vec![{}])", parts.join(", "))
        }
        Op::Get { key } => format!("Op::Get {{ key: {} }}", b(key)),
        Op::Iterate {
            lower,
            upper,
            reverse,
            limit,
        } => format!(
            "Op::Iterate {{ lower: {}, upper: {}, reverse: {reverse}, limit: {limit} }}",
            opt_to_rust(lower.as_ref()),
            opt_to_rust(upper.as_ref())
        ),
        Op::Walk {
            lower,
            upper,
            start,
            steps,
        } => format!(
            "Op::Walk {{ lower: {}, upper: {}, start: {}, steps: {} }}",
            opt_to_rust(lower.as_ref()),
            opt_to_rust(upper.as_ref()),
            start_to_rust(start),
            steps_to_rust(steps)
        ),
        Op::IterOpen {
            lower,
            upper,
            start,
        } => format!(
            "Op::IterOpen {{ lower: {}, upper: {}, start: {} }}",
            opt_to_rust(lower.as_ref()),
            opt_to_rust(upper.as_ref()),
            start_to_rust(start)
        ),
        Op::IterStep { iter, steps } => format!(
            "Op::IterStep {{ iter: {iter}, steps: {} }}",
            steps_to_rust(steps)
        ),
        Op::IterClose { iter } => format!("Op::IterClose {{ iter: {iter} }}"),
        Op::TakeSnapshot => "Op::TakeSnapshot".to_string(),
        Op::ReadAtSnapshot {
            snapshot,
            key,
            lower,
            upper,
            reverse,
            limit,
        } => format!(
            "Op::ReadAtSnapshot {{ snapshot: {snapshot}, key: {}, lower: {}, upper: {}, \
             reverse: {reverse}, limit: {limit} }}",
            b(key),
            opt_to_rust(lower.as_ref()),
            opt_to_rust(upper.as_ref())
        ),
        Op::ReleaseSnapshot { snapshot } => {
            format!("Op::ReleaseSnapshot {{ snapshot: {snapshot} }}")
        }
        Op::Flush => "Op::Flush".to_string(),
        Op::CompactRange { begin, end } => format!(
            "Op::CompactRange {{ begin: {}, end: {} }}",
            opt_to_rust(begin.as_ref()),
            opt_to_rust(end.as_ref())
        ),
        Op::Reopen => "Op::Reopen".to_string(),
        Op::Background { jobs } => format!("Op::Background {{ jobs: {jobs} }}"),
    }
}

/// A complete `#[test]` function named `name` that replays `ops` under every option set
/// (see [`crate::check_log`]), ready to paste into `tests/regressions.rs`.
#[must_use]
pub fn ops_to_rust(name: &str, ops: &[Op]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "#[test]");
    let _ = writeln!(s, "fn {name}() {{");
    let _ = writeln!(s, "    let ops = vec![");
    for op in ops {
        let _ = writeln!(s, "        {},", op_to_rust(op));
    }
    let _ = writeln!(s, "    ];");
    let _ = writeln!(s, "    check_log(&ops);");
    let _ = writeln!(s, "}}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_value_is_deterministic_and_distinct() {
        assert_eq!(make_value(7, 100), make_value(7, 100));
        assert_ne!(make_value(7, 100), make_value(8, 100));
        assert_eq!(make_value(7, 0), Vec::<u8>::new());
        assert_eq!(make_value(0x1f, 3), b"1f.".to_vec());
        assert_eq!(make_value(99, 10_000).len(), 10_000);
    }

    #[test]
    fn long_made_values_render_compactly() {
        let v = make_value(1234, 500);
        assert_eq!(bytes_to_rust(&v), "make_value(1234, 500)");
        assert_eq!(bytes_to_rust(b"a\"\x00"), "b\"a\\\"\\x00\".to_vec()");
        let mut w = v.clone();
        if let Some(last) = w.last_mut() {
            *last ^= 1;
        }
        assert!(bytes_to_rust(&w).starts_with("b\""));
    }

    #[test]
    fn rust_rendering_names_every_field() {
        let ops = vec![
            Op::Batch(vec![
                BatchOp::Put {
                    key: b"k".to_vec(),
                    value: Vec::new(),
                },
                BatchOp::Delete { key: b"j".to_vec() },
            ]),
            Op::Walk {
                lower: None,
                upper: Some(b"z".to_vec()),
                start: SeekStart::SeekForPrev(b"m".to_vec()),
                steps: vec![Step::Next, Step::Prev],
            },
        ];
        let code = ops_to_rust("regression_x", &ops);
        assert!(code.contains("fn regression_x()"));
        assert!(code.contains("BatchOp::Delete { key: b\"j\".to_vec() }"));
        assert!(code.contains("steps: vec![Step::Next, Step::Prev]"));
        assert!(code.contains("check_log(&ops);"));
    }
}
