//! [`Gate`]: the admission control between a database handle's calls and its close.
//!
//! Owns the handle's lifecycle state (open, closing, closed) and a count of the calls in
//! flight. Every public call that reads or changes the database passes the gate for its
//! whole duration ([`Gate::enter`] returns a [`Pass`]); `close` shuts the gate (no call
//! enters from then on: they return `Error::Closed`), waits until every pass is dropped,
//! and only then stops the background threads, syncs and releases the LOCK. So once
//! `close` returns, nothing that started on the handle before or after it can still
//! write, log, purge, allocate NVM or schedule work.
//!
//! Invariants: a pass is held only inside one call on one thread (never returned to the
//! caller), so waiting for the passes cannot deadlock with the closing thread. Entering
//! and shutting are ordered like Dekker's protocol: a caller increments its slot and then
//! reads `closing`; `close` sets `closing` and then reads every slot, all `SeqCst`, so
//! either the caller sees the gate shut or `close` sees the caller's pass.
//!
//! The count is striped over cache-padded slots picked by thread, so that readers on
//! different cores do not pass one counter's cache line back and forth on every call.
//!
//! Thread-safety: `Gate` is `Send + Sync`; every method may be called from any thread.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// Slots of the in-flight count (threads beyond this many share slots, which stays
/// correct: a pass decrements the slot it incremented).
const SLOTS: usize = 64;

/// The slot of the calling thread: threads are numbered as they first pass a gate.
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    }
    SLOT.with(|s| *s)
}

/// See the module documentation.
#[derive(Debug)]
pub struct Gate {
    /// Set once by the first `close`: no call enters from then on.
    closing: AtomicBool,
    /// Calls in flight, striped by thread.
    slots: Box<[CachePadded<AtomicUsize>]>,
    /// Whether the close finished (the closer sets it last); waiters of a second `close`
    /// sleep on `done_cv`.
    done: Mutex<bool>,
    done_cv: Condvar,
}

/// Proof that a call is in flight; the gate counts it until it is dropped.
#[derive(Debug)]
#[must_use = "a pass counts the call only while it is held"]
pub struct Pass<'a> {
    slot: &'a AtomicUsize,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.slot.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Gate {
    /// An open gate.
    #[must_use]
    pub fn new() -> Gate {
        Gate {
            closing: AtomicBool::new(false),
            slots: (0..SLOTS)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
        }
    }

    /// Admits a call: the returned pass keeps `close` waiting until it is dropped.
    ///
    /// # Errors
    /// `Closed` once a close has begun.
    pub fn enter(&self) -> Result<Pass<'_>> {
        let slot = &*self.slots[thread_slot()];
        slot.fetch_add(1, Ordering::SeqCst);
        let pass = Pass { slot };
        if self.closing.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        Ok(pass)
    }

    /// Whether a close has begun (calls already admitted may still run).
    #[must_use]
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Shuts the gate. Returns true for the first caller, which must go on to
    /// [`Gate::wait_idle`], close the database and call [`Gate::finish`]; any later caller
    /// gets false and should [`Gate::wait_finished`].
    pub fn shut(&self) -> bool {
        !self.closing.swap(true, Ordering::SeqCst)
    }

    /// Calls in flight now.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.slots.iter().map(|s| s.load(Ordering::SeqCst)).sum()
    }

    /// Waits until no call is in flight. REQUIRES: the gate is shut (else new calls may
    /// keep it busy forever), and the caller holds no pass of it.
    pub fn wait_idle(&self) {
        let mut pause = Duration::from_micros(10);
        while self.in_flight() != 0 {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
    }

    /// Records that the close is complete and wakes the callers of [`Gate::wait_finished`].
    pub fn finish(&self) {
        *self.done.lock() = true;
        self.done_cv.notify_all();
    }

    /// Waits until the close that shut the gate has finished.
    pub fn wait_finished(&self) {
        let mut done = self.done.lock();
        while !*done {
            self.done_cv.wait(&mut done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::mpsc;

    #[test]
    fn calls_after_shut_are_refused() {
        let g = Gate::new();
        let p = g.enter().unwrap();
        assert_eq!(g.in_flight(), 1);
        drop(p);
        assert_eq!(g.in_flight(), 0);
        assert!(g.shut());
        assert!(!g.shut(), "only the first close shuts");
        assert!(matches!(g.enter(), Err(Error::Closed)));
        assert_eq!(g.in_flight(), 0, "a refused call leaves no count behind");
    }

    #[test]
    fn wait_idle_waits_for_every_pass_on_every_thread() {
        let g = Arc::new(Gate::new());
        let (entered, release) = (mpsc::channel(), mpsc::channel::<()>());
        let (entered_tx, entered_rx) = entered;
        let (release_tx, release_rx) = release;
        let g2 = Arc::clone(&g);
        let t = std::thread::spawn(move || {
            let _p = g2.enter().unwrap();
            entered_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        });
        entered_rx.recv().unwrap();
        assert!(g.shut());
        let (idle_tx, idle_rx) = mpsc::channel();
        let g3 = Arc::clone(&g);
        let w = std::thread::spawn(move || {
            g3.wait_idle();
            idle_tx.send(()).unwrap();
        });
        assert!(
            idle_rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "wait_idle returned while a pass was held"
        );
        release_tx.send(()).unwrap();
        idle_rx.recv().unwrap();
        t.join().unwrap();
        w.join().unwrap();
    }

    #[test]
    fn a_second_closer_waits_for_the_first() {
        let g = Arc::new(Gate::new());
        assert!(g.shut());
        let g2 = Arc::clone(&g);
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || {
            assert!(!g2.shut());
            g2.wait_finished();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        g.finish();
        rx.recv().unwrap();
        t.join().unwrap();
    }
}
