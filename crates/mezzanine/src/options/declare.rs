//! The `declare_options!` macro: turns the option table in `mod.rs` into the `Options`
//! struct and everything that walks its fields.
//!
//! One table entry per field, in OPTIONS-file order:
//!
//! ```text
//! /// docs
//! name: Type = default, Codec;
//! name: Type = default, Codec, check |v| condition, "message about {v}";
//! name: Type = default, Internal;
//! ```
//!
//! `Codec` is one of the codecs of `parse.rs` and says how the value is written and read
//! back; `Internal` marks a field that is not part of the text form (it is absent from
//! `FIELDS`, `get` and `set`, and survives `set("preset", ..)`). A `check` is a condition on
//! the field alone (`v` borrows it); when it fails, `validate` reports the field name followed
//! by the formatted message.
//!
//! From the table the macro generates: the struct with its docs, `Options::leveldb()` (every
//! default), `Options::FIELDS`, `get`, `set_field`, `check_fields` and `keep_internal`.
//! Everything generated is plain code over `&self`/`&mut self`; nothing is shared.

macro_rules! declare_options {
    // How one field is printed: `None` for an internal one.
    (@print Internal, $ty:ty, $value:expr) => {
        None
    };
    (@print $codec:ident, $ty:ty, $value:expr) => {
        Some(<$codec as Codec<$ty>>::print($value))
    };

    // How one field is parsed: an internal one is not settable by name.
    (@parse Internal, $ty:ty, $field:expr, $name:expr, $text:expr) => {
        Err(unknown_option($name))
    };
    (@parse $codec:ident, $ty:ty, $field:expr, $name:expr, $text:expr) => {{
        $field = <$codec as Codec<$ty>>::parse($name, $text)?;
        Ok(())
    }};

    // Whether a field is part of the text form.
    (@serialised Internal) => {
        false
    };
    (@serialised $codec:ident) => {
        true
    };

    // Moves an internal field from `$from` into `$to`; serialised fields are left alone.
    (@keep Internal, $to:expr, $from:expr) => {
        $to = $from
    };
    (@keep $codec:ident, $to:expr, $from:expr) => {};

    (
        $(#[$struct_attr:meta])*
        pub struct Options {
            $(
                $(#[$attr:meta])*
                $name:ident: $ty:ty = $default:expr, $codec:ident
                $(, check |$v:ident| $ok:expr, $msg:literal)?;
            )*
        }
    ) => {
        $(#[$struct_attr])*
        pub struct Options {
            $(
                $(#[$attr])*
                pub $name: $ty,
            )*
        }

        impl Options {
            /// The names of every field accepted by [`Options::set`], in OPTIONS-file order.
            pub const FIELDS: &'static [&'static str] = {
                const ALL: &[(&str, bool)] = &[
                    $((stringify!($name), declare_options!(@serialised $codec)),)*
                ];
                &serialised_names::<{ count_serialised(ALL) }>(ALL)
            };

            /// Every field at its declared default: the `leveldb` preset.
            fn leveldb() -> Self {
                Self {
                    $($name: $default,)*
                }
            }

            /// The value of one field as text, or `None` for an unknown name.
            #[must_use]
            pub fn get(&self, name: &str) -> Option<String> {
                match name {
                    $(stringify!($name) => declare_options!(@print $codec, $ty, &self.$name),)*
                    _ => None,
                }
            }

            /// Parses `text` (already trimmed) into the field `name`; `preset` only sets the
            /// field (`set` handles the reset).
            fn set_field(&mut self, name: &str, text: &str) -> Result<()> {
                match name {
                    $(stringify!($name) => {
                        declare_options!(@parse $codec, $ty, self.$name, name, text)
                    })*
                    _ => Err(unknown_option(name)),
                }
            }

            /// The checks of the table, in field order.
            fn check_fields(&self) -> Result<()> {
                $($({
                    let $v = &self.$name;
                    if !($ok) {
                        return Err(Error::InvalidArgument(format!(
                            "{} {}",
                            stringify!($name),
                            format_args!($msg)
                        )));
                    }
                })?)*
                Ok(())
            }

            /// Moves every internal field of `from` into `self`.
            pub(crate) fn keep_internal(&mut self, from: Self) {
                $(declare_options!(@keep $codec, self.$name, from.$name);)*
            }
        }
    };
}

/// How many of `fields` are serialised.
pub(super) const fn count_serialised(fields: &[(&str, bool)]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < fields.len() {
        if fields[i].1 {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of the serialised `fields`, in order; `N` is their number.
pub(super) const fn serialised_names<const N: usize>(
    fields: &[(&'static str, bool)],
) -> [&'static str; N] {
    let mut out = [""; N];
    let mut n = 0;
    let mut i = 0;
    while i < fields.len() {
        if fields[i].1 {
            out[n] = fields[i].0;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "N must be the number of serialised fields");
    out
}
