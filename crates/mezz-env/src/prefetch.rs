//! A file read once from start to end, with the device's reads done ahead on a thread.
//!
//! Owns: [`PrefetchFile`], a [`RandomAccessFile`] over another one whose bytes a thread of
//! its own reads in order, [`PREFETCH_CHUNK`] bytes at a time, at most
//! [`PREFETCH_CHUNKS_AHEAD`] chunks ahead of the reader. Made for a recovery's WAL replay:
//! one forward pass that parses and applies what it reads, so the device's time and the
//! parsing's overlap instead of adding up (the kernel's own read-ahead did not overlap them
//! on the hosts measured: a cold 50 MB WAL took 110 ms to replay, 36 ms warm).
//!
//! Invariants: every read returns what the inner file holds at that range, or the inner
//! file's error for it: a read the chunks in hand do not cover (behind the reader, beyond
//! what was read ahead after an error, or past the end) is served by the inner file itself,
//! so an error of the thread is never reported for a range it was not the cause of. Memory
//! is bounded by `PREFETCH_CHUNKS_AHEAD + 2` chunks.
//!
//! Thread-safety: `Send + Sync`; reads from several threads are served one at a time (they
//! share the chunk in hand). Dropping the file stops the thread and waits for it.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};
use parking_lot::Mutex;

use crate::RandomAccessFile;

/// Bytes the thread reads at a time.
pub const PREFETCH_CHUNK: usize = 1 << 20;

/// Chunks the thread may hold ready beyond the one being read.
pub const PREFETCH_CHUNKS_AHEAD: usize = 4;

/// One chunk read ahead: its offset and bytes, or the error reading it.
type Chunk = (u64, io::Result<Vec<u8>>);

/// What the reader holds: the chunk in hand and the channel of the next ones.
struct Ahead {
    /// Offset of `data` in the file.
    start: u64,
    data: Vec<u8>,
    /// `None` once the thread's chunks ended (the end of the file, or an error).
    next: Option<Receiver<Chunk>>,
    /// Buffers given back to the thread to read into again: their pages are mapped
    /// already, where a new buffer's first touch faults every page in (on the virtual
    /// machines measured, that doubled the time a chunk took to read).
    spare: Sender<Vec<u8>>,
}

/// See the module documentation.
pub struct PrefetchFile {
    inner: Arc<dyn RandomAccessFile>,
    ahead: Mutex<Ahead>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for PrefetchFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrefetchFile")
            .field("inner", &self.inner)
            .field("size", &self.inner.size())
            .finish_non_exhaustive()
    }
}

impl PrefetchFile {
    /// `inner` read ahead, if it is larger than one chunk; else `inner` itself (a reader of
    /// a single chunk would only wait for the thread to read it).
    #[must_use]
    pub fn over(inner: Arc<dyn RandomAccessFile>) -> Arc<dyn RandomAccessFile> {
        if inner.size() > PREFETCH_CHUNK as u64 {
            Arc::new(Self::new(inner))
        } else {
            inner
        }
    }

    /// Starts reading `inner` from its start on a thread. Without a thread (the system
    /// refused one), every read goes to `inner`.
    #[must_use]
    pub fn new(inner: Arc<dyn RandomAccessFile>) -> Self {
        let size = inner.size();
        let (tx, rx) = bounded::<Chunk>(PREFETCH_CHUNKS_AHEAD);
        let (spare_tx, spare_rx) = bounded::<Vec<u8>>(PREFETCH_CHUNKS_AHEAD + 2);
        let file = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name("mezz-prefetch".into())
            .spawn(move || {
                let mut at = 0u64;
                while at < size {
                    let len = usize::try_from(size - at)
                        .unwrap_or(usize::MAX)
                        .min(PREFETCH_CHUNK);
                    let mut buf = spare_rx.try_recv().unwrap_or_default();
                    buf.resize(len, 0);
                    let read = file.read_exact_at(at, &mut buf).map(|()| buf);
                    let failed = read.is_err();
                    // The reader is gone (dropped, or it read behind): stop.
                    if tx.send((at, read)).is_err() || failed {
                        return;
                    }
                    at += len as u64;
                }
            })
            .ok();
        Self {
            inner,
            ahead: Mutex::new(Ahead {
                start: 0,
                data: Vec::new(),
                next: thread.is_some().then_some(rx),
                spare: spare_tx,
            }),
            thread,
        }
    }
}

