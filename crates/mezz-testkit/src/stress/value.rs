//! Self-checking keys and values shared by the crash harnesses.
//!
//! Owns: the key naming (`k0000042`, ordered like the key index), and the value codec. A
//! value carries the key index it belongs to, a version number, its own length and a checksum
//! over everything before it, so a value that is stale (wrong version), misplaced (wrong key)
//! or torn (wrong length or checksum) is told apart from a correct one.
//!
//! Layout of a value (little-endian):
//! `key: u32 | version: u64 | len: u32 (total bytes) | payload | checksum: u64 (FNV-1a 64)`.
//! The payload is a deterministic function of key and version.
//!
//! Invariants: `decode_value(&encode_value(k, v, n))` returns `(k, v)` for every `n`;
//! decoding never panics and never allocates from an unchecked length.
//!
//! Thread-safety: pure functions.

use std::fmt;

/// Bytes of a value before its payload: key (4), version (8), length (4).
const HEADER: usize = 16;
/// Bytes of the trailing checksum.
const TRAILER: usize = 8;
/// The shortest value [`encode_value`] produces.
pub const MIN_VALUE_LEN: usize = HEADER + TRAILER;

/// The user key of key index `k`: `k` followed by the index in 7 or more decimal digits, so
/// byte order equals numeric order for indexes below 10^7.
#[must_use]
pub fn key_bytes(k: u32) -> Vec<u8> {
    format!("k{k:07}").into_bytes()
}

/// The key index of a user key made by [`key_bytes`], or `None` for any other byte string.
#[must_use]
pub fn parse_key(key: &[u8]) -> Option<u32> {
    let digits = key.strip_prefix(b"k")?;
    if digits.len() < 7 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let k: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    (key_bytes(k) == key).then_some(k)
}

/// FNV-1a, 64 bits: enough to catch torn or misplaced values; not cryptographic.
#[must_use]
pub fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A value of `len` bytes (at least [`MIN_VALUE_LEN`]) for key index `key` at `version`.
#[must_use]
pub fn encode_value(key: u32, version: u64, len: usize) -> Vec<u8> {
    let len = len.max(MIN_VALUE_LEN);
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&key.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    v.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
    // xorshift64* stream seeded by key and version: cheap, deterministic, not all zeros.
    let mut x = (u64::from(key) << 40) ^ version ^ 0x9e37_79b9_7f4a_7c15;
    while v.len() < len - TRAILER {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        let room = len - TRAILER - v.len();
        v.extend_from_slice(r.get(..room.min(8)).unwrap_or(&r));
    }
    let sum = fnv1a64(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

/// Why a value did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(pub String);

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(s))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    let s: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(s))
}

/// Decodes a value made by [`encode_value`] into `(key index, version)`, checking its length,
/// checksum and payload.
///
/// # Errors
/// [`BadValue`] describing the first thing wrong.
pub fn decode_value(v: &[u8]) -> Result<(u32, u64), BadValue> {
    let bad = |m: String| Err(BadValue(m));
    if v.len() < MIN_VALUE_LEN {
        return bad(format!("value of {} bytes is too short", v.len()));
    }
    let (Some(key), Some(version), Some(len)) = (le_u32(v, 0), le_u64(v, 4), le_u32(v, 12)) else {
        return bad("value header unreadable".into());
    };
    if usize::try_from(len).ok() != Some(v.len()) {
        return bad(format!("value says {len} bytes but has {}", v.len()));
    }
    let body_len = v.len() - TRAILER;
    let (body, sum) = v.split_at(body_len);
    let stored = le_u64(sum, 0).unwrap_or(0);
    if fnv1a64(body) != stored {
        return bad(format!(
            "value checksum mismatch (key {key}, version {version}, {} bytes)",
            v.len()
        ));
    }
    if encode_value(key, version, v.len()) != v {
        return bad(format!(
            "value payload differs (key {key}, version {version})"
        ));
    }
    Ok((key, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_at_every_length() {
        for len in [0, 1, MIN_VALUE_LEN, MIN_VALUE_LEN + 1, 31, 100, 4097] {
            let v = encode_value(7, 12345, len);
            assert_eq!(v.len(), len.max(MIN_VALUE_LEN));
            assert_eq!(decode_value(&v), Ok((7, 12345)));
        }
    }

    #[test]
    fn damaged_values_are_rejected() {
        let v = encode_value(3, 9, 64);
        assert!(decode_value(&v[..63]).is_err(), "truncated");
        assert!(decode_value(&v[..10]).is_err(), "short");
        for i in 0..v.len() {
            let mut w = v.clone();
            w[i] ^= 0x40;
            assert!(decode_value(&w).is_err(), "flip at {i}");
        }
        let mut longer = v.clone();
        longer.push(0);
        assert!(decode_value(&longer).is_err(), "extended");
    }

    #[test]
    fn keys_sort_like_their_indexes_and_parse_back() {
        let ks: Vec<Vec<u8>> = [0, 1, 9, 10, 99, 1000, 9_999_999].map(key_bytes).into();
        assert!(ks.windows(2).all(|w| w[0] < w[1]));
        for k in [0, 5, 1234, 9_999_999, 12_345_678] {
            assert_eq!(parse_key(&key_bytes(k)), Some(k));
        }
        assert_eq!(parse_key(b"k12"), None);
        assert_eq!(parse_key(b"x0000001"), None);
        assert_eq!(parse_key(b"k00000a1"), None);
        assert_eq!(parse_key(b"k00000001"), None, "non-canonical form");
    }
}
