//! The skip list on a persistent media: creation and clean reopen, a power cut at every
//! persist point of an insert sequence (and of a batch), random workloads cut at random
//! points, corrupt headers (typed errors at recovery) and nodes (typed errors when read,
//! never a value, never a panic), random byte flips, the upper levels kept across a
//! recovery (searches visit O(log n) nodes after it), and version 1 lists (recovered by a
//! walk).
//!
//! Two media: `ShadowMedia`, defined here (live bytes plus a durable image that only
//! persist + fence update; a cut freezes the image and records the live bytes of that
//! instant, so a power cut may also keep any unpersisted line as it was then), and the
//! crate's `Region` over a `SimNvm` in `CrashSim` mode.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{Rng, scale};
use mezz_pmem::skiplist::{MAX_HEIGHT, NODE_READ_BYTES, node_size};
use mezz_pmem::{
    Arena, Bytewise, CorruptNode, InsertError, KeepLines, Media, PersistentWord, PowerCut,
    RecoverError, Region, RegionOptions, SimNvm, SkipList,
};

const LINE: usize = 64;

// ---- a media with a shadow durable image -------------------------------------------------

#[derive(Debug)]
struct Shadow {
    durable: Vec<u8>,
    pending: Vec<(usize, Vec<u8>)>,
    persists: u64,
    fences: u64,
    /// Persist call (1-based) at whose start the durable image freezes.
    cut_at: Option<u64>,
    /// The live bytes at the instant of the cut.
    live_at_cut: Option<Vec<u8>>,
}

#[derive(Debug)]
struct ShadowMedia {
    base: NonNull<u8>,
    words: usize,
    state: Mutex<Shadow>,
    read_bytes: AtomicU64,
    written_bytes: AtomicU64,
}

// SAFETY: the buffer behind `base` is owned by the media (freed in `Drop`); access to it is
// governed by the arena protocol (media invariant), the rest is behind a mutex or atomic.
unsafe impl Send for ShadowMedia {}
// SAFETY: as for `Send`.
unsafe impl Sync for ShadowMedia {}

impl ShadowMedia {
    /// A media of `len` bytes (a multiple of 64) whose live and durable bytes are `image`.
    fn with_image(image: Vec<u8>) -> Arc<ShadowMedia> {
        assert!(image.len().is_multiple_of(LINE));
        let words = image.len() / 8;
        let buf: Box<[u64]> = vec![0u64; words].into_boxed_slice();
        let base = NonNull::new(Box::into_raw(buf).cast::<u8>()).unwrap();
        // SAFETY: `base` points at `words * 8` bytes just allocated and not yet shared.
        unsafe { std::ptr::copy_nonoverlapping(image.as_ptr(), base.as_ptr(), image.len()) };
        Arc::new(ShadowMedia {
            base,
            words,
            state: Mutex::new(Shadow {
                durable: image,
                pending: Vec::new(),
                persists: 0,
                fences: 0,
                cut_at: None,
                live_at_cut: None,
            }),
            read_bytes: AtomicU64::new(0),
            written_bytes: AtomicU64::new(0),
        })
    }

    fn new(len: usize) -> Arc<ShadowMedia> {
        ShadowMedia::with_image(vec![0; len])
    }

    /// The live bytes (no writer may be running).
    fn live(&self) -> Vec<u8> {
        // SAFETY: the buffer is initialised and the tests call this with no writer running.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.words * 8) }.to_vec()
    }

    /// Overwrites live bytes (no reader or writer may be running).
    fn poke(&self, off: usize, bytes: &[u8]) {
        assert!(off + bytes.len() <= self.words * 8);
        // SAFETY: in bounds (checked), no concurrent access (test contract).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.as_ptr().add(off), bytes.len())
        };
    }

    fn arm_cut_at(&self, n: u64) {
        self.state.lock().unwrap().cut_at = Some(n);
    }

    fn persists(&self) -> u64 {
        self.state.lock().unwrap().persists
    }

    fn fences(&self) -> u64 {
        self.state.lock().unwrap().fences
    }

    fn cut_happened(&self) -> bool {
        self.state.lock().unwrap().live_at_cut.is_some()
    }

    /// The media after a power cut: the durable image, plus each line that differed from it
    /// at the instant of the cut (or now, if no cut was armed) kept with probability
    /// `keep_percent`.
    fn power_cut(&self, rng: &mut Rng, keep_percent: usize) -> Arc<ShadowMedia> {
        let live_now = self.live();
        let st = self.state.lock().unwrap();
        let live = st.live_at_cut.as_ref().unwrap_or(&live_now);
        let mut image = st.durable.clone();
        for (i, line) in live.chunks(LINE).enumerate() {
            let dst = &mut image[i * LINE..(i + 1) * LINE];
            if dst != line && rng.below(100) < keep_percent {
                dst.copy_from_slice(line);
            }
        }
        ShadowMedia::with_image(image)
    }
}

