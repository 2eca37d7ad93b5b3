//! Process-wide worker threads that run small jobs off the caller's thread: starting
//! writeback of a file range, preparing and unmapping a mapped log's windows.
//!
//! Owns: [`Worker`], a named thread started on first use and the channel to it.
//!
//! Invariants: a worker runs its jobs one at a time, in the order they were sent; a worker
//! whose thread could not be started is not tried again, and every job sent to it is given
//! back to the caller (who runs it, or drops it, itself).
//!
//! Thread-safety: a `Worker` lives in a `static`; [`Worker::run`] may be called from any
//! thread.

use std::sync::{OnceLock, mpsc};

/// A job for a worker.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// A named thread running jobs sent to it, started by the first [`Worker::run`].
#[derive(Debug)]
pub(crate) struct Worker {
    name: &'static str,
    tx: OnceLock<Option<mpsc::Sender<Job>>>,
}

impl Worker {
    /// A worker whose thread will be called `name`.
    pub(crate) const fn new(name: &'static str) -> Self {
        Self {
            name,
            tx: OnceLock::new(),
        }
    }

    /// Queues `job` on the worker's thread; gives it back if there is no thread.
    pub(crate) fn run(&self, job: Job) -> Result<(), Job> {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name(self.name.into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .ok()
                .map(|_| tx)
        });
        match tx {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }
}