impl Ahead {
    /// Copies what the chunks hold of `[offset, offset + buf.len())` into `buf`, moving
    /// forward through the thread's chunks as needed; returns how many leading bytes of
    /// `buf` it filled (fewer than asked when the chunks end or the range starts behind
    /// the chunk in hand).
    fn fill(&mut self, offset: u64, buf: &mut [u8]) -> usize {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            if at < self.start {
                break;
            }
            let end = self.start + self.data.len() as u64;
            if at < end {
                // `at - start < data.len()`, which is a usize.
                let from = usize::try_from(at - self.start).unwrap_or(usize::MAX);
                let n = (self.data.len() - from).min(buf.len() - done);
                buf[done..done + n].copy_from_slice(&self.data[from..from + n]);
                done += n;
                continue;
            }
            // The range is beyond the chunk in hand: take the next one.
            let Some(next) = &self.next else { break };
            match next.recv() {
                Ok((start, Ok(data))) => {
                    self.start = start;
                    let used = std::mem::replace(&mut self.data, data);
                    if used.capacity() > 0 {
                        let _ = self.spare.try_send(used);
                    }
                }
                // An error, or the thread ended: the inner file serves the rest.
                Ok((_, Err(_))) | Err(_) => {
                    self.next = None;
                    break;
                }
            }
        }
        done
    }
}

