//! Group commit in front of the engine: connections queue their write batches, and one of
//! them at a time (the leader) appends every queued batch into one and writes it with one
//! `Db::write` (with `--sync`, one fsync); the others sleep on a condition variable until
//! their batch is written.
//!
//! Why here and not only in the engine: the engine groups concurrent writers too, but its
//! followers wait by spinning and yielding the core, which costs most of two cores once
//! dozens of connection threads write at once. Here only one thread at a time enters the
//! engine's write path, and waiting connections block.
//!
//! Invariants: batches are written in the order they were queued, each atomically (a merged
//! batch is one engine batch); a ticket completes only after the group holding it was
//! written; one group holds at most `GROUP_BYTES` (or a single larger batch). A failed
//! group fails every batch in it with the engine's error.
//!
//! Thread-safety: `Committer` is `Sync`; its state is behind one mutex.

use std::collections::VecDeque;

use mezzanine::{Db, WriteBatch, WriteOptions};
use parking_lot::{Condvar, Mutex};

/// Largest merged batch (bytes of the engine's batch encoding).
const GROUP_BYTES: usize = 4 << 20;
/// Failed groups remembered for their followers.
const FAILURES_KEPT: usize = 64;

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<(u64, WriteBatch)>,
    next_ticket: u64,
    /// Every ticket below this one has been written (or failed).
    completed: u64,
    leader: bool,
    /// Recent failed groups: tickets `[start, end)` and the error text.
    failures: VecDeque<(u64, u64, String)>,
}

/// The write queue.
#[derive(Debug, Default)]
pub struct Committer {
    state: Mutex<State>,
    done: Condvar,
}

/// A failed group write: the engine's error, as text for the followers.
#[derive(Debug)]
pub enum CommitError {
    /// This thread wrote the group and got the engine's error.
    Engine(mezzanine::Error),
    /// Another thread wrote the group; its error text.
    Group(String),
}

impl Committer {
    /// Writes `batch` (in a group with whatever else is queued) and returns once it is
    /// applied, and synced if `opts.sync`.
    ///
    /// # Errors
    /// The engine's error for the group that held the batch.
    pub fn write(
        &self,
        db: &Db,
        opts: &WriteOptions,
        batch: WriteBatch,
    ) -> Result<(), CommitError> {
        let mut st = self.state.lock();
        let mine = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push_back((mine, batch));
        loop {
            if st.completed > mine {
                return match st
                    .failures
                    .iter()
                    .find(|(a, b, _)| (*a..*b).contains(&mine))
                {
                    Some((_, _, e)) => Err(CommitError::Group(e.clone())),
                    None => Ok(()),
                };
            }
            if !st.leader {
                break;
            }
            self.done.wait(&mut st);
        }
        // Lead: the queue starts at the oldest unwritten ticket, so it holds this thread's
        // batch; take every batch up to it, and more while the group has room.
        st.leader = true;
        let Some((first, mut group)) = st.queue.pop_front() else {
            st.leader = false;
            return Ok(());
        };
        let mut end = first + 1;
        while let Some((t, b)) = st.queue.front() {
            if end > mine && group.approximate_size() + b.approximate_size() > GROUP_BYTES {
                break;
            }
            group.append(b);
            end = *t + 1;
            st.queue.pop_front();
        }
        drop(st);
        let result = db.write(opts, group);
        let mut st = self.state.lock();
        st.completed = end;
        st.leader = false;
        if let Err(e) = &result {
            st.failures.push_back((first, end, e.to_string()));
            while st.failures.len() > FAILURES_KEPT {
                st.failures.pop_front();
            }
        }
        drop(st);
        self.done.notify_all();
        result.map_err(CommitError::Engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn concurrent_writers_are_grouped_and_all_applied() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Arc::new(Db::open(dir.path(), mezzanine::Options::default()).expect("open"));
        let c = Arc::new(Committer::default());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (db, c) = (db.clone(), c.clone());
                std::thread::spawn(move || {
                    for i in 0..200 {
                        let mut b = WriteBatch::new();
                        b.put(format!("{t}-{i}").as_bytes(), b"v");
                        c.write(&db, &WriteOptions::default(), b).expect("write");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        assert_eq!(db.iter().count(), 1600);
        let st = c.state.lock();
        assert_eq!(st.completed, 1600);
        assert!(st.queue.is_empty() && !st.leader);
    }

    #[test]
    fn a_failed_group_fails_its_writers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), mezzanine::Options::default()).expect("open");
        db.close().expect("close");
        let c = Committer::default();
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        assert!(c.write(&db, &WriteOptions::default(), b).is_err());
    }
}
