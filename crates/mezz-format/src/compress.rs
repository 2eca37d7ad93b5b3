//! Block compression of SST data blocks: the codecs ([`Compression`]), the stored form of a
//! compressed block, [`BlockCompressor`] (the writer's side) and [`decompress_block`] (the
//! reader's side).
//!
//! Spec: `docs/formats/sst.md`. A compressed block's stored contents are
//! `varint32 uncompressed length | compressed stream`; the stream is an LZ4 *block* (no
//! frame) or one Zstandard frame that records its content size. The block trailer's type
//! byte says which ([`Compression::block_type`]).
//!
//! Invariants: a block is stored compressed only if that saves at least 1/8 of its bytes
//! ([`MIN_SAVING_DIVISOR`]) and its uncompressed size is at most [`MAX_UNCOMPRESSED_BLOCK`];
//! decompression never panics and never allocates more than that cap (the stated length is
//! checked against the cap, against what the stream can possibly expand to, and for Zstd
//! against the frame header, before anything is allocated); every failure is a `Corruption`
//! naming the block's offset.
//!
//! Thread-safety: [`BlockCompressor`] is a single-owner value (it holds a Zstd context);
//! [`decompress_block`] may run on any thread (each thread keeps its own Zstd context).

use std::cell::RefCell;
use std::fmt;

use crate::coding::{get_varint32, put_varint32};
use crate::{Error, Result};

/// Block type byte of an LZ4 block.
pub const BLOCK_TYPE_LZ4: u8 = 1;
/// Block type byte of a Zstd block.
pub const BLOCK_TYPE_ZSTD: u8 = 2;

/// The largest uncompressed block stored compressed; a bigger block (one huge entry) is
/// stored raw, and a stated length above this is corruption.
pub const MAX_UNCOMPRESSED_BLOCK: usize = 64 << 20;

/// A block is stored compressed only if the stored form is at most
/// `raw - raw / MIN_SAVING_DIVISOR` bytes (it saves at least 12.5 %), as RocksDB does.
pub const MIN_SAVING_DIVISOR: usize = 8;

/// The Zstd level used when none is given: the library's default.
pub const DEFAULT_ZSTD_LEVEL: i32 = zstd::DEFAULT_COMPRESSION_LEVEL;

/// An LZ4 block expands at most about 255-fold (a run-length byte of 255 adds 255 output
/// bytes); a stated length beyond `stream × 256 + 64` cannot be right.
const LZ4_MAX_RATIO: usize = 256;

/// How a table's data blocks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Stored raw (block type 0). The default.
    #[default]
    None,
    /// LZ4 block format (block type 1).
    Lz4,
    /// Zstandard (block type 2).
    Zstd,
}

impl Compression {
    /// Every codec, in block-type order.
    pub const ALL: &'static [Compression] =
        &[Compression::None, Compression::Lz4, Compression::Zstd];

    /// The block trailer's type byte of a block stored with this codec.
    #[must_use]
    pub fn block_type(self) -> u8 {
        match self {
            Compression::None => crate::sst::BLOCK_TYPE_RAW,
            Compression::Lz4 => BLOCK_TYPE_LZ4,
            Compression::Zstd => BLOCK_TYPE_ZSTD,
        }
    }

    /// The codec of a block type byte, if known.
    #[must_use]
    pub fn from_block_type(b: u8) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.block_type() == b)
    }

    /// The codec's name in options and reports: `none`, `lz4`, `zstd`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// The codec named `s` (as [`Compression::name`] writes it).
    #[must_use]
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == s)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compresses blocks with one codec, reusing its buffers (and its Zstd context).
///
/// Thread-safety: single owner.
pub struct BlockCompressor {
    kind: Compression,
    zstd_level: i32,
    /// Created on first use; `None` after it failed to be created (blocks are then raw).
    zstd: Option<zstd::bulk::Compressor<'static>>,
    zstd_failed: bool,
    out: Vec<u8>,
}

impl fmt::Debug for BlockCompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCompressor")
            .field("kind", &self.kind)
            .field("zstd_level", &self.zstd_level)
            .finish_non_exhaustive()
    }
}