impl Drop for ShadowMedia {
    fn drop(&mut self) {
        let slice =
            std::ptr::slice_from_raw_parts_mut(self.base.as_ptr().cast::<u64>(), self.words);
        // SAFETY: `base` came from `Box::into_raw` of a `[u64]` of `words` elements, freed once.
        drop(unsafe { Box::from_raw(slice) });
    }
}

impl Media for ShadowMedia {
    fn base(&self) -> NonNull<u8> {
        self.base
    }
    fn len(&self) -> usize {
        self.words * 8
    }
    fn persist(&self, off: usize, len: usize) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        st.persists += 1;
        if st.cut_at == Some(st.persists) {
            st.live_at_cut = Some(self.live());
        }
        if st.live_at_cut.is_some() {
            return Ok(());
        }
        let end = (off + len).min(self.len()).next_multiple_of(LINE);
        let start = off / LINE * LINE;
        if start < end {
            // SAFETY: `start..end` is inside the buffer; a snapshot of lines being written
            // by no other thread (single-threaded tests).
            let lines =
                unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(start), end - start) };
            st.pending.push((start, lines.to_vec()));
        }
        Ok(())
    }
    fn fence(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        st.fences += 1;
        if st.live_at_cut.is_none() {
            let pending = std::mem::take(&mut st.pending);
            for (at, lines) in pending {
                st.durable[at..at + lines.len()].copy_from_slice(&lines);
            }
        }
        Ok(())
    }
    fn is_persistent(&self) -> bool {
        true
    }
    fn on_read(&self, len: usize) {
        self.read_bytes.fetch_add(len as u64, Ordering::Relaxed);
    }
    fn on_write(&self, len: usize) {
        self.written_bytes.fetch_add(len as u64, Ordering::Relaxed);
    }
}

// ---- helpers ---------------------------------------------------------------------------------

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn fresh_list(media: &Arc<ShadowMedia>) -> SkipList<Bytewise> {
    let m: Arc<dyn Media> = media.clone();
    SkipList::new(Arena::on_media(m, 0, media.len()).unwrap(), Bytewise).unwrap()
}

fn reopen(
    media: &Arc<ShadowMedia>,
) -> Result<(SkipList<Bytewise>, mezz_pmem::RecoveryReport), RecoverError> {
    let m: Arc<dyn Media> = media.clone();
    SkipList::recover(
        Arena::recover_on_media(m, 0, media.len()).unwrap(),
        Bytewise,
    )
}

fn contents(list: &SkipList<Bytewise>) -> Vec<(Vec<u8>, Vec<u8>)> {
    try_contents(list).unwrap()
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn try_contents(list: &SkipList<Bytewise>) -> Result<Entries, CorruptNode> {
    let mut it = list.iter();
    let got = it.by_ref().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    it.status().map(|()| got)
}

/// Asserts that `list` holds exactly `model`, through iteration, gets and seeks.
fn assert_same(list: &SkipList<Bytewise>, model: &Model) {
    let got = contents(list);
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want);
    assert_eq!(list.len(), model.len());
    for (k, v) in model {
        assert_eq!(list.get(k).unwrap(), Some(&v[..]));
        let mut c = list.cursor();
        c.seek_le(k);
        assert_eq!(c.key(), &k[..]);
        c.status().unwrap();
    }
    let mut c = list.cursor();
    c.last();
    assert_eq!(c.valid(), !model.is_empty());
    if let Some((k, _)) = model.iter().next_back() {
        assert_eq!(c.key(), &k[..]);
    }
}

/// `n` distinct random entries (keys of 1..=12 bytes, values of 0..40 bytes).
fn entries(rng: &mut Rng, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut seen = Model::new();
    while seen.len() < n {
        let klen = 1 + rng.below(12);
        let k = rng.bytes(klen);
        let vlen = rng.below(40);
        let v = rng.bytes(vlen);
        seen.entry(k).or_insert(v);
    }
    let mut out: Vec<_> = seen.into_iter().collect();
    for i in (1..out.len()).rev() {
        out.swap(i, rng.below(i + 1));
    }
    out
}

/// Runs `inserts` one by one on a fresh list over `media`; returns, for each insert, the
/// media's persist count when it returned.
fn run_inserts(media: &Arc<ShadowMedia>, inserts: &[(Vec<u8>, Vec<u8>)]) -> Vec<u64> {
    let list = fresh_list(media);
    let mut done = Vec::new();
    for (k, v) in inserts {
        list.insert(k, v).unwrap();
        done.push(media.persists());
    }
    done
}

