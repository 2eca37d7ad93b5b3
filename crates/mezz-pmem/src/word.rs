//! A single persistent 8-byte word: the engine's commit points in NVM (e.g. the highest
//! sequence number whose write group is wholly durable in an NVM memtable).
//!
//! Owns: nothing but a reference to 8 aligned bytes of a [`Media`]. The commit rule of the
//! NVM layer (DESIGN §4) is "write data, persist it, then publish it with one 8-byte atomic
//! store that is then persisted": [`PersistentWord::publish`] is that store
//! ([`PersistentWord::stage`] the same without its fence). On a media flushed by cache-line
//! instructions the store is non-temporal ([`Media::store_word_uncached`]). An aligned
//! 8-byte store is failure-atomic on x86-64 persistent memory (and on the simulated media,
//! whose persists copy whole 64-byte lines), so a power cut leaves the old or the new value.
//!
//! Thread-safety: `Send + Sync`; loads and stores are atomic. Concurrent publishers race
//! (last store wins); the engine publishes from one thread at a time.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Media;

/// An 8-byte, 8-aligned word of a media region. See the module documentation.
#[derive(Debug, Clone)]
pub struct PersistentWord {
    media: Arc<dyn Media>,
    off: usize,
}

impl PersistentWord {
    /// The word at byte offset `off` of `media`; `None` when `off` is not 8-aligned or the
    /// word does not lie wholly inside the media.
    #[must_use]
    pub fn new(media: Arc<dyn Media>, off: usize) -> Option<PersistentWord> {
        let end = off.checked_add(8)?;
        (off.is_multiple_of(8) && end <= media.len()).then_some(PersistentWord { media, off })
    }

    fn atomic(&self) -> &AtomicU64 {
        // SAFETY: `new` checked that [off, off + 8) lies inside the media and that `off` is
        // 8-aligned; the media's base is at least 8-aligned and stays mapped, initialised
        // and unmoved while the media lives (the `Media` invariants), and `self.media`
        // keeps it alive for the returned borrow. Every access to these bytes through this
        // type is atomic, so no non-atomic access races with it here.
        unsafe { AtomicU64::from_ptr(self.media.base().as_ptr().add(self.off).cast::<u64>()) }
    }

    /// The current value (one 8-byte read access for the media's cost hooks).
    #[must_use]
    pub fn load(&self) -> u64 {
        self.media.on_read(8);
        self.atomic().load(Ordering::Acquire)
    }

    /// Stores `v` with one atomic store, then persists and fences it: durable on `Ok`.
    ///
    /// # Errors
    /// The media's persist or fence error (the value is stored but not known durable).
    pub fn publish(&self, v: u64) -> io::Result<()> {
        self.stage(v)?;
        if self.media.is_persistent() {
            self.media.fence()?;
        }
        Ok(())
    }

    /// Stores `v` with one atomic store and persists it without a fence: it is durable
    /// once the next fence of the same media *on the same thread* returns (a fence orders
    /// only its own thread's persists). Lets a caller fold this word into the fence
    /// that makes other data durable, when either may reach the media first.
    ///
    /// # Errors
    /// The media's persist error (the value is stored but not known durable).
    pub fn stage(&self, v: u64) -> io::Result<()> {
        // Cost hook: one 8-byte write access (a persistent media charges it where it is
        // persisted or stored non-temporally instead).
        self.media.on_write(8);
        // A media flushed by cache-line instructions takes the word with a non-temporal
        // store: the line is not fetched again after each flush evicted it.
        if self.media.store_word_uncached(self.off, v) {
            return Ok(());
        }
        self.atomic().store(v, Ordering::Release);
        if self.media.is_persistent() {
            self.media.persist(self.off, 8)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::NonNull;
    use std::sync::Mutex;

    /// Heap media that records persisted ranges.
    #[derive(Debug)]
    struct Heap {
        buf: Box<[u64]>,
        persisted: Mutex<Vec<(usize, usize)>>,
    }
    // SAFETY: the buffer is only accessed through atomics in these tests.
    unsafe impl Send for Heap {}
    // SAFETY: as above.
    unsafe impl Sync for Heap {}
    impl Media for Heap {
        fn base(&self) -> NonNull<u8> {
            NonNull::from(&self.buf[0]).cast()
        }
        fn len(&self) -> usize {
            self.buf.len() * 8
        }
        fn persist(&self, off: usize, len: usize) -> io::Result<()> {
            self.persisted.lock().unwrap().push((off, len));
            Ok(())
        }
        fn fence(&self) -> io::Result<()> {
            Ok(())
        }
        fn is_persistent(&self) -> bool {
            true
        }
    }

    #[test]
    fn publish_stores_and_persists_the_word() {
        let h = Arc::new(Heap {
            buf: vec![0u64; 4].into_boxed_slice(),
            persisted: Mutex::new(Vec::new()),
        });
        let media: Arc<dyn Media> = h.clone();
        assert!(PersistentWord::new(Arc::clone(&media), 4).is_none());
        assert!(PersistentWord::new(Arc::clone(&media), 32).is_none());
        let w = PersistentWord::new(media, 16).unwrap();
        assert_eq!(w.load(), 0);
        w.publish(0xdead_beef).unwrap();
        assert_eq!(w.load(), 0xdead_beef);
        assert_eq!(*h.persisted.lock().unwrap(), vec![(16, 8)]);
    }
}