impl BlockCompressor {
    /// A compressor for `kind`; `zstd_level` is used by [`Compression::Zstd`] only.
    #[must_use]
    pub fn new(kind: Compression, zstd_level: i32) -> Self {
        Self {
            kind,
            zstd_level,
            zstd: None,
            zstd_failed: false,
            out: Vec::new(),
        }
    }

    /// The codec.
    #[must_use]
    pub fn kind(&self) -> Compression {
        self.kind
    }

    /// The stored form of `raw` (`varint32 length | stream`) if compressing saves at least
    /// 1/8 of its bytes; `None` to store it raw (no codec, no saving, too large, or the
    /// codec failed).
    pub fn compress(&mut self, raw: &[u8]) -> Option<&[u8]> {
        if self.kind == Compression::None || raw.is_empty() || raw.len() > MAX_UNCOMPRESSED_BLOCK {
            return None;
        }
        let limit = raw.len() - raw.len() / MIN_SAVING_DIVISOR;
        self.out.clear();
        put_varint32(&mut self.out, u32::try_from(raw.len()).ok()?);
        let header = self.out.len();
        let n = match self.kind {
            Compression::None => return None,
            Compression::Lz4 => {
                self.out.resize(
                    header + lz4_flex::block::get_maximum_output_size(raw.len()),
                    0,
                );
                let dst = self.out.get_mut(header..)?;
                lz4_flex::block::compress_into(raw, dst).ok()?
            }
            Compression::Zstd => {
                if self.zstd.is_none() && !self.zstd_failed {
                    self.zstd = zstd::bulk::Compressor::new(self.zstd_level).ok();
                    self.zstd_failed = self.zstd.is_none();
                }
                let c = self.zstd.as_mut()?;
                self.out
                    .resize(header + zstd::zstd_safe::compress_bound(raw.len()), 0);
                let dst = self.out.get_mut(header..)?;
                c.compress_to_buffer(raw, dst).ok()?
            }
        };
        self.out.truncate(header + n);
        (self.out.len() <= limit).then_some(self.out.as_slice())
    }
}