/// Checks a recovered list against the insert sequence cut after persist `cut` (`None` = no
/// cut): it holds exactly the first `m` inserts, where `m` is the number of inserts that
/// returned before the cut, or one more (the insert in flight).
fn assert_prefix(got: &[(Vec<u8>, Vec<u8>)], inserts: &[(Vec<u8>, Vec<u8>)], returned: usize) {
    let prefix = |m: usize| -> Vec<(Vec<u8>, Vec<u8>)> {
        let model: Model = inserts[..m].iter().cloned().collect();
        model.into_iter().collect()
    };
    let ok = got == prefix(returned) || (returned < inserts.len() && got == prefix(returned + 1));
    assert!(
        ok,
        "recovered {} entries; {returned} inserts had returned",
        got.len()
    );
}

// ---- tests -----------------------------------------------------------------------------------

#[test]
fn create_insert_reopen_and_continue() {
    let media = ShadowMedia::new(64 << 10);
    let mut rng = Rng::new(1);
    let all = entries(&mut rng, scale(300, 40));
    let (first, second) = all.split_at(all.len() / 2);
    let mut model = Model::new();
    {
        let list = fresh_list(&media);
        assert!(list.is_persistent());
        for (k, v) in first {
            list.insert(k, v).unwrap();
            model.insert(k.clone(), v.clone());
        }
        assert_eq!(
            list.insert(&first[0].0, b"other"),
            Err(InsertError::Duplicate)
        );
        assert_same(&list, &model);
    }
    // A clean reopen (the live bytes) and a power cut after the last insert returned (the
    // durable image only) recover the same entries.
    let mut crng = Rng::new(2);
    for media in [media.clone(), media.power_cut(&mut crng, 0)] {
        let (list, report) = reopen(&media).unwrap();
        assert_eq!(report.version, 2);
        assert_eq!(report.bytes, list.memory_usage());
        assert_eq!(list.len(), model.len());
        assert_same(&list, &model);
    }
    // Continue after recovery from the durable image, then recover again.
    let media = media.power_cut(&mut crng, 0);
    let (list, _) = reopen(&media).unwrap();
    for (k, v) in second {
        list.insert(k, v).unwrap();
        model.insert(k.clone(), v.clone());
    }
    assert_same(&list, &model);
    drop(list);
    let (list, _) = reopen(&media.power_cut(&mut crng, 0)).unwrap();
    assert_eq!(list.len(), model.len());
    assert_same(&list, &model);
}

#[test]
fn power_cut_at_every_persist_point() {
    let mut rng = Rng::new(3);
    let inserts = entries(&mut rng, scale(40, 8));
    let len = 32 << 10;
    let full = ShadowMedia::new(len);
    run_inserts(&full, &inserts);
    let points = full.persists();
    assert!(
        points >= 2 * inserts.len() as u64,
        "a node and a link per insert"
    );
    for cut in 1..=points + 1 {
        for keep_percent in [0, 50, 100] {
            let media = ShadowMedia::new(len);
            media.arm_cut_at(cut);
            // Tower heights are random, so each run has its own persist sequence: count
            // the inserts that returned before the cut in this run.
            let returned_at = run_inserts(&media, &inserts);
            let returned = returned_at.iter().filter(|&&p| p < cut).count();
            let after = media.power_cut(&mut rng, keep_percent);
            match reopen(&after) {
                Ok((list, _)) => {
                    let got = contents(&list);
                    assert_prefix(&got, &inserts, returned);
                    assert_eq!(list.len(), got.len());
                    // The recovered list takes further inserts.
                    list.insert(b"\xff\xff\xff after", b"x").unwrap();
                    assert_eq!(list.get(b"\xff\xff\xff after").unwrap(), Some(&b"x"[..]));
                    assert_eq!(list.len(), got.len() + 1);
                }
                // Only a cut before the header was durable may leave no list.
                Err(RecoverError::Header { .. }) => assert!(cut <= 2, "cut {cut}"),
                Err(e) => panic!("cut at persist {cut}, keep {keep_percent}%: {e}"),
            }
        }
    }
}

