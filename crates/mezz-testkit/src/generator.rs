//! Random operation logs: a small key space (so overwrites and deletes hit), value sizes from
//! empty to larger than a block, and a configurable mix of operations.
//!
//! Owns: [`KeySpace`], [`OpMix`], [`GenConfig`] and [`OpGenerator`].
//!
//! Invariants: a generator is a pure function of its seed and config: the same seed gives
//! the same log on every machine (`StdRng` from the pinned `rand` version, and no reliance on
//! hashing or time). Every value written carries a fresh tag (see [`make_value`]) so a stale
//! read never looks like the expected one (except for values too short to hold their tag).
//!
//! Thread-safety: a generator is used by one thread.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::op::{BatchOp, Op, SeekStart, Step, make_value};

/// The keys a log draws from: key 0 is the empty key, a few keys are long (hundreds of
/// bytes), some contain `0x00` / `0xff`, and decimal suffixes make many keys prefixes of
/// others (`k1`, `k12`, `k120`).
#[derive(Debug, Clone)]
pub struct KeySpace {
    keys: Vec<Vec<u8>>,
}

impl KeySpace {
    /// A key space of `n` keys (at least 1).
    #[must_use]
    pub fn new(n: usize) -> Self {
        let keys = (0..n.max(1)).map(Self::key).collect();
        Self { keys }
    }

    /// Key number `i` of every key space.
    #[must_use]
    pub fn key(i: usize) -> Vec<u8> {
        if i == 0 {
            return Vec::new();
        }
        if i % 29 == 7 {
            // Long keys, 200..=1100 bytes: larger than a 256-byte block.
            let len = 200 + (i * 37) % 901;
            return make_value(1_000_000 + i as u64, len);
        }
        let mut k = format!("k{i}").into_bytes();
        if i.is_multiple_of(5) {
            k.push(0x00);
        }
        if i.is_multiple_of(7) {
            k.extend_from_slice(&[0xff, 0xff]);
        }
        if i.is_multiple_of(11) {
            k.extend_from_slice(b"/suffix-of-medium-length");
        }
        k
    }

    /// Number of keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Always false: a key space has at least one key.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Key number `i % len`.
    #[must_use]
    pub fn get(&self, i: usize) -> &[u8] {
        self.keys
            .get(i % self.keys.len().max(1))
            .map_or(&[][..], Vec::as_slice)
    }
}

/// Relative weights of each kind of op (0 = never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // one weight per `Op` variant of the same name
pub struct OpMix {
    pub put: u32,
    pub delete: u32,
    pub batch: u32,
    pub get: u32,
    pub iterate: u32,
    pub walk: u32,
    pub take_snapshot: u32,
    pub read_at_snapshot: u32,
    pub release_snapshot: u32,
    pub flush: u32,
    pub compact_range: u32,
    pub reopen: u32,
    pub iter_open: u32,
    pub iter_step: u32,
    pub iter_close: u32,
    /// Runs of due background work (`Op::Background`).
    pub background: u32,
}

impl Default for OpMix {
    /// Write-heavy with frequent reads: per 1,000 ops about 300 puts, 80 deletes, 60
    /// batches, 200 gets, 70 scans, 80 walks, 20/50/20 snapshot take/read/release, 10
    /// flushes, 5 range compactions, 5 reopens, 10/40/8 held-iterator open/step/close and 40
    /// runs of background work.
    fn default() -> Self {
        Self {
            put: 300,
            delete: 80,
            batch: 60,
            get: 200,
            iterate: 70,
            walk: 80,
            take_snapshot: 20,
            read_at_snapshot: 50,
            release_snapshot: 20,
            flush: 10,
            compact_range: 5,
            reopen: 5,
            iter_open: 10,
            iter_step: 40,
            iter_close: 8,
            background: 40,
        }
    }
}

impl OpMix {
    /// Only puts, deletes and batches.
    #[must_use]
    pub fn writes_only() -> Self {
        Self {
            put: 70,
            delete: 20,
            batch: 10,
            get: 0,
            iterate: 0,
            walk: 0,
            take_snapshot: 0,
            read_at_snapshot: 0,
            release_snapshot: 0,
            flush: 0,
            compact_range: 0,
            reopen: 0,
            iter_open: 0,
            iter_step: 0,
            iter_close: 0,
            background: 0,
        }
    }

    fn weights(&self) -> [u32; 16] {
        [
            self.put,
            self.delete,
            self.batch,
            self.get,
            self.iterate,
            self.walk,
            self.take_snapshot,
            self.read_at_snapshot,
            self.release_snapshot,
            self.flush,
            self.compact_range,
            self.reopen,
            self.iter_open,
            self.iter_step,
            self.iter_close,
            self.background,
        ]
    }
}