thread_local! {
    /// Each thread's Zstd decompression context (creating one per block would cost more
    /// than decompressing a small block).
    static ZSTD_DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Decompresses the stored contents `stored` of a block of type `block_type` (not raw) that
/// starts at `offset` in its file.
///
/// # Errors
/// `Corruption` naming `offset` for an unknown type, a missing, zero, oversized or
/// impossible stated length, a stream that does not decode, or one that decodes to another
/// length.
pub fn decompress_block(block_type: u8, stored: &[u8], offset: u64) -> Result<Vec<u8>> {
    let bad = |what: String| Error::corruption(offset, what);
    let kind = Compression::from_block_type(block_type)
        .filter(|c| *c != Compression::None)
        .ok_or_else(|| bad(format!("unknown block type {block_type}")))?;
    let (stated, start) = get_varint32(stored, 0)
        .ok_or_else(|| bad(format!("{kind} block: bad uncompressed length")))?;
    let stream = stored.get(start..).unwrap_or_default();
    let len = stated as usize;
    if len == 0 || len > MAX_UNCOMPRESSED_BLOCK {
        return Err(bad(format!(
            "{kind} block: uncompressed length {len} not in 1..={MAX_UNCOMPRESSED_BLOCK}"
        )));
    }
    let out = match kind {
        Compression::None => return Err(bad("raw block passed to decompression".into())),
        Compression::Lz4 => {
            if len
                > stream
                    .len()
                    .saturating_mul(LZ4_MAX_RATIO)
                    .saturating_add(64)
            {
                return Err(bad(format!(
                    "lz4 block: uncompressed length {len} impossible for a {}-byte stream",
                    stream.len()
                )));
            }
            let mut out = vec![0u8; len];
            let n = lz4_flex::block::decompress_into(stream, &mut out)
                .map_err(|e| bad(format!("lz4 block: {e}")))?;
            if n != len {
                return Err(bad(format!(
                    "lz4 block: decoded {n} bytes, length says {len}"
                )));
            }
            out
        }
        Compression::Zstd => {
            match zstd::zstd_safe::get_frame_content_size(stream) {
                Ok(Some(n)) if n == len as u64 => {}
                Ok(Some(n)) => {
                    return Err(bad(format!(
                        "zstd block: frame holds {n} bytes, length says {len}"
                    )));
                }
                Ok(None) | Err(_) => {
                    return Err(bad("zstd block: bad frame header or no content size".into()));
                }
            }
            let mut out = Vec::with_capacity(len);
            let n = ZSTD_DCTX
                .with(|cell| {
                    let mut slot = cell.borrow_mut();
                    if slot.is_none() {
                        *slot = Some(zstd::bulk::Decompressor::new()?);
                    }
                    match slot.as_mut() {
                        Some(dctx) => dctx.decompress_to_buffer(stream, &mut out),
                        None => Err(std::io::Error::other("no zstd context")),
                    }
                })
                .map_err(|e| bad(format!("zstd block: {e}")))?;
            if n != len || out.len() != len {
                return Err(bad(format!(
                    "zstd block: decoded {n} bytes, length says {len}"
                )));
            }
            out
        }
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compressible(n: usize) -> Vec<u8> {
        (0..n).map(|i| b"abcdefgh"[(i / 3) % 8]).collect()
    }

    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn names_and_types_round_trip() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_name(c.name()), Some(*c));
            assert_eq!(Compression::from_block_type(c.block_type()), Some(*c));
        }
        assert_eq!(Compression::from_name("snappy"), None);
        assert_eq!(Compression::from_block_type(3), None);
    }

    #[test]
    fn each_codec_round_trips_and_noise_stays_raw() {
        for kind in [Compression::Lz4, Compression::Zstd] {
            let mut c = BlockCompressor::new(kind, DEFAULT_ZSTD_LEVEL);
            for n in [1usize, 100, 4096, 70_000] {
                let raw = compressible(n);
                match c.compress(&raw) {
                    Some(stored) => {
                        assert!(stored.len() <= n - n / 8);
                        let back = decompress_block(kind.block_type(), stored, 40).unwrap();
                        assert_eq!(back, raw, "{kind} {n}");
                    }
                    None => assert!(n < 64, "{kind}: {n} compressible bytes stayed raw"),
                }
            }
            assert!(
                c.compress(&noise(4096)).is_none(),
                "{kind}: noise compressed"
            );
        }
        let mut none = BlockCompressor::new(Compression::None, 3);
        assert!(none.compress(&compressible(4096)).is_none());
    }

    #[test]
    fn lying_lengths_and_bad_streams_are_corruption_at_the_offset() {
        let raw = compressible(4096);
        for kind in [Compression::Lz4, Compression::Zstd] {
            let mut c = BlockCompressor::new(kind, 3);
            let stored = c.compress(&raw).unwrap().to_vec();
            let ty = kind.block_type();
            let (_, start) = get_varint32(&stored, 0).unwrap();
            let stream = &stored[start..];
            let with_len = |len: u32| {
                let mut v = Vec::new();
                put_varint32(&mut v, len);
                v.extend_from_slice(stream);
                v
            };
            for len in [0, 1, 4095, 4097, 1 << 30, u32::MAX] {
                match decompress_block(ty, &with_len(len), 123) {
                    Err(Error::Corruption { offset, .. }) => assert_eq!(offset, 123),
                    other => panic!("{kind} with length {len}: {other:?}"),
                }
            }
            // Truncated streams, a missing length and garbage.
            for cut in [0, 1, stored.len() / 2, stored.len() - 1] {
                assert!(
                    decompress_block(ty, &stored[..cut], 9).is_err(),
                    "{kind} cut {cut}"
                );
            }
            assert!(decompress_block(ty, &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80], 9).is_err());
            for i in 0..stored.len() {
                let mut bad = stored.clone();
                bad[i] ^= 0x5a;
                // A damaged stream may still decode (checksums catch that); the result
                // always has the stated length.
                if let Ok(v) = decompress_block(ty, &bad, 9) {
                    let (stated, _) = get_varint32(&bad, 0).unwrap();
                    assert_eq!(v.len(), stated as usize);
                }
            }
        }
        assert!(decompress_block(0, b"x", 1).is_err());
        assert!(decompress_block(7, b"x", 1).is_err());
    }
}