#[test]
fn batch_is_durable_on_return_and_never_torn() {
    let mut rng = Rng::new(4);
    let before = entries(&mut rng, scale(30, 6));
    let batch: Vec<(Vec<u8>, Vec<u8>)> = entries(&mut rng, scale(60, 10))
        .into_iter()
        .filter(|(k, _)| !before.iter().any(|(b, _)| b == k))
        .collect();
    let batch_refs: Vec<(&[u8], &[u8])> = batch.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let len = 64 << 10;
    let run = |media: &Arc<ShadowMedia>| -> u64 {
        let list = fresh_list(media);
        for (k, v) in &before {
            list.insert(k, v).unwrap();
        }
        let start = media.persists();
        list.insert_batch(&batch_refs).unwrap();
        start
    };
    let full = ShadowMedia::new(len);
    let start = run(&full);
    let end = full.persists();
    let mut model: Model = before.iter().cloned().collect();
    let (list, _) = reopen(&full.power_cut(&mut rng, 0)).unwrap();
    model.extend(batch.iter().cloned());
    assert_same(&list, &model);

    let old: Model = before.iter().cloned().collect();
    for cut in start + 1..=end {
        let media = ShadowMedia::new(len);
        media.arm_cut_at(cut);
        // Heights are random, so this run's batch may start at another persist: a cut
        // before it is not a cut of the batch.
        if run(&media) >= cut {
            continue;
        }
        let (list, _) = reopen(&media.power_cut(&mut rng, 50)).unwrap();
        let got: Model = contents(&list).into_iter().collect();
        for (k, v) in &old {
            assert_eq!(
                got.get(k),
                Some(v),
                "an entry from before the batch was lost"
            );
        }
        for (k, v) in &got {
            if !old.contains_key(k) {
                let want = batch.iter().find(|(b, _)| b == k).map(|(_, v)| v);
                assert_eq!(want, Some(v), "a recovered entry is not from the batch");
            }
        }
    }

    // Errors link nothing.
    let media = ShadowMedia::new(len);
    let list = fresh_list(&media);
    list.insert(b"b", b"1").unwrap();
    let dup_inside: [(&[u8], &[u8]); 3] = [(b"a", b""), (b"c", b""), (b"a", b"")];
    assert_eq!(list.insert_batch(&dup_inside), Err(InsertError::Duplicate));
    let dup_list: [(&[u8], &[u8]); 2] = [(b"c", b""), (b"b", b"")];
    assert_eq!(list.insert_batch(&dup_list), Err(InsertError::Duplicate));
    let huge = vec![0u8; len];
    let too_big: [(&[u8], &[u8]); 2] = [(b"c", b""), (b"d", &huge)];
    assert_eq!(list.insert_batch(&too_big), Err(InsertError::Full));
    assert_eq!(contents(&list), vec![(b"b".to_vec(), b"1".to_vec())]);
}

/// `insert_with_then` with a commit word staged by its hook (the engine's write group of
/// one entry): two fences per insert, as a plain insert, and at every persist point a power
/// cut keeps every insert that returned, with its commit word; the one in flight may leave
/// its entry without the word or the word without its entry, never anything later.
#[test]
fn a_commit_staged_before_the_link_fence_is_durable_with_the_insert() {
    // The commit word lives in the media's first line, the list after it.
    const ARENA_AT: usize = 4096;
    let mut rng = Rng::new(21);
    let inserts = entries(&mut rng, scale(30, 8));
    let len = 32 << 10;
    let run = |media: &Arc<ShadowMedia>| -> Vec<u64> {
        let m: Arc<dyn Media> = media.clone();
        let word = PersistentWord::new(m.clone(), 0).unwrap();
        let list = SkipList::new(
            Arena::on_media(m, ARENA_AT, len - ARENA_AT).unwrap(),
            Bytewise,
        )
        .unwrap();
        let mut done = Vec::new();
        for (i, (k, v)) in inserts.iter().enumerate() {
            let fences = media.fences();
            list.insert_with_then(
                k.len(),
                v.len(),
                |kb, vb| {
                    kb.copy_from_slice(k);
                    vb.copy_from_slice(v);
                },
                || word.stage(i as u64 + 1),
            )
            .unwrap();
            assert_eq!(
                media.fences() - fences,
                2,
                "insert {i}: node, then link and word"
            );
            done.push(media.persists());
        }
        done
    };
    let full = ShadowMedia::new(len);
    run(&full);
    let points = full.persists();
    for cut in 1..=points + 1 {
        for keep_percent in [0, 50, 100] {
            let media = ShadowMedia::new(len);
            media.arm_cut_at(cut);
            // Heights are random: count what returned before the cut in this run.
            let returned_at = run(&media);
            let returned = returned_at.iter().filter(|&&p| p < cut).count();
            let after = media.power_cut(&mut rng, keep_percent);
            let m: Arc<dyn Media> = after.clone();
            let word = PersistentWord::new(m.clone(), 0).unwrap().load();
            let Ok(arena) = Arena::recover_on_media(m, ARENA_AT, len - ARENA_AT) else {
                assert!(cut <= 2, "cut {cut}: no arena");
                continue;
            };
            let list = match SkipList::recover(arena, Bytewise) {
                Ok((list, _)) => list,
                Err(RecoverError::Header { .. }) => {
                    assert!(cut <= 2, "cut {cut}: no list");
                    continue;
                }
                Err(e) => panic!("cut {cut}, keep {keep_percent}%: {e}"),
            };
            let got = contents(&list);
            assert_prefix(&got, &inserts, returned);
            let word = usize::try_from(word).unwrap();
            assert!(
                word == returned || (word == returned + 1 && returned < inserts.len()),
                "cut {cut}, keep {keep_percent}%: commit word {word}, {returned} returned"
            );
        }
    }
}

