//! Runs the model's logs under a non-bytewise comparator: [`KeyCodec`] maps each key of the
//! model (ordered bytewise) to the key the database stores, such that the database's order
//! on stored keys is the model's order on model keys, and back.
//!
//! Owns: the codec for the reverse-bytewise comparator ([`mezzanine::ReverseBytewise`]):
//! byte `x` becomes the pair `0x00, !x`, and a `0x01` ends the key. Comparing two encoded
//! keys bytewise gives the opposite of comparing the originals (a proper prefix ends on
//! `0x01`, above the `0x00` that continues the longer key; a differing byte compares
//! inverted), so under the reverse comparator the database orders stored keys exactly as
//! the model orders its keys, and inclusive-lower / exclusive-upper bounds, seeks and key
//! ranges keep their meaning when encoded.
//!
//! Invariants: `decode(encode(k)) == k`; every key the database returns was encoded.
//!
//! Thread-safety: plain data.

use std::borrow::Cow;

use mezzanine::{Comparator, Options, ReverseBytewise};

use crate::model::Entry;
use crate::op::SeekStart;

/// How model keys become stored keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCodec {
    /// The bytewise order: keys are stored as they are.
    Identity,
    /// The reverse-bytewise comparator: keys are stored order-reversing encoded.
    Reversed,
}

impl KeyCodec {
    /// The codec for the comparator of `o`.
    ///
    /// # Panics
    /// For a comparator other than bytewise and reverse-bytewise, which the model cannot
    /// follow.
    #[must_use]
    pub fn for_options(o: &Options) -> KeyCodec {
        match &o.comparator {
            None => KeyCodec::Identity,
            Some(c) if c.name() == ReverseBytewise.name() => KeyCodec::Reversed,
            Some(c) => panic!(
                "the model runs under the bytewise and reverse-bytewise orders only, not {}",
                c.name()
            ),
        }
    }

    /// The stored key of model key `k`.
    #[must_use]
    pub fn encode<'a>(&self, k: &'a [u8]) -> Cow<'a, [u8]> {
        match self {
            KeyCodec::Identity => Cow::Borrowed(k),
            KeyCodec::Reversed => {
                let mut v = Vec::with_capacity(2 * k.len() + 1);
                for &b in k {
                    v.push(0x00);
                    v.push(!b);
                }
                v.push(0x01);
                Cow::Owned(v)
            }
        }
    }

    /// The model key of stored key `k` (a malformed one decodes to a marked key that no
    /// model holds, so the comparison reports it).
    #[must_use]
    pub fn decode(&self, k: &[u8]) -> Vec<u8> {
        match self {
            KeyCodec::Identity => k.to_vec(),
            KeyCodec::Reversed => {
                let Some((&0x01, body)) = k.split_last() else {
                    return [b"<malformed>".as_slice(), k].concat();
                };
                if body.len() % 2 != 0 || body.chunks(2).any(|p| p.first() != Some(&0x00)) {
                    return [b"<malformed>".as_slice(), k].concat();
                }
                body.chunks(2)
                    .filter_map(|p| p.get(1))
                    .map(|b| !b)
                    .collect()
            }
        }
    }

    /// [`KeyCodec::encode`] of an optional key.
    #[must_use]
    pub fn encode_opt(&self, k: Option<&Vec<u8>>) -> Option<Vec<u8>> {
        k.map(|k| self.encode(k).into_owned())
    }

    /// An entry read from the database, its key decoded.
    #[must_use]
    pub fn decode_entry(&self, (k, v): Entry) -> Entry {
        (self.decode(&k), v)
    }

    /// A seek start with its key encoded.
    #[must_use]
    pub fn encode_start(&self, s: &SeekStart) -> SeekStart {
        match s {
            SeekStart::Seek(k) => SeekStart::Seek(self.encode(k).into_owned()),
            SeekStart::SeekForPrev(k) => SeekStart::SeekForPrev(self.encode(k).into_owned()),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reversed_encoding_inverts_the_bytewise_order_and_round_trips() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0xff],
            vec![0xff, 0],
            b"a".to_vec(),
            b"ab".to_vec(),
            b"b".to_vec(),
        ];
        let c = KeyCodec::Reversed;
        for a in &keys {
            assert_eq!(&c.decode(&c.encode(a)), a);
            for b in &keys {
                assert_eq!(
                    c.encode(a).as_ref().cmp(c.encode(b).as_ref()),
                    b.cmp(a),
                    "{a:?} vs {b:?}"
                );
            }
        }
        assert!(c.decode(b"xy").starts_with(b"<malformed>"));
    }
}
