//! Parallel reads (NoveLSM): a `get` probes the memtables on the caller's thread while the
//! SST levels are probed on a small pool of reader threads; the newest hit wins (memtables
//! before L0 before L1 ...).
//!
//! Owns: the reader threads and their job queue. Jobs hold only `Arc`s (the version, the
//! table cache) and owned keys, so a job outliving its `get` (its answer no longer needed)
//! is harmless; a cancel flag lets it stop early.
//!
//! Thread-safety: `ReadPool` is `Send + Sync`; `submit` may be called from any thread.
//! Dropping the pool closes the queue and joins the threads.

use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::Mutex;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A fixed pool of reader threads. See the module documentation.
#[derive(Debug)]
pub struct ReadPool {
    tx: Mutex<Option<Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    size: usize,
}

impl ReadPool {
    /// Starts `threads` reader threads (at least one).
    ///
    /// # Errors
    /// The OS error when a thread cannot be spawned.
    pub fn new(threads: usize) -> std::io::Result<ReadPool> {
        let (tx, rx): (Sender<Job>, Receiver<Job>) = unbounded();
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("mezz-read-{i}"))
                    .spawn(move || {
                        while let Ok(job) = rx.recv() {
                            job();
                        }
                    })?,
            );
        }
        Ok(ReadPool {
            tx: Mutex::new(Some(tx)),
            threads: Mutex::new(handles),
            size: threads.max(1),
        })
    }

    /// Number of reader threads.
    #[must_use]
    pub fn size(&self) -> usize {
        self.size
    }

    /// Queues `job`; returns false when the pool is shut down, in which case the job has
    /// run on the caller's thread instead.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) -> bool {
        let job: Job = Box::new(job);
        let unsent = match self.tx.lock().as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => return true,
                Err(crossbeam_channel::SendError(job)) => job,
            },
            None => job,
        };
        unsent();
        false
    }

    /// Closes the queue and joins the threads (after the jobs already queued).
    pub fn shutdown(&self) {
        self.tx.lock().take();
        for h in std::mem::take(&mut *self.threads.lock()) {
            let _ = h.join();
        }
    }
}

impl Drop for ReadPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn runs_every_job_and_shuts_down() {
        let pool = ReadPool::new(2).unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = crossbeam_channel::unbounded();
        for _ in 0..100 {
            let n = Arc::clone(&n);
            let tx = tx.clone();
            assert!(pool.submit(move || {
                n.fetch_add(1, Ordering::Relaxed);
                tx.send(()).unwrap();
            }));
        }
        for _ in 0..100 {
            rx.recv().unwrap();
        }
        assert_eq!(n.load(Ordering::Relaxed), 100);
        pool.shutdown();
        assert!(!pool.submit(|| {}));
    }
}