#[test]
fn random_workloads_cut_at_random_points() {
    let mut rng = Rng::new(5);
    let trials = scale(1500, 4);
    let len = 16 << 10;
    for trial in 0..trials {
        let n = 1 + rng.below(scale(60, 6));
        let inserts = entries(&mut rng, n);
        let media = ShadowMedia::new(len);
        let cut = 1 + rng.below(2 * inserts.len() + 6) as u64;
        media.arm_cut_at(cut);
        let list = fresh_list(&media);
        let mut returned = 0;
        for (k, v) in &inserts {
            match list.insert(k, v) {
                Ok(()) => {}
                Err(InsertError::Full) => break,
                Err(e) => panic!("trial {trial}: {e}"),
            }
            if !media.cut_happened() {
                returned += 1;
            } else {
                break;
            }
        }
        drop(list);
        let keep = [0, 30, 100][rng.below(3)];
        let after = media.power_cut(&mut rng, keep);
        match reopen(&after) {
            Ok((list, _)) => assert_prefix(&contents(&list), &inserts, returned),
            Err(RecoverError::Header { .. }) => assert!(cut <= 2),
            Err(e) => panic!("trial {trial}, cut {cut}: {e}"),
        }
    }
}

#[test]
fn upper_levels_survive_recovery() {
    let n = scale(3000, 200);
    let media = ShadowMedia::new(node_size(MAX_HEIGHT, 0, 0) + 64 + n * 80);
    let mut model = Model::new();
    {
        let list = fresh_list(&media);
        for i in 0..n {
            let k = format!("key{:08}", i * 7919 % n).into_bytes();
            list.insert(&k, b"v").unwrap();
            model.insert(k, b"v".to_vec());
        }
    }
    let mut rng = Rng::new(6);
    // After a power cut (random unpersisted lines kept), upper links are stale, as they were
    // when their lines were last persisted: searches stay correct.
    let (list, _) = reopen(&media.power_cut(&mut rng, 50)).unwrap();
    assert_eq!(list.len(), n);
    assert_same(&list, &model);
    drop(list);
    // After a clean stop (the live bytes), the upper levels are whole: searches visit
    // O(log n) nodes, not O(n). Count the nodes through the read hook.
    let after = ShadowMedia::with_image(media.live());
    let (list, _) = reopen(&after).unwrap();
    assert_same(&list, &model);
    let gets = 100;
    let before = after.read_bytes.load(Ordering::Relaxed);
    for i in 0..gets {
        let k = format!("key{:08}", i * 31 % n).into_bytes();
        assert!(list.get(&k).unwrap().is_some());
    }
    let visits = (after.read_bytes.load(Ordering::Relaxed) - before) as usize / NODE_READ_BYTES;
    let per_get = visits / gets;
    assert!(
        per_get < 20 * (usize::BITS - n.leading_zeros()) as usize && per_get < n / 4,
        "{per_get} node visits per get in {n} entries"
    );
}

