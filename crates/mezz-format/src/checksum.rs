//! Checksums: CRC-32C (Castagnoli, hardware-accelerated through the `crc32c` crate) and
//! LevelDB's masking.
//!
//! Owns: [`crc32c`], [`crc32c_extend`], [`mask`], [`unmask`]. Every persisted checksum in
//! Mezzanine is a *masked* CRC-32C: computing the CRC of a string that itself contains
//! embedded CRCs is error-prone, so stored values are rotated and offset (see
//! `docs/formats/sst.md` and `docs/formats/wal.md`).
//!
//! Thread-safety: pure functions.

/// The constant LevelDB adds when masking a CRC.
const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC-32C of `data`.
#[must_use]
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC-32C of `A ++ data`, given `crc = crc32c(A)`.
#[must_use]
#[inline]
pub fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// The masked form of `crc` that is stored on disk (LevelDB's `crc32c::Mask`).
#[must_use]
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
#[must_use]
#[inline]
pub fn unmask(m: u32) -> u32 {
    m.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // RFC 3720, B.4.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn extend_equals_whole() {
        let data = b"hello, mezzanine world";
        let (a, b) = data.split_at(7);
        assert_eq!(crc32c_extend(crc32c(a), b), crc32c(data));
    }

    #[test]
    fn mask_roundtrip_and_differs() {
        for c in [0u32, 1, 0xdead_beef, u32::MAX, crc32c(b"foo")] {
            assert_ne!(mask(c), c);
            assert_ne!(mask(mask(c)), mask(c));
            assert_eq!(unmask(mask(c)), c);
        }
    }
}
