//! The engine's modules stand in layers, and a module names only modules of the layers below
//! its own (`docs/impl.md`, "Layers"). This test reads the crate's sources and fails on any
//! import that goes sideways or back up: a `use crate::x`, a `crate::{x, ..}` group, an
//! inline `crate::x::..` path, a `super::` path that leaves its top-level module, or a name
//! the crate root re-exports (`crate::Options`). Test code (`#[cfg(test)]` items and the
//! files they declare) may reach anywhere; comments and string literals are not code.
//!
//! Run `cargo test -p mezzanine --test layers -- --nocapture` to print the edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may import from any layer below its own, never from
/// its own layer or one above. Every top-level module of `src/` must be listed.
const LAYERS: &[&[&str]] = &[
    // Errors and helpers that know nothing of the engine.
    &["error", "parallel"],
    // What every layer speaks of: file names, the shutdown gate, counters, table
    // metadata and locations, snapshots and shared sizes.
    &["filename", "gate", "stats", "base"],
    // The info log (the LOG file, or the caller's logger).
    &["info_log"],
    // Every layer above reads options.
    &["options"],
    // Where bytes live (SSD directories, the NVM pool), and write batches.
    &["storage", "batch"],
    // Pinned values, the WAL.
    &["pinned", "wal"],
    // Tables of every kind, and the table cache.
    &["table"],
    // Versions and their edits; memtables.
    &["version", "memtable"],
    // The MANIFEST and recovery; the memtable set and super versions.
    &["manifest", "state"],
    // Iterators; placement of new tables on SSD units.
    &["iter", "placement"],
    // Compaction policies, the executor and its sinks.
    &["compaction"],
    // The designs, assembled from options.
    &["design"],
    // The database handle.
    &["db"],
    // Backups (of a database handle).
    &["backup"],
    // Fuzzing entry points (use internals), and the crate root.
    &["fuzzing", "lib"],
];

fn layer_of() -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for (i, layer) in LAYERS.iter().enumerate() {
        for &name in *layer {
            assert!(m.insert(name, i).is_none(), "{name} is listed twice");
        }
    }
    m
}

