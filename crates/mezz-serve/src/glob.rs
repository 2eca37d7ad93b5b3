//! Redis's glob patterns (`KEYS`, `SCAN MATCH`, `CONFIG GET`): `*`, `?`, `[abc]`, `[^a]`,
//! `[a-z]` and `\x` escapes, matched byte by byte as Redis's `stringmatchlen`.
//!
//! Invariants: matching never panics and its cost is bounded by a nesting limit on `*`
//! (a pattern of many stars cannot make it exponential: after `MAX_STARS` nested stars the
//! match fails, as Redis bounds its recursion). Thread-safety: pure functions.

const MAX_STARS: usize = 1000;

/// Whether `s` matches `pattern`.
#[must_use]
pub fn matches(pattern: &[u8], s: &[u8]) -> bool {
    let mut budget = MAX_STARS;
    match_at(pattern, s, &mut budget)
}

/// The literal bytes every match starts with (the pattern up to its first special
/// character), so a scan can seek to them.
#[must_use]
pub fn literal_prefix(pattern: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = pattern.get(i) {
        match c {
            b'*' | b'?' | b'[' => break,
            b'\\' => match pattern.get(i + 1) {
                Some(&n) => {
                    out.push(n);
                    i += 2;
                }
                None => break,
            },
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn match_at(mut p: &[u8], mut s: &[u8], budget: &mut usize) -> bool {
    while let Some((&pc, prest)) = p.split_first() {
        match pc {
            b'*' => {
                let mut rest = prest;
                while let Some((b'*', r)) = rest.split_first() {
                    rest = r;
                }
                if rest.is_empty() {
                    return true;
                }
                if *budget == 0 {
                    return false;
                }
                *budget -= 1;
                for start in 0..=s.len() {
                    if match_at(rest, s.get(start..).unwrap_or_default(), budget) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                let Some((_, srest)) = s.split_first() else {
                    return false;
                };
                s = srest;
                p = prest;
            }
            b'[' => {
                let Some((&c, srest)) = s.split_first() else {
                    return false;
                };
                let mut q = prest;
                let negate = q.first() == Some(&b'^');
                if negate {
                    q = q.get(1..).unwrap_or_default();
                }
                let mut matched = false;
                loop {
                    match q.split_first() {
                        None => break,
                        Some((b'\\', r)) if !r.is_empty() => {
                            if r.first() == Some(&c) {
                                matched = true;
                            }
                            q = r.get(1..).unwrap_or_default();
                        }
                        Some((b']', r)) => {
                            q = r;
                            break;
                        }
                        Some((&lo, r)) if r.len() >= 2 && r.first() == Some(&b'-') => {
                            let hi = r.get(1).copied().unwrap_or(lo);
                            let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                            if (a..=b).contains(&c) {
                                matched = true;
                            }
                            q = r.get(2..).unwrap_or_default();
                        }
                        Some((&x, r)) => {
                            if x == c {
                                matched = true;
                            }
                            q = r;
                        }
                    }
                }
                if matched == negate {
                    return false;
                }
                s = srest;
                p = q;
            }
            b'\\' if !prest.is_empty() => {
                let Some((&c, srest)) = s.split_first() else {
                    return false;
                };
                if prest.first() != Some(&c) {
                    return false;
                }
                s = srest;
                p = prest.get(1..).unwrap_or_default();
            }
            lit => {
                let Some((&c, srest)) = s.split_first() else {
                    return false;
                };
                if c != lit {
                    return false;
                }
                s = srest;
                p = prest;
            }
        }
    }
    s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_redis() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "abc", true),
            ("a*", "abc", true),
            ("a*", "bac", false),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hallo", true),
            ("h[a-b]llo", "hcllo", false),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("user:*:name", "user:42:name", true),
            ("user:*:name", "user:42:age", false),
            ("*a*b*c", "xxaxxbxxc", true),
        ];
        for (p, s, want) in cases {
            assert_eq!(matches(p.as_bytes(), s.as_bytes()), *want, "{p} vs {s}");
        }
    }

    #[test]
    fn many_stars_stay_cheap() {
        let p = "*a".repeat(60) + "b";
        let s = "a".repeat(100);
        assert!(!matches(p.as_bytes(), s.as_bytes()));
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"a\\*b?"), b"a*b");
        assert_eq!(literal_prefix(b"*"), b"");
    }
}
