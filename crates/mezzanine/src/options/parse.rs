//! How option values are written as text and read back: the codecs named in the option
//! table, and the names of the enum values.
//!
//! Invariant: `parse(name, &print(v))` gives back `v` (for `Dir`, a UTF-8 path without
//! surrounding spaces); the golden and round-trip tests in `tests.rs` hold every field to
//! it. Parse errors are `InvalidArgument` naming the option and the value. Stateless
//! functions only.

use std::path::PathBuf;

use super::{
    BlockFormat, CompactionPri, Compression, LevelCompression, NvmMemtable, NvmProfile,
    NvmTableMethod, NvmTiering, PersistMode, PlacementPolicy, Preset, RecoveryMode,
};
use crate::error::{Error, Result};

/// How a value of type `T` is written in an OPTIONS file and read back.
pub(super) trait Codec<T> {
    /// The text of `value`.
    fn print(value: &T) -> String;
    /// Parses `text` (already trimmed) for the option `name`.
    fn parse(name: &str, text: &str) -> Result<T>;
}

/// Booleans: `true`/`false`; also accepts `1`/`0`, `yes`/`no`, `on`/`off`.
pub(super) enum Flag {}

/// Unsigned integers, written in decimal; a `K`, `M` or `G` suffix (powers of 1024) is
/// accepted.
pub(super) enum Size {}

/// Floating-point numbers, written as Rust's `Display` does (`10`, `7.5`).
pub(super) enum Float {}

/// An optional directory: the path, or the empty string for none.
pub(super) enum Dir {}

/// A list of directories, comma-separated (a path may not contain a comma).
pub(super) enum Dirs {}

/// An enum, written as its name (see [`Named`]).
pub(super) enum Name {}

/// NVM tiering: `off`, `leveled:K`, `lru`, `lru:BYTES` (size suffixes allowed), `none`.
pub(super) enum Tiering {}

impl Codec<NvmTiering> for Tiering {
    fn print(value: &NvmTiering) -> String {
        match value {
            NvmTiering::Off => "off".into(),
            NvmTiering::Leveled(k) => format!("leveled:{k}"),
            NvmTiering::Lru(0) => "lru".into(),
            NvmTiering::Lru(b) => format!("lru:{b}"),
            NvmTiering::Full => "none".into(),
        }
    }
    fn parse(name: &str, text: &str) -> Result<NvmTiering> {
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown {name} {text:?} (off|leveled:K|lru|lru:BYTES|none)"
            ))
        };
        match text.split_once(':') {
            None => match text {
                "off" => Ok(NvmTiering::Off),
                "lru" => Ok(NvmTiering::Lru(0)),
                "none" | "full" => Ok(NvmTiering::Full),
                _ => Err(bad()),
            },
            Some(("leveled", k)) => Ok(NvmTiering::Leveled(k.trim().parse().map_err(|_| bad())?)),
            Some(("lru", b)) => Ok(NvmTiering::Lru(parse_size(name, b.trim())?)),
            Some(_) => Err(bad()),
        }
    }
}

/// A compression per level: codec names (`none`, `lz4`, `zstd`), comma-separated, the last
/// one for every deeper level.
pub(super) enum PerLevel {}

impl Codec<bool> for Flag {
    fn print(value: &bool) -> String {
        value.to_string()
    }
    fn parse(name: &str, text: &str) -> Result<bool> {
        match text {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(Error::InvalidArgument(format!(
                "{name}: {text:?} is not a boolean"
            ))),
        }
    }
}

impl<T: TryFrom<u64> + ToString> Codec<T> for Size {
    fn print(value: &T) -> String {
        value.to_string()
    }
    fn parse(name: &str, text: &str) -> Result<T> {
        let n = parse_size(name, text)?;
        T::try_from(n).map_err(|_| Error::InvalidArgument(format!("{name}: {text:?} too large")))
    }
}

impl Codec<f64> for Float {
    fn print(value: &f64) -> String {
        value.to_string()
    }
    fn parse(name: &str, text: &str) -> Result<f64> {
        text.parse()
            .map_err(|_| Error::InvalidArgument(format!("{name}: {text:?} is not a number")))
    }
}

impl Codec<Option<PathBuf>> for Dir {
    fn print(value: &Option<PathBuf>) -> String {
        value
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }
    fn parse(_name: &str, text: &str) -> Result<Option<PathBuf>> {
        Ok((!text.is_empty()).then(|| PathBuf::from(text)))
    }
}

impl Codec<Vec<PathBuf>> for Dirs {
    fn print(value: &Vec<PathBuf>) -> String {
        value
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
    fn parse(_name: &str, text: &str) -> Result<Vec<PathBuf>> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect())
    }
}

impl<T: Named> Codec<T> for Name {
    fn print(value: &T) -> String {
        value.name().to_string()
    }
    fn parse(name: &str, text: &str) -> Result<T> {
        T::from_name(name, text)
    }
}