/// Blanks comments and the contents of string and character literals (keeping line
/// breaks, so line numbers stay right), so that neither counts as code.
fn strip_comments_and_strings(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let keep_newlines = |s: &[u8], out: &mut String| {
        for &c in s {
            if c == b'\n' {
                out.push('\n');
            }
        }
    };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
            i = end;
        } else if c == b'/' && next == Some(b'*') {
            let mut depth = 1;
            let start = i;
            i += 2;
            while i < b.len() && depth > 0 {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            keep_newlines(&b[start..i], &mut out);
        } else if c == b'r' && (next == Some(b'"') || next == Some(b'#')) && !ident_before(b, i) {
            // A raw string: r"..", r#".."#, ...
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c as char);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let end = src[j + 1..]
                .find(&close)
                .map_or(b.len(), |n| j + 1 + n + close.len());
            keep_newlines(&b[i..end], &mut out);
            out.push_str("\"\"");
            i = end;
        } else if c == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            keep_newlines(&b[start..i.min(b.len())], &mut out);
            out.push_str("\"\"");
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a).
            let rest = &src[i + 1..];
            let lit_len = if rest.starts_with('\\') {
                rest.find('\'').map(|n| n + 1)
            } else {
                rest.chars()
                    .next()
                    .filter(|_| rest.chars().nth(1) == Some('\''))
                    .map(|ch| ch.len_utf8() + 1)
            };
            match lit_len {
                Some(n) => {
                    out.push_str("' '");
                    i += 1 + n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = src[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Removes every item marked `#[cfg(test)]` (keeping line breaks), and returns the names
/// of the out-of-line modules it declared (`#[cfg(test)] mod tests;`).
fn strip_test_items(code: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(code.len());
    let mut test_mods = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let b = item.as_bytes();
        // The item ends at a `;` before any `{`, or at the `}` closing its first `{`.
        let mut depth = 0usize;
        let mut end = item.len();
        let mut j = "#[cfg(test)]".len();
        while j < b.len() {
            match b[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let text = &item[..end];
        let words: Vec<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        if text.ends_with(';')
            && let Some(p) = words.iter().position(|w| *w == "mod")
            && let Some(name) = words.get(p + 1)
        {
            test_mods.push((*name).to_string());
        }
        for c in text.chars() {
            if c == '\n' {
                out.push('\n');
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_mods)
}

/// One import of a module by another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: String,
    to: String,
    file: String,
    line: usize,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The leading identifier of `s`.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules `code` (of the file `rel`, e.g. `db/write.rs`) names, with their
/// line numbers. `root_names` maps the names the crate root re-exports to their module.
fn references(
    rel: &str,
    code: &str,
    root_names: &BTreeMap<String, String>,
) -> Vec<(String, usize)> {
    let parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
    // How many `super::` reach the crate root from this file.
    let depth = match parts.last() {
        Some(&"mod") => parts.len() - 1,
        _ => parts.len(),
    };
    let mut out = Vec::new();
    let resolve = |name: &str| -> Option<String> {
        if let Some(m) = root_names.get(name) {
            return Some(m.clone());
        }
        // `self`, or an item of the root that is not a re-export (none today).
        if name.is_empty() || name == "self" || name.starts_with(|c: char| c.is_uppercase()) {
            return None;
        }
        Some(name.to_string())
    };
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let bytes = code.as_bytes();
    let mut at = 0;
    while let Some(p) = code[at..].find("crate::") {
        let start = at + p;
        at = start + "crate::".len();
        if ident_before(bytes, start) {
            continue;
        }
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            // crate::{a, b::c, d::{e, f}}: the first name of each top-level element.
            let mut depth = 0;
            let mut elem_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => elem_start = true,
                    c if elem_start && is_ident(c) => {
                        elem_start = false;
                        if let Some(m) = resolve(ident(&group[k..])) {
                            out.push((m, line_of(at + 1 + k)));
                        }
                    }
                    _ => {}
                }
            }
        } else if let Some(m) = resolve(ident(rest)) {
            out.push((m, line_of(start)));
        }
    }
    // super:: chains that climb to the crate root.
    let mut at = 0;
    while let Some(p) = code[at..].find("super::") {
        let start = at + p;
        if ident_before(bytes, start) {
            at = start + 1;
            continue;
        }
        let mut k = start;
        let mut ups = 0;
        while code[k..].starts_with("super::") {
            ups += 1;
            k += "super::".len();
        }
        at = k;
        if ups >= depth
            && let Some(m) = resolve(ident(&code[k..]))
        {
            out.push((m, line_of(start)));
        }
    }
    out
}

/// The names `lib.rs` re-exports (`pub use db::Db;`) mapped to their module.
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let code = strip_comments_and_strings(lib);
    for stmt in code.split(';') {
        let s = stmt.trim();
        let Some(path) = s.strip_prefix("pub use ") else {
            continue;
        };
        let module = ident(path).to_string();
        if module == "mezz_format" || module == "crate" {
            continue;
        }
        for name in path[module.len()..]
            .split(|c: char| !is_ident(c))
            .filter(|w| !w.is_empty())
        {
            m.insert(name.to_string(), module.clone());
        }
    }
    m
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let p = entry.expect("entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every import between two different top-level modules of the sources in `files`
/// (path relative to `src/`, text).
fn edges(files: &[(String, String)]) -> Vec<Edge> {
    let lib = files
        .iter()
        .find(|(r, _)| r == "lib.rs")
        .map_or("", |(_, t)| t.as_str());
    let roots = root_names(lib);
    let mut test_only: BTreeSet<String> = BTreeSet::new();
    let mut cleaned = Vec::new();
    for (rel, text) in files {
        let (code, test_mods) = strip_test_items(&strip_comments_and_strings(text));
        let dir = match rel.rsplit_once('/') {
            Some((d, "mod.rs")) => format!("{d}/"),
            Some((d, f)) => format!("{d}/{}/", f.trim_end_matches(".rs")),
            None if rel == "lib.rs" => String::new(),
            None => format!("{}/", rel.trim_end_matches(".rs")),
        };
        for m in test_mods {
            test_only.insert(format!("{dir}{m}.rs"));
            test_only.insert(format!("{dir}{m}/mod.rs"));
        }
        cleaned.push((rel.clone(), code));
    }
    let mut out = Vec::new();
    for (rel, code) in cleaned {
        if test_only.contains(&rel) {
            continue;
        }
        let top = ident(&rel).to_string();
        for (to, line) in references(&rel, &code, &roots) {
            if to != top {
                out.push(Edge {
                    from: top.clone(),
                    to,
                    file: rel.clone(),
                    line,
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The edges that break the layering, described.
fn violations(edges: &[Edge]) -> Vec<String> {
    let layers = layer_of();
    let mut bad = Vec::new();
    for e in edges {
        match (layers.get(e.from.as_str()), layers.get(e.to.as_str())) {
            (Some(&f), Some(&t)) if t < f => {}
            (Some(&f), Some(&t)) => bad.push(format!(
                "{}:{}: `{}` (layer {f}) imports `{}` (layer {t}){}",
                e.file,
                e.line,
                e.from,
                e.to,
                if t == f {
                    ", a module of its own layer"
                } else {
                    ", a layer above it"
                }
            )),
            (None, _) => bad.push(format!(
                "{}:{}: module `{}` is in no layer: add it to LAYERS",
                e.file, e.line, e.from
            )),
            (_, None) => bad.push(format!(
                "{}:{}: `{}` names `{}`, which is in no layer (a module missing from LAYERS, \
                 or a name the checker misread)",
                e.file, e.line, e.from, e.to
            )),
        }
    }
    bad
}

fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rs_files(&src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&p).expect("read source");
            (rel, text)
        })
        .collect()
}

#[test]
fn every_import_goes_down_a_layer() {
    let files = sources();
    let layers = layer_of();
    for (rel, _) in &files {
        let top = ident(rel);
        assert!(
            layers.contains_key(top),
            "module `{top}` ({rel}) is in no layer: add it to LAYERS in tests/layers.rs"
        );
    }
    let edges = edges(&files);
    let mut seen = BTreeSet::new();
    for e in &edges {
        if seen.insert((e.from.clone(), e.to.clone())) {
            println!("{} -> {}", e.from, e.to);
        }
    }
    let bad = violations(&edges);
    assert!(
        bad.is_empty(),
        "{} import(s) break the layering (see LAYERS in tests/layers.rs):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_checker_sees_back_edges_in_every_form() {
    let lib = "pub mod db;\npub mod storage;\npub use db::Db;\npub use options::{Options, Preset};";
    let cases: &[(&str, &str)] = &[
        ("storage/mod.rs", "use crate::db::DbInner;"),
        ("storage/mod.rs", "use crate::{error::Error, db};"),
        ("storage/nvm.rs", "fn f() { let _ = crate::db::open(); }"),
        ("storage/nvm.rs", "use super::super::db::Db;"),
        ("storage/mod.rs", "use super::db::Db;"),
        ("storage/mod.rs", "fn f(_: &crate::Db) {}"),
        (
            "storage.rs",
            "use crate::{\n    error::Error,\n    db::x,\n};",
        ),
    ];
    for (rel, text) in cases {
        let files = vec![
            ("lib.rs".to_string(), lib.to_string()),
            ((*rel).to_string(), (*text).to_string()),
        ];
        let bad = violations(&edges(&files));
        assert!(
            bad.iter()
                .any(|b| b.contains("`storage`") && b.contains("`db`")),
            "missed the back edge in {rel}: {text:?} -> {bad:?}"
        );
    }
    // Downward imports, comments, strings and test code are not violations.
    let fine: &[(&str, &str)] = &[
        ("db/mod.rs", "use crate::storage::Storage;"),
        (
            "storage/mod.rs",
            "// see crate::db::Db\nconst X: &str = \"crate::db\";",
        ),
        ("storage/mod.rs", "/// [`crate::db::Db`]\nfn f() {}"),
        (
            "storage/mod.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::db::Db;\n    fn g() { let _ = '{'; }\n}",
        ),
        ("storage/nvm.rs", "use super::Storage;"),
    ];
    for (rel, text) in fine {
        let files = vec![
            ("lib.rs".to_string(), lib.to_string()),
            ((*rel).to_string(), (*text).to_string()),
        ];
        let bad = violations(&edges(&files));
        assert!(bad.is_empty(), "{rel}: {text:?} reported {bad:?}");
    }
}
