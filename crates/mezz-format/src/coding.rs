//! Little-endian fixed-width integers, LEB128 varints and length-prefixed byte strings, and
//! [`Decoder`], a bounds-checked cursor over a byte slice.
//!
//! Owns: every primitive encoding used by the persisted formats of this crate. All integers
//! are little-endian. A varint32 takes at most 5 bytes, a varint64 at most 10; decoders
//! reject longer or overflowing encodings.
//!
//! Invariant: no function here panics on any input; the `get_*` functions return `None` and
//! [`Decoder`] returns `Error::Corruption` naming the absolute offset of the bad field.
//!
//! Thread-safety: pure functions; a `Decoder` is a plain value.

use crate::{Error, Result};

/// Maximum encoded length of a varint32.
pub const MAX_VARINT32_LEN: usize = 5;
/// Maximum encoded length of a varint64.
pub const MAX_VARINT64_LEN: usize = 10;

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian u32 at `pos`; `None` if out of range.
#[must_use]
#[inline]
pub fn get_fixed32(src: &[u8], pos: usize) -> Option<u32> {
    let end = pos.checked_add(4)?;
    let b: [u8; 4] = src.get(pos..end)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

/// Reads a little-endian u64 at `pos`; `None` if out of range.
#[must_use]
#[inline]
pub fn get_fixed64(src: &[u8], pos: usize) -> Option<u64> {
    let end = pos.checked_add(8)?;
    let b: [u8; 8] = src.get(pos..end)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Appends `v` as a varint (7 bits per byte, low groups first, high bit = more).
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends `v` as a varint.
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Encoded length of `v` as a varint.
#[must_use]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint32 at `pos`; returns the value and the position after it, or `None` if
/// truncated, longer than 5 bytes, or above `u32::MAX`.
#[must_use]
#[inline]
pub fn get_varint32(src: &[u8], pos: usize) -> Option<(u32, usize)> {
    // Fast path: one byte.
    let b = *src.get(pos)?;
    if b < 0x80 {
        return Some((u32::from(b), pos + 1));
    }
    let (v, next) = get_varint_slow(src, pos, MAX_VARINT32_LEN)?;
    Some((u32::try_from(v).ok()?, next))
}

/// Decodes a varint64 at `pos`; returns the value and the position after it.
#[must_use]
#[inline]
pub fn get_varint64(src: &[u8], pos: usize) -> Option<(u64, usize)> {
    get_varint_slow(src, pos, MAX_VARINT64_LEN)
}

fn get_varint_slow(src: &[u8], pos: usize, max_len: usize) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    for i in 0..max_len {
        let p = pos.checked_add(i)?;
        let b = *src.get(p)?;
        let shift = 7 * i as u32;
        let bits = u64::from(b & 0x7f);
        // The 10th byte of a varint64 may only carry the top bit.
        if shift == 63 && bits > 1 {
            return None;
        }
        result |= bits << shift;
        if b < 0x80 {
            return Some((result, p + 1));
        }
    }
    None
}

/// Appends `varint32(len) ++ data`.
///
/// REQUIRES: `data.len() <= u32::MAX`.
pub fn put_length_prefixed(dst: &mut Vec<u8>, data: &[u8]) {
    put_varint64(dst, data.len() as u64);
    dst.extend_from_slice(data);
}

/// Decodes a length-prefixed slice at `pos`; returns it and the position after it.
#[must_use]
pub fn get_length_prefixed(src: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let (len, p) = get_varint32(src, pos)?;
    let end = p.checked_add(len as usize)?;
    Some((src.get(p..end)?, end))
}

/// A bounds-checked reading cursor. Errors name `base_offset + position` so they point into
/// the file the bytes came from.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Decoder<'a> {
    /// A cursor at the start of `buf`, whose first byte is at `base_offset` in its file.
    #[must_use]
    pub fn new(buf: &'a [u8], base_offset: u64) -> Self {
        Self {
            buf,
            pos: 0,
            base: base_offset,
        }
    }

    /// Absolute offset of the next byte to read.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// Bytes left.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn err(&self, what: &str) -> Error {
        Error::corruption(
            self.offset(),
            format!("{what} (with {} bytes left)", self.remaining()),
        )
    }

    /// Reads one byte.
    ///
    /// # Errors
    /// `Corruption` if no byte is left.
    pub fn u8(&mut self) -> Result<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| self.err("truncated u8"))?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads a little-endian u32.
    ///
    /// # Errors
    /// `Corruption` if fewer than 4 bytes are left.
    pub fn u32_le(&mut self) -> Result<u32> {
        let v = get_fixed32(self.buf, self.pos).ok_or_else(|| self.err("truncated u32"))?;
        self.pos += 4;
        Ok(v)
    }

    /// Reads a little-endian u64.
    ///
    /// # Errors
    /// `Corruption` if fewer than 8 bytes are left.
    pub fn u64_le(&mut self) -> Result<u64> {
        let v = get_fixed64(self.buf, self.pos).ok_or_else(|| self.err("truncated u64"))?;
        self.pos += 8;
        Ok(v)
    }

    /// Reads a varint32.
    ///
    /// # Errors
    /// `Corruption` if truncated or malformed.
    pub fn varint32(&mut self) -> Result<u32> {
        let (v, p) = get_varint32(self.buf, self.pos).ok_or_else(|| self.err("bad varint32"))?;
        self.pos = p;
        Ok(v)
    }

    /// Reads a varint64.
    ///
    /// # Errors
    /// `Corruption` if truncated or malformed.
    pub fn varint64(&mut self) -> Result<u64> {
        let (v, p) = get_varint64(self.buf, self.pos).ok_or_else(|| self.err("bad varint64"))?;
        self.pos = p;
        Ok(v)
    }

    /// Reads `n` raw bytes.
    ///
    /// # Errors
    /// `Corruption` if fewer than `n` bytes are left.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| self.err("length overflow"))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| self.err(&format!("truncated: need {n} bytes")))?;
        self.pos = end;
        Ok(s)
    }

    /// Reads a varint32 length and that many bytes.
    ///
    /// # Errors
    /// `Corruption` if truncated or malformed.
    pub fn length_prefixed(&mut self) -> Result<&'a [u8]> {
        let start = self.pos;
        let n = self.varint32()? as usize;
        match self.bytes(n) {
            Ok(s) => Ok(s),
            Err(e) => {
                self.pos = start;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_roundtrip() {
        let mut b = Vec::new();
        put_fixed32(&mut b, 0x0102_0304);
        put_fixed64(&mut b, 0x0102_0304_0506_0708);
        assert_eq!(&b[..4], &[4, 3, 2, 1]);
        assert_eq!(get_fixed32(&b, 0), Some(0x0102_0304));
        assert_eq!(get_fixed64(&b, 4), Some(0x0102_0304_0506_0708));
        assert_eq!(get_fixed64(&b, 5), None);
        assert_eq!(get_fixed32(&b, usize::MAX), None);
    }

    #[test]
    fn varint_roundtrip_and_lengths() {
        let vals = [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
            u64::MAX,
        ];
        let mut b = Vec::new();
        for &v in &vals {
            put_varint64(&mut b, v);
        }
        let mut p = 0;
        for &v in &vals {
            let (got, np) = get_varint64(&b, p).unwrap();
            assert_eq!(got, v);
            assert_eq!(np - p, varint_len(v));
            p = np;
        }
        assert_eq!(p, b.len());
        let mut b = Vec::new();
        put_varint32(&mut b, u32::MAX);
        assert_eq!(b.len(), 5);
        assert_eq!(get_varint32(&b, 0), Some((u32::MAX, 5)));
    }

    #[test]
    fn varint_rejects_bad() {
        // Truncated.
        assert_eq!(get_varint32(&[0x80], 0), None);
        assert_eq!(get_varint64(&[0xff; 3], 0), None);
        // Too long for 32 bits (value > u32::MAX).
        let mut b = Vec::new();
        put_varint64(&mut b, u64::from(u32::MAX) + 1);
        assert_eq!(get_varint32(&b, 0), None);
        // 11 bytes, or a 10th byte with more than the top bit.
        assert_eq!(get_varint64(&[0xff; 11], 0), None);
        let mut b = vec![0xff; 9];
        b.push(0x02);
        assert_eq!(get_varint64(&b, 0), None);
    }

    #[test]
    fn decoder_reads_and_reports_offsets() {
        let mut b = Vec::new();
        b.push(7);
        put_fixed32(&mut b, 42);
        put_fixed64(&mut b, 43);
        put_varint32(&mut b, 300);
        put_varint64(&mut b, 1 << 40);
        put_length_prefixed(&mut b, b"abc");
        let mut d = Decoder::new(&b, 1000);
        assert_eq!(d.u8().unwrap(), 7);
        assert_eq!(d.u32_le().unwrap(), 42);
        assert_eq!(d.u64_le().unwrap(), 43);
        assert_eq!(d.varint32().unwrap(), 300);
        assert_eq!(d.varint64().unwrap(), 1 << 40);
        assert_eq!(d.length_prefixed().unwrap(), b"abc");
        assert_eq!(d.remaining(), 0);
        assert_eq!(d.offset(), 1000 + b.len() as u64);
        match d.u8() {
            Err(Error::Corruption { offset, .. }) => assert_eq!(offset, 1000 + b.len() as u64),
            other => panic!("expected corruption, got {other:?}"),
        }
        // A length prefix that points past the end.
        let mut d = Decoder::new(&[5, b'a'], 10);
        assert!(d.length_prefixed().unwrap_err().is_corruption());
        assert_eq!(d.offset(), 10);
        assert!(d.bytes(usize::MAX).is_err());
    }
}