impl RandomAccessFile for PrefetchFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let done = self.ahead.lock().fill(offset, buf);
        if done == buf.len() {
            return Ok(());
        }
        self.inner
            .read_exact_at(offset + done as u64, &mut buf[done..])
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl Drop for PrefetchFile {
    fn drop(&mut self) {
        // Dropping the receiver makes the thread's next send fail; it then ends after at
        // most one more chunk read.
        self.ahead.get_mut().next = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A file of `len` bytes (byte `i` is `i % 251`), counting reads, failing reads that
    /// touch `bad` (if any).
    #[derive(Debug)]
    struct Pattern {
        len: u64,
        bad: Option<u64>,
        reads: AtomicU64,
    }

    impl Pattern {
        fn new(len: u64, bad: Option<u64>) -> Arc<Self> {
            Arc::new(Self {
                len,
                bad,
                reads: AtomicU64::new(0),
            })
        }
    }

    fn byte(i: u64) -> u8 {
        (i % 251) as u8
    }

    impl RandomAccessFile for Pattern {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            let end = offset + buf.len() as u64;
            if end > self.len {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            if self.bad.is_some_and(|b| (offset..end).contains(&b)) {
                return Err(io::Error::other(format!("bad byte {}", self.bad.unwrap())));
            }
            for (j, b) in buf.iter_mut().enumerate() {
                *b = byte(offset + j as u64);
            }
            Ok(())
        }
        fn size(&self) -> u64 {
            self.len
        }
    }

    fn expect(offset: u64, len: usize) -> Vec<u8> {
        (offset..offset + len as u64).map(byte).collect()
    }

    /// A forward pass in 32 KiB reads (a WAL replay's) returns the file's bytes, reading
    /// the inner file once per chunk: the thread did the reads.
    #[test]
    fn a_forward_pass_reads_the_file_in_chunks_ahead() {
        let len = 5 * PREFETCH_CHUNK as u64 + 12_345;
        let inner = Pattern::new(len, None);
        let f = PrefetchFile::new(inner.clone());
        let mut at = 0;
        while at < len {
            let n = (len - at).min(32 << 10) as usize;
            let mut buf = vec![0; n];
            f.read_exact_at(at, &mut buf).unwrap();
            assert_eq!(buf, expect(at, n), "at {at}");
            at += n as u64;
        }
        assert_eq!(inner.reads.load(Ordering::Relaxed), 6);
        assert_eq!(f.size(), len);
    }

    /// Reads that straddle chunks, skip ahead, go back, or run past the end return what a
    /// read of the inner file would.
    #[test]
    fn any_read_returns_what_the_inner_file_would() {
        let c = PREFETCH_CHUNK as u64;
        let len = 3 * c + 100;
        let f = PrefetchFile::new(Pattern::new(len, None));
        for (offset, n) in [
            (c - 10, 20usize),     // straddles the first two chunks
            (2 * c + 5, 1000),     // skips a chunk
            (10, 100),             // behind the chunk in hand
            (3 * c, 100),          // the last bytes
            (3 * c - 1, 2 * 1024), // across the last chunk and past the end
            (len, 0),              // empty at the end
        ] {
            let mut buf = vec![0; n];
            let got = f.read_exact_at(offset, &mut buf);
            if offset + n as u64 > len {
                assert_eq!(
                    got.unwrap_err().kind(),
                    io::ErrorKind::UnexpectedEof,
                    "at {offset}"
                );
            } else {
                got.unwrap();
                assert_eq!(buf, expect(offset, n), "at {offset}");
            }
        }
    }

    /// A chunk the thread failed to read is read again by the reader from the inner file:
    /// the bytes before the bad one come back, a read of the bad one fails with the inner
    /// file's error, and nothing past it is served from the thread.
    #[test]
    fn a_failed_read_ahead_is_the_inner_files_error_where_it_lies() {
        let c = PREFETCH_CHUNK as u64;
        let bad = 2 * c + 7;
        let inner = Pattern::new(4 * c, Some(bad));
        let f = PrefetchFile::new(inner.clone());
        let mut buf = vec![0; 4096];
        f.read_exact_at(c, &mut buf).unwrap();
        assert_eq!(buf, expect(c, 4096));
        let mut buf = vec![0; 7];
        f.read_exact_at(2 * c, &mut buf).unwrap();
        assert_eq!(buf, expect(2 * c, 7));
        let e = f.read_exact_at(bad, &mut [0; 1]).unwrap_err();
        assert!(e.to_string().contains("bad byte"), "{e}");
        let mut buf = vec![0; 10];
        f.read_exact_at(3 * c, &mut buf).unwrap();
        assert_eq!(buf, expect(3 * c, 10));
    }

    /// `over` reads ahead only a file of more than one chunk.
    #[test]
    fn only_a_file_of_several_chunks_is_read_ahead() {
        let c = PREFETCH_CHUNK as u64;
        let small: Arc<dyn RandomAccessFile> = Pattern::new(c, None);
        assert!(Arc::ptr_eq(&PrefetchFile::over(Arc::clone(&small)), &small));
        let large: Arc<dyn RandomAccessFile> = Pattern::new(c + 1, None);
        assert!(!Arc::ptr_eq(
            &PrefetchFile::over(Arc::clone(&large)),
            &large
        ));
    }

    /// An empty file and one dropped before it is read end their threads.
    #[test]
    fn empty_and_unread_files_end_their_threads() {
        let f = PrefetchFile::new(Pattern::new(0, None));
        f.read_exact_at(0, &mut []).unwrap();
        assert!(f.read_exact_at(0, &mut [0; 1]).is_err());
        drop(f);
        let inner = Pattern::new(64 * PREFETCH_CHUNK as u64, None);
        drop(PrefetchFile::new(inner.clone()));
        // The thread stopped after at most the chunks the channel holds and one more.
        assert!(
            inner.reads.load(Ordering::Relaxed) <= PREFETCH_CHUNKS_AHEAD as u64 + 2,
            "{}",
            inner.reads.load(Ordering::Relaxed)
        );
    }
}