#[test]
fn corrupt_headers_and_nodes_are_typed_errors() {
    let len = 8 << 10;
    // Nothing there, or a heap arena.
    assert!(matches!(
        reopen(&ShadowMedia::new(len)),
        Err(RecoverError::Header { .. })
    ));
    assert_eq!(
        SkipList::recover(Arena::new(1024), Bytewise).err(),
        Some(RecoverError::NotOnMedia)
    );
    let media = ShadowMedia::new(len);
    {
        let list = fresh_list(&media);
        for k in [&b"a"[..], b"b", b"c", b"d"] {
            list.insert(k, b"value").unwrap();
        }
    }
    let image = media.live();
    let damaged = |at: usize, bytes: &[u8]| {
        let m = ShadowMedia::with_image(image.clone());
        m.poke(at, bytes);
        reopen(&m).err()
    };
    // Every header byte matters (44..48 and 56..64 are zero padding).
    for (at, &byte) in image.iter().enumerate().take(44) {
        assert!(
            matches!(
                damaged(at, &[byte ^ 0x10]),
                Some(RecoverError::Header { .. })
            ),
            "header byte {at}"
        );
    }
    // Reopened at another length.
    let m: Arc<dyn Media> = ShadowMedia::with_image(image.clone());
    assert!(matches!(
        SkipList::recover(Arena::recover_on_media(m, 0, len - 64).unwrap(), Bytewise),
        Err(RecoverError::Header { .. })
    ));
    // The allocation bound word (48..56) carries its own checksum: any flip is found.
    for (at, &byte) in image.iter().enumerate().take(56).skip(48) {
        assert!(
            matches!(
                damaged(at, &[byte ^ 0x10]),
                Some(RecoverError::Header { .. })
            ),
            "bound byte {at}"
        );
    }
    // Find the nodes: the head is the first allocation, after the 64 header bytes.
    let head = 64usize;
    let link0 = |node: usize| u32::from_le_bytes(image[node + 16..node + 20].try_into().unwrap());
    let first = link0(head) as usize;
    let second = link0(first) as usize;
    assert!(first > head && second > head);
    // A damaged head is found at recovery.
    assert!(matches!(
        damaged(head + 8, &5u32.to_le_bytes()),
        Some(RecoverError::Node { .. })
    ));
    // Any other node is checked when a read first reaches it: recovery succeeds (it reads
    // no node), and every read that reaches the damaged node reports it, with its offset
    // (or, for a bad link, the offset it names), and never returns its bytes.
    // `probe` is a key whose search must reach the damage: the damaged node's own key, or
    // the key after a node whose level-0 link is damaged.
    let read_errors = |at: usize, bytes: &[u8], probe: &[u8]| -> Vec<CorruptNode> {
        let m = ShadowMedia::with_image(image.clone());
        m.poke(at, bytes);
        let (list, _) = reopen(&m).unwrap();
        let mut errs = Vec::new();
        errs.extend(try_contents(&list).err());
        errs.extend(list.get(probe).err());
        let mut c = list.cursor();
        c.seek_ge(probe);
        assert!(!c.valid(), "a cursor stopped on or after the damage");
        errs.extend(c.status().err());
        // Other reads and inserts return a typed error or skip the damage; none panics.
        let _ = list.get(b"d");
        let _ = list.insert(b"e", b"");
        let mut c = list.cursor();
        c.last();
        c.prev();
        let _ = list.len();
        errs
    };
    // A flipped key or value byte: the node's checksum fails.
    let key_at = second + 16 + 4 * (image[second + 8] as usize);
    for at in [key_at, key_at + 3] {
        let errs = read_errors(at, &[image[at] ^ 1], b"b");
        assert_eq!(errs.len(), 3, "byte {at}: {errs:?}");
        assert!(errs.iter().all(|e| e.offset as usize == second), "{errs:?}");
    }
    // A link out of the arena, misaligned, into the header, or back to an earlier node.
    for bad in [len as u32 + 8, u32::MAX, first as u32 + 1, 8, first as u32] {
        let errs = read_errors(second + 16, &bad.to_le_bytes(), b"c");
        assert_eq!(errs.len(), 3, "link {bad}: {errs:?}");
        assert!(errs.iter().all(|e| e.offset == bad), "link {bad}: {errs:?}");
    }
    // A bad height or length (the checksum would catch it too, but never a panic first).
    for (field, v) in [(8, 0u32), (8, 13), (0, u32::MAX), (4, u32::MAX - 3)] {
        let errs = read_errors(second + field, &v.to_le_bytes(), b"b");
        assert_eq!(errs.len(), 3, "field {field} = {v}: {errs:?}");
    }
}

#[test]
fn random_byte_flips_never_panic() {
    let len = 4 << 10;
    let media = ShadowMedia::new(len);
    let used;
    let model: Model;
    {
        let list = fresh_list(&media);
        let mut rng = Rng::new(7);
        model = entries(&mut rng, 20).into_iter().collect();
        for (k, v) in &model {
            list.insert(k, v).unwrap();
        }
        used = list.memory_usage();
    }
    let image = media.live();
    let mut rng = Rng::new(8);
    let (mut ok, mut errors) = (0, 0);
    for _ in 0..scale(3000, 20) {
        let m = ShadowMedia::with_image(image.clone());
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(used);
            m.poke(at, &[rng.next_u64() as u8]);
        }
        let Ok((list, _)) = reopen(&m) else {
            errors += 1;
            continue;
        };
        match try_contents(&list) {
            Ok(got) => {
                ok += 1;
                assert_eq!(got.len(), list.len());
                assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
                // A flipped link may hide entries, but what is returned was inserted.
                for (k, v) in &got {
                    assert_eq!(model.get(k), Some(v), "a damaged entry was returned");
                }
            }
            Err(_) => errors += 1,
        }
        // Gets return inserted values or a typed error, never damaged bytes.
        for k in model.keys() {
            if let Ok(Some(v)) = list.get(k) {
                assert_eq!(model.get(k).map(Vec::as_slice), Some(v));
            }
        }
        // Still usable (or a typed error).
        let _ = list.insert(b"\x00new", b"");
    }
    // Both outcomes occur (flips in upper links or padding are harmless); too few trials
    // under Miri to be sure of a harmless one.
    assert!(errors > 0, "ok {ok}, errors {errors}");
    assert!(ok > 0 || cfg!(miri), "ok {ok}, errors {errors}");
}

