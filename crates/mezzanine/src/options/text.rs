//! The text form of options: `set` by name (the CLI's `--opt k=v`), and the OPTIONS-file
//! text (`to_text` / `from_text`), also embedded in every benchmark result.
//!
//! Invariants: the text is a `# Mezzanine options` header then one `name=value` line per
//! name of `Options::FIELDS`, in that order; `from_text(&o.to_text())` gives back every
//! serialised field of `o`. Internal fields are never written and keep their defaults in
//! `from_text`. Works on one `Options` owned by the caller.

use super::Options;
use super::presets::Preset;
use crate::error::{Error, Result};

/// The error for a name that is not a field of the text form.
pub(super) fn unknown_option(name: &str) -> Error {
    Error::InvalidArgument(format!(
        "unknown option {name:?} (known: {})",
        Options::FIELDS.join(", ")
    ))
}

impl Options {
    /// Sets one field from text. Setting `preset` resets every other field to that preset's
    /// value (so put it first). Sizes accept a `K`, `M` or `G` suffix (powers of 1024).
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown field or a value that does not parse.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let v = value.trim();
        if name == "preset" {
            let old = std::mem::replace(self, Options::preset(Preset::parse(v)?));
            self.keep_internal(old);
            return Ok(());
        }
        self.set_field(name, v)
    }

    /// The OPTIONS-file text: a header comment then one `name=value` line per field.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut s = String::from("# Mezzanine options\n");
        for f in Self::FIELDS {
            if let Some(v) = self.get(f) {
                s.push_str(f);
                s.push('=');
                s.push_str(&v);
                s.push('\n');
            }
        }
        s
    }

    /// Parses OPTIONS-file text (as written by [`Options::to_text`]); blank lines and `#`
    /// comments are skipped.
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed line, unknown field or bad value.
    pub fn from_text(text: &str) -> Result<Self> {
        let mut o = Options::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line.split_once('=').ok_or_else(|| {
                Error::InvalidArgument(format!("malformed options line {line:?}"))
            })?;
            o.set(k.trim(), v)?;
        }
        Ok(o)
    }
}
