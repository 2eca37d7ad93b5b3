//! Per-thread counters of what reads waited on: block reads from files and table opens.
//!
//! Owns: one [`ReadWaits`] per thread, added to where the wait happens (the block read of a
//! table, the opening of a table) and read by whoever wants to know what one request spent
//! its time on: take [`current`] before and after, and [`ReadWaits::since`] gives the
//! request's own waits (the engine keeps the slowest point reads this way).
//!
//! Invariants: the counters only grow (wrapping is not a concern at nanosecond resolution
//! for centuries of waiting); work done on another thread (a pool) is not counted here.
//!
//! Thread-safety: thread-local; nothing is shared.

use std::cell::Cell;
use std::time::Instant;

/// What the calling thread has waited on since it started, in counts and nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadWaits {
    /// Blocks read from a file (block cache misses, index and filter blocks).
    pub block_reads: u64,
    /// Nanoseconds spent in those reads.
    pub block_read_nanos: u64,
    /// Tables opened (table cache misses: footer, index and filter read and checked).
    pub table_opens: u64,
    /// Nanoseconds spent opening them.
    pub table_open_nanos: u64,
}

impl ReadWaits {
    /// The waits since `earlier` (a value of [`current`] taken before on the same thread).
    #[must_use]
    pub fn since(&self, earlier: &ReadWaits) -> ReadWaits {
        ReadWaits {
            block_reads: self.block_reads.wrapping_sub(earlier.block_reads),
            block_read_nanos: self.block_read_nanos.wrapping_sub(earlier.block_read_nanos),
            table_opens: self.table_opens.wrapping_sub(earlier.table_opens),
            table_open_nanos: self.table_open_nanos.wrapping_sub(earlier.table_open_nanos),
        }
    }
}

thread_local! {
    static WAITS: Cell<ReadWaits> = const {
        Cell::new(ReadWaits {
            block_reads: 0,
            block_read_nanos: 0,
            table_opens: 0,
            table_open_nanos: 0,
        })
    };
}

/// The calling thread's counters.
#[must_use]
pub fn current() -> ReadWaits {
    WAITS.with(Cell::get)
}

fn nanos_since(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Adds one wait that started at `started` to the counters `field` picks.
fn add(started: Instant, field: fn(&mut ReadWaits) -> (&mut u64, &mut u64)) {
    let d = nanos_since(started);
    WAITS.with(|w| {
        let mut v = w.get();
        let (count, nanos) = field(&mut v);
        *count = count.wrapping_add(1);
        *nanos = nanos.wrapping_add(d);
        w.set(v);
    });
}

/// Counts one block read from a file that started at `started`.
pub fn block_read(started: Instant) {
    add(started, |v| (&mut v.block_reads, &mut v.block_read_nanos));
}

/// Counts one table open that started at `started`.
pub fn table_open(started: Instant) {
    add(started, |v| (&mut v.table_opens, &mut v.table_open_nanos));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_counted_per_thread_and_differenced() {
        let before = current();
        let t = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        block_read(t);
        table_open(Instant::now());
        let d = current().since(&before);
        assert_eq!((d.block_reads, d.table_opens), (1, 1));
        assert!(d.block_read_nanos >= 2_000_000, "{d:?}");
        // Another thread starts from its own counters.
        let other = std::thread::spawn(|| {
            let b = current();
            block_read(Instant::now());
            current().since(&b).block_reads
        })
        .join()
        .unwrap();
        assert_eq!(other, 1);
        assert_eq!(current().since(&before).block_reads, 1);
    }
}