/// Rewrites the header of the list at `media`'s offset 0 as version 1 (no allocation
/// bound; the node layout is the same).
fn as_version_1(media: &ShadowMedia) {
    let mut h = media.live()[..56].to_vec();
    h[8..12].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32c::crc32c(&h[..40]);
    h[40..44].copy_from_slice(&crc.to_le_bytes());
    h[48..56].copy_from_slice(&[0; 8]);
    media.poke(0, &h);
}

#[test]
fn version_1_lists_are_recovered_by_a_walk() {
    let media = ShadowMedia::new(16 << 10);
    let mut rng = Rng::new(12);
    let mut model: Model = entries(&mut rng, 40).into_iter().collect();
    {
        let list = fresh_list(&media);
        for (k, v) in &model {
            list.insert(k, v).unwrap();
        }
    }
    as_version_1(&media);
    let (list, report) = reopen(&media).unwrap();
    assert_eq!(report.version, 1);
    assert_same(&list, &model);
    // It stays version 1: inserts keep no allocation bound, the next recovery walks again.
    list.insert(b"\xffv1", b"more").unwrap();
    model.insert(b"\xffv1".to_vec(), b"more".to_vec());
    drop(list);
    let (list, report) = reopen(&media).unwrap();
    assert_eq!(report.version, 1);
    assert_same(&list, &model);
    // A damaged node of a version 1 list is found by the walk.
    let link0 = |img: &[u8], node: usize| {
        u32::from_le_bytes(img[node + 16..node + 20].try_into().unwrap()) as usize
    };
    let image = media.live();
    let first = link0(&image, 64);
    media.poke(first + 12, &[image[first + 12] ^ 1]);
    assert!(matches!(
        reopen(&media),
        Err(RecoverError::Node { offset, .. }) if offset as usize == first
    ));
}

/// A list recovered without a walk takes inserts again, and a power cut at every persist
/// point of those inserts (the allocation bound's included) still recovers a prefix of
/// them, the recovered entries first.
#[test]
fn power_cut_at_every_persist_point_after_a_recovery() {
    let mut rng = Rng::new(13);
    let all = entries(&mut rng, scale(120, 16));
    let (first, second) = all.split_at(all.len() / 3);
    let len = 32 << 10;
    // Phase 1 on a fresh list; its durable image is the start of every run of phase 2.
    let base = ShadowMedia::new(len);
    run_inserts(&base, first);
    let start = base.power_cut(&mut rng, 0).live();
    let run = |media: &Arc<ShadowMedia>| -> Vec<u64> {
        let (list, _) = reopen(media).unwrap();
        second
            .iter()
            .map(|(k, v)| {
                list.insert(k, v).unwrap();
                media.persists()
            })
            .collect()
    };
    let full = ShadowMedia::with_image(start.clone());
    run(&full);
    let points = full.persists();
    assert!(points >= 2 * second.len() as u64);
    let mut bound_moves = 0;
    for cut in 1..=points + 1 {
        let media = ShadowMedia::with_image(start.clone());
        media.arm_cut_at(cut);
        // Heights are random: count what returned before the cut in this run.
        let returned_at = run(&media);
        let returned = returned_at.iter().filter(|&&p| p < cut).count();
        for keep in [0, 50, 100] {
            let after = media.power_cut(&mut rng, keep);
            let (list, report) = reopen(&after).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            bound_moves += usize::from(report.bytes > 4096);
            let got = try_contents(&list).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_prefix(&got, &all, first.len() + returned);
            assert_eq!(list.len(), got.len());
            // New inserts never land on a recovered node.
            list.insert(b"\xff\xfe\xfd new", b"z").unwrap();
            let again: Model = try_contents(&list).unwrap().into_iter().collect();
            assert_eq!(again.len(), got.len() + 1);
            assert!(got.iter().all(|(k, v)| again.get(k) == Some(v)));
        }
    }
    assert!(bound_moves > 0, "the allocation bound never moved");
}