impl Codec<LevelCompression> for PerLevel {
    fn print(value: &LevelCompression) -> String {
        value.to_string()
    }
    fn parse(name: &str, text: &str) -> Result<LevelCompression> {
        let levels = text
            .split(',')
            .map(|part| {
                let part = part.trim();
                Compression::from_name(part).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{name}: unknown compression {part:?} in {text:?} (none|lz4|zstd, \
                         comma-separated per level)"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LevelCompression::per_level(levels))
    }
}

/// A size: decimal digits with an optional `K`, `M` or `G` suffix (powers of 1024).
fn parse_size(name: &str, text: &str) -> Result<u64> {
    let bad = || Error::InvalidArgument(format!("{name}: {text:?} is not a size"));
    let (num, mult) = match text.as_bytes().last() {
        Some(b'k' | b'K') => (&text[..text.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&text[..text.len() - 1], 1u64 << 20),
        Some(b'g' | b'G') => (&text[..text.len() - 1], 1u64 << 30),
        _ => (text, 1),
    };
    let n: u64 = num.trim().parse().map_err(|_| bad())?;
    n.checked_mul(mult).ok_or_else(bad)
}

/// An enum whose values have names in OPTIONS files.
pub(super) trait Named: Copy {
    /// The value's name.
    fn name(self) -> &'static str;
    /// Parses a name given for the option `option`.
    fn from_name(option: &str, text: &str) -> Result<Self>;
}

impl Named for Preset {
    fn name(self) -> &'static str {
        Preset::name(self)
    }
    fn from_name(_option: &str, text: &str) -> Result<Self> {
        Preset::parse(text)
    }
}

impl Named for RecoveryMode {
    fn name(self) -> &'static str {
        match self {
            RecoveryMode::TolerateCorruptTail => "tolerate_corrupt_tail",
            RecoveryMode::AbsoluteConsistency => "absolute_consistency",
        }
    }
    fn from_name(option: &str, text: &str) -> Result<Self> {
        match text {
            "tolerate_corrupt_tail" => Ok(Self::TolerateCorruptTail),
            "absolute_consistency" => Ok(Self::AbsoluteConsistency),
            _ => Err(Error::InvalidArgument(format!("unknown {option} {text:?}"))),
        }
    }
}

impl Named for CompactionPri {
    fn name(self) -> &'static str {
        match self {
            CompactionPri::MinOverlappingRatio => "min_overlapping_ratio",
            CompactionPri::RoundRobin => "round_robin",
        }
    }
    fn from_name(option: &str, text: &str) -> Result<Self> {
        match text {
            "min_overlapping_ratio" => Ok(Self::MinOverlappingRatio),
            "round_robin" => Ok(Self::RoundRobin),
            _ => Err(Error::InvalidArgument(format!(
                "unknown {option} {text:?} (min_overlapping_ratio or round_robin)"
            ))),
        }
    }
}

impl Named for NvmMemtable {
    fn name(self) -> &'static str {
        match self {
            NvmMemtable::Off => "off",
            NvmMemtable::Immutable => "immutable",
            NvmMemtable::Mutable => "mutable",
            NvmMemtable::Overflow => "overflow",
        }
    }
    fn from_name(option: &str, text: &str) -> Result<Self> {
        match text {
            "off" | "none" => Ok(Self::Off),
            "immutable" => Ok(Self::Immutable),
            "mutable" => Ok(Self::Mutable),
            "overflow" => Ok(Self::Overflow),
            _ => Err(Error::InvalidArgument(format!(
                "unknown {option} {text:?} (off|immutable|mutable|overflow)"
            ))),
        }
    }
}

impl Named for NvmTableMethod {
    fn name(self) -> &'static str {
        match self {
            NvmTableMethod::Ps => "ps",
            NvmTableMethod::PsBac => "ps+bac",
            NvmTableMethod::PsBacPb => "ps+bac+pb",
        }
    }
    fn from_name(option: &str, text: &str) -> Result<Self> {
        match text {
            "ps" => Ok(Self::Ps),
            "ps+bac" | "ps_bac" => Ok(Self::PsBac),
            "ps+bac+pb" | "ps_bac_pb" => Ok(Self::PsBacPb),
            _ => Err(Error::InvalidArgument(format!(
                "unknown {option} {text:?} (ps|ps+bac|ps+bac+pb)"
            ))),
        }
    }
}

impl Named for BlockFormat {
    fn name(self) -> &'static str {
        match self {
            BlockFormat::KeySet => "keyset",
            BlockFormat::Prefix => "prefix",
        }
    }
    fn from_name(option: &str, text: &str) -> Result<Self> {
        match text {
            "keyset" => Ok(BlockFormat::KeySet),
            "prefix" => Ok(BlockFormat::Prefix),
            _ => Err(Error::InvalidArgument(format!(
                "unknown {option} {text:?} (keyset|prefix)"
            ))),
        }
    }
}

impl Named for PersistMode {
    fn name(self) -> &'static str {
        PersistMode::name(self)
    }
    /// Case-insensitive, as `PersistMode`'s `FromStr`.
    fn from_name(option: &str, text: &str) -> Result<Self> {
        text.parse()
            .map_err(|e| Error::InvalidArgument(format!("{option}: {e}")))
    }
}

impl Named for NvmProfile {
    fn name(self) -> &'static str {
        NvmProfile::name(self)
    }
    /// Case-insensitive, as `NvmProfile`'s `FromStr`; the error lists the profiles.
    fn from_name(option: &str, text: &str) -> Result<Self> {
        text.parse()
            .map_err(|e| Error::InvalidArgument(format!("{option}: {e}")))
    }
}

impl Named for PlacementPolicy {
    fn name(self) -> &'static str {
        PlacementPolicy::name(self)
    }
    fn from_name(option: &str, text: &str) -> Result<Self> {
        PlacementPolicy::parse(text).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "unknown {option} {text:?} (striped|per_file|isolated)"
            ))
        })
    }
}