/// What a generator produces.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Size of the key space. Default: 200.
    pub num_keys: usize,
    /// Share of key picks (in percent) that go to the 16 "hot" keys, so some keys get
    /// deep version histories. Default: 30.
    pub hot_percent: u32,
    /// The op mix. Default: [`OpMix::default`].
    pub mix: OpMix,
    /// Most updates in one batch. Default: 8.
    pub max_batch: usize,
    /// Most steps in one walk. Default: 12.
    pub max_steps: usize,
    /// Most entries read by one scan. Default: 40.
    pub max_scan: usize,
    /// Share of values (in percent) that are big (see `big_value_len`). Default: 4.
    pub big_value_percent: u32,
    /// Length range of big values. Default: 10 KiB..12 KiB, larger than a block and than
    /// the tiny option sets' memtables.
    pub big_value_len: std::ops::Range<usize>,
}

impl Default for GenConfig {
    fn default() -> Self {
        Self {
            num_keys: 200,
            hot_percent: 30,
            mix: OpMix::default(),
            max_batch: 8,
            max_steps: 12,
            max_scan: 40,
            big_value_percent: 4,
            big_value_len: 10 * 1024..12 * 1024,
        }
    }
}

/// A seeded source of ops.
#[derive(Debug)]
pub struct OpGenerator {
    rng: StdRng,
    cfg: GenConfig,
    keys: KeySpace,
    next_tag: u64,
}

impl OpGenerator {
    /// A generator for `seed` and `cfg`.
    #[must_use]
    pub fn new(seed: u64, cfg: GenConfig) -> Self {
        let keys = KeySpace::new(cfg.num_keys);
        Self {
            rng: StdRng::seed_from_u64(seed),
            cfg,
            keys,
            next_tag: 1,
        }
    }

    /// The next `n` ops.
    pub fn generate(&mut self, n: usize) -> Vec<Op> {
        (0..n).map(|_| self.next_op()).collect()
    }

    /// The key space ops draw from.
    #[must_use]
    pub fn key_space(&self) -> &KeySpace {
        &self.keys
    }

    fn key(&mut self) -> Vec<u8> {
        let n = self.keys.len();
        let i = if self.rng.random_range(0..100) < self.cfg.hot_percent {
            self.rng.random_range(0..n.min(16))
        } else {
            self.rng.random_range(0..n)
        };
        self.keys.get(i).to_vec()
    }

    /// A key for seeks and bounds: usually from the key space, sometimes one between keys
    /// or outside every key.
    fn probe_key(&mut self) -> Vec<u8> {
        match self.rng.random_range(0..10) {
            0 => {
                let mut k = self.key();
                k.push(self.rng.random_range(0..=255u8));
                k
            }
            1 => vec![0xff; self.rng.random_range(1..4)],
            2 => b"k".to_vec(),
            _ => self.key(),
        }
    }

    fn bound(&mut self) -> Option<Vec<u8>> {
        if self.rng.random_bool(0.6) {
            None
        } else {
            Some(self.probe_key())
        }
    }

    fn bounds(&mut self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let lower = self.bound();
        let upper = self.bound();
        match (lower, upper) {
            // Mostly ordered bounds; an inverted pair now and then (an empty range).
            (Some(l), Some(u)) if l > u && self.rng.random_bool(0.8) => (Some(u), Some(l)),
            other => other,
        }
    }

    fn value(&mut self) -> Vec<u8> {
        let tag = self.next_tag;
        self.next_tag += 1;
        let roll = self.rng.random_range(0..100u32);
        let len = if roll < self.cfg.big_value_percent {
            let r = self.cfg.big_value_len.clone();
            if r.is_empty() {
                r.start
            } else {
                self.rng.random_range(r)
            }
        } else {
            match self.rng.random_range(0..100) {
                0..5 => 0,
                5..30 => self.rng.random_range(1..16),
                30..85 => self.rng.random_range(16..256),
                _ => self.rng.random_range(256..2048),
            }
        };
        make_value(tag, len)
    }

    fn scan_limit(&mut self) -> usize {
        self.rng.random_range(0..=self.cfg.max_scan)
    }