#[test]
fn arena_on_a_media_subrange() {
    let media = ShadowMedia::new(16 << 10);
    let m: Arc<dyn Media> = media.clone();
    // Two lists in two extents of one media do not disturb each other.
    let a = SkipList::new(Arena::on_media(m.clone(), 0, 8 << 10).unwrap(), Bytewise).unwrap();
    let b = SkipList::new(
        Arena::on_media(m.clone(), 8 << 10, 8 << 10).unwrap(),
        Bytewise,
    )
    .unwrap();
    for i in 0..50u32 {
        a.insert(&i.to_be_bytes(), b"a").unwrap();
        b.insert(&i.to_be_bytes(), b"b").unwrap();
    }
    drop((a, b));
    let mut rng = Rng::new(9);
    let after: Arc<dyn Media> = media.power_cut(&mut rng, 0);
    for (start, v) in [(0, b"a"), (8 << 10, b"b")] {
        let arena = Arena::recover_on_media(after.clone(), start, 8 << 10).unwrap();
        let (list, _) = SkipList::recover(arena, Bytewise).unwrap();
        assert_eq!(list.len(), 50);
        assert!(list.iter().all(|(_, val)| val == v));
    }
    // Inserts report their nodes to the write hook.
    assert!(media.written_bytes.load(Ordering::Relaxed) >= 100 * node_size(1, 4, 1) as u64);
}

// ---- the crate's Region over SimNvm (CrashSim) ------------------------------------------------

fn sim_list(sim: &SimNvm, path: &Path, len: usize) -> SkipList<Bytewise> {
    let region = Region::create(path, len, &RegionOptions::crash_sim(sim)).unwrap();
    SkipList::new(Arena::on_media(region, 0, len).unwrap(), Bytewise).unwrap()
}

fn sim_reopen(sim: &SimNvm, path: &Path, len: usize) -> Result<SkipList<Bytewise>, RecoverError> {
    let region = Region::open(path, &RegionOptions::crash_sim(sim)).unwrap();
    SkipList::recover(Arena::recover_on_media(region, 0, len).unwrap(), Bytewise).map(|r| r.0)
}

#[test]
#[cfg_attr(
    miri,
    ignore = "Region detects its flush instruction with cpuid (inline assembly)"
)]
fn crash_sim_region_every_persist_point() {
    let path = Path::new("memtable.nvm");
    let len = 32 << 10;
    let mut rng = Rng::new(10);
    let inserts = entries(&mut rng, scale(30, 5));
    let run = |sim: &SimNvm| -> Vec<u64> {
        let list = sim_list(sim, path, len);
        inserts
            .iter()
            .map(|(k, v)| {
                list.insert(k, v).unwrap();
                sim.persist_points()
            })
            .collect()
    };
    let sim = SimNvm::new();
    run(&sim);
    let points = sim.persist_points();
    for cut in 1..=points {
        let sim = SimNvm::new();
        sim.arm_cut_after(cut);
        // Heights are random: count what returned before the cut in this run.
        let returned_at = run(&sim);
        // The program ran on after the cut instant: only the durable image is meaningful.
        let after = sim.power_cut(&PowerCut {
            keep_unpersisted: KeepLines::None,
            seed: cut,
        });
        let returned = returned_at.iter().filter(|&&p| p < cut).count();
        match sim_reopen(&after, path, len) {
            Ok(list) => assert_prefix(&contents(&list), &inserts, returned),
            Err(RecoverError::Header { .. }) => assert!(cut <= 2, "cut {cut}"),
            Err(e) => panic!("cut {cut}: {e}"),
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "Region detects its flush instruction with cpuid (inline assembly)"
)]
fn crash_sim_region_random_cuts_between_inserts() {
    let path = Path::new("memtable.nvm");
    let len = 16 << 10;
    let mut rng = Rng::new(11);
    for trial in 0..scale(200, 3) {
        let n = 1 + rng.below(40);
        let inserts = entries(&mut rng, n);
        let stop = rng.below(inserts.len() + 1);
        let sim = SimNvm::new();
        {
            let list = sim_list(&sim, path, len);
            for (k, v) in &inserts[..stop] {
                list.insert(k, v).unwrap();
            }
        }
        // Stopped between inserts: every unpersisted line (upper links) may or may not stay.
        let keep = [KeepLines::None, KeepLines::All, KeepLines::Random][trial % 3];
        let after = sim.power_cut(&PowerCut {
            keep_unpersisted: keep,
            seed: trial as u64,
        });
        let list = sim_reopen(&after, path, len).unwrap();
        let model: Model = inserts[..stop].iter().cloned().collect();
        assert_same(&list, &model);
    }
}