    /// The next op.
    pub fn next_op(&mut self) -> Op {
        let weights = self.cfg.mix.weights();
        let total: u32 = weights.iter().sum();
        if total == 0 {
            return Op::Get { key: Vec::new() };
        }
        let mut roll = self.rng.random_range(0..total);
        let mut kind = 0;
        for (i, w) in weights.iter().enumerate() {
            if roll < *w {
                kind = i;
                break;
            }
            roll -= w;
        }
        match kind {
            0 => Op::Put {
                key: self.key(),
                value: self.value(),
            },
            1 => Op::Delete { key: self.key() },
            2 => {
                let n = self.rng.random_range(1..=self.cfg.max_batch.max(1));
                let items = (0..n)
                    .map(|_| {
                        if self.rng.random_bool(0.75) {
                            BatchOp::Put {
                                key: self.key(),
                                value: self.value(),
                            }
                        } else {
                            BatchOp::Delete { key: self.key() }
                        }
                    })
                    .collect();
                Op::Batch(items)
            }
            3 => Op::Get { key: self.key() },
            4 => {
                let (lower, upper) = self.bounds();
                Op::Iterate {
                    lower,
                    upper,
                    reverse: self.rng.random_bool(0.4),
                    limit: self.scan_limit(),
                }
            }
            5 => {
                let (lower, upper) = self.bounds();
                let start = self.start();
                let steps = self.steps();
                Op::Walk {
                    lower,
                    upper,
                    start,
                    steps,
                }
            }
            6 => Op::TakeSnapshot,
            7 => {
                let (lower, upper) = self.bounds();
                Op::ReadAtSnapshot {
                    snapshot: self.rng.random_range(0..64),
                    key: self.key(),
                    lower,
                    upper,
                    reverse: self.rng.random_bool(0.3),
                    limit: self.scan_limit(),
                }
            }
            8 => Op::ReleaseSnapshot {
                snapshot: self.rng.random_range(0..64),
            },
            9 => Op::Flush,
            10 => {
                let (begin, end) = self.bounds();
                Op::CompactRange { begin, end }
            }
            11 => Op::Reopen,
            12 => {
                let (lower, upper) = self.bounds();
                Op::IterOpen {
                    lower,
                    upper,
                    start: self.start(),
                }
            }
            13 => Op::IterStep {
                iter: self.rng.random_range(0..64),
                steps: self.steps(),
            },
            14 => Op::IterClose {
                iter: self.rng.random_range(0..64),
            },
            _ => Op::Background {
                jobs: self.rng.random_range(1..=4),
            },
        }
    }

    fn start(&mut self) -> SeekStart {
        match self.rng.random_range(0..6) {
            0 => SeekStart::First,
            1 => SeekStart::Last,
            2 | 3 => SeekStart::Seek(self.probe_key()),
            _ => SeekStart::SeekForPrev(self.probe_key()),
        }
    }

    fn steps(&mut self) -> Vec<Step> {
        let n = self.rng.random_range(0..=self.cfg.max_steps);
        (0..n)
            .map(|_| {
                // Mostly forward runs with some direction changes.
                if self.rng.random_bool(0.6) {
                    Step::Next
                } else {
                    Step::Prev
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_log() {
        let a = OpGenerator::new(42, GenConfig::default()).generate(500);
        let b = OpGenerator::new(42, GenConfig::default()).generate(500);
        let c = OpGenerator::new(43, GenConfig::default()).generate(500);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn key_space_has_edge_cases() {
        let ks = KeySpace::new(200);
        assert_eq!(ks.get(0), b"");
        assert!((0..200).any(|i| ks.get(i).len() > 256));
        assert!((0..200).any(|i| ks.get(i).contains(&0)));
        let distinct: std::collections::BTreeSet<_> = (0..200).map(|i| ks.get(i)).collect();
        assert_eq!(distinct.len(), 200);
    }

    #[test]
    fn mix_produces_every_kind_and_big_values() {
        let ops = OpGenerator::new(1, GenConfig::default()).generate(5_000);
        let count = |f: fn(&Op) -> bool| ops.iter().filter(|o| f(o)).count();
        assert!(count(|o| matches!(o, Op::Put { .. })) > 1000);
        assert!(count(|o| matches!(o, Op::Reopen)) > 5);
        assert!(count(|o| matches!(o, Op::CompactRange { .. })) > 5);
        assert!(count(|o| matches!(o, Op::Walk { .. })) > 100);
        assert!(count(|o| matches!(o, Op::IterStep { .. })) > 100);
        assert!(count(|o| matches!(o, Op::Background { .. })) > 100);
        assert!(count(|o| matches!(o, Op::Put { value, .. } if value.len() >= 10 * 1024)) > 10);
        assert!(count(|o| matches!(o, Op::Put { value, .. } if value.is_empty())) > 10);
        let w = OpGenerator::new(
            1,
            GenConfig {
                mix: OpMix::writes_only(),
                ..GenConfig::default()
            },
        )
        .generate(300);
        assert!(w.iter().all(Op::is_write));
    }
}
