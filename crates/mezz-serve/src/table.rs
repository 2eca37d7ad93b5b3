//! The command table: each command's name, arity, flags and key positions (Redis's
//! conventions: a positive arity is exact, a negative one a minimum, both counting the
//! command name; keys at `first..=last` by `step`, `last = -1` meaning the last
//! argument). Used for arity errors, for finding the keys of a command (cluster routing)
//! and for the COMMAND reply that cluster clients read to route by themselves.
//!
//! Invariants: names are lowercase and unique. Thread-safety: a static table.

/// One command.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Lowercase name.
    pub name: &'static str,
    /// Arity as Redis reports it.
    pub arity: i64,
    /// Flags as Redis reports them.
    pub flags: &'static [&'static str],
    /// First key argument (0: none).
    pub first: i64,
    /// Last key argument (-1: the last argument).
    pub last: i64,
    /// Step between keys.
    pub step: i64,
}

const fn spec(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    first: i64,
    last: i64,
    step: i64,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        first,
        last,
        step,
    }
}

const R: &[&str] = &["readonly", "fast"];
const RS: &[&str] = &["readonly"];
const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const WD: &[&str] = &["write", "fast"];
const F: &[&str] = &["fast"];
const NA: &[&str] = &["noauth", "fast", "no-auth"];
const A: &[&str] = &["admin"];
const L: &[&str] = &["loading", "stale"];

/// Every command the server knows.
pub const COMMANDS: &[Spec] = &[
    spec("ping", -1, F, 0, 0, 0),
    spec("echo", 2, F, 0, 0, 0),
    spec("hello", -1, NA, 0, 0, 0),
    spec("auth", -2, NA, 0, 0, 0),
    spec("quit", -1, NA, 0, 0, 0),
    spec("select", 2, F, 0, 0, 0),
    spec("client", -2, L, 0, 0, 0),
    spec("info", -1, L, 0, 0, 0),
    spec("config", -2, A, 0, 0, 0),
    spec("command", -1, L, 0, 0, 0),
    spec("cluster", -2, L, 0, 0, 0),
    spec("dbsize", 1, RS, 0, 0, 0),
    spec("shutdown", -1, A, 0, 0, 0),
    spec("flushdb", -1, &["write"], 0, 0, 0),
    spec("flushall", -1, &["write"], 0, 0, 0),
    spec("get", 2, R, 1, 1, 1),
    spec("set", -3, W, 1, 1, 1),
    spec("mget", -2, R, 1, -1, 1),
    spec("mset", -3, W, 1, -1, 2),
    spec("del", -2, &["write"], 1, -1, 1),
    spec("unlink", -2, WD, 1, -1, 1),
    spec("exists", -2, R, 1, -1, 1),
    spec("type", 2, R, 1, 1, 1),
    spec("incr", 2, WF, 1, 1, 1),
    spec("decr", 2, WF, 1, 1, 1),
    spec("incrby", 3, WF, 1, 1, 1),
    spec("decrby", 3, WF, 1, 1, 1),
    spec("append", 3, W, 1, 1, 1),
    spec("strlen", 2, R, 1, 1, 1),
    spec("getrange", 4, RS, 1, 1, 1),
    spec("setrange", 4, W, 1, 1, 1),
    spec("scan", -2, RS, 0, 0, 0),
    spec("keys", 2, RS, 0, 0, 0),
    spec("hset", -4, WF, 1, 1, 1),
    spec("hmset", -4, WF, 1, 1, 1),
    spec("hget", 3, R, 1, 1, 1),
    spec("hmget", -3, R, 1, 1, 1),
    spec("hdel", -3, WD, 1, 1, 1),
    spec("hgetall", 2, RS, 1, 1, 1),
    spec("hlen", 2, R, 1, 1, 1),
    spec("hexists", 3, R, 1, 1, 1),
    spec("hscan", -3, RS, 1, 1, 1),
];

/// The spec of `name` (any case).
#[must_use]
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
}

impl Spec {
    /// Whether `argc` arguments (name included) fit the arity.
    #[must_use]
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// The key arguments of a call.
    #[must_use]
    pub fn keys<'a>(&self, args: &'a [Vec<u8>]) -> Vec<&'a [u8]> {
        if self.first <= 0 || self.step <= 0 {
            return Vec::new();
        }
        let n = i64::try_from(args.len()).unwrap_or(i64::MAX);
        let last = if self.last < 0 {
            n + self.last
        } else {
            self.last.min(n - 1)
        };
        let mut out = Vec::new();
        let mut i = self.first;
        while i <= last {
            if let Some(k) = usize::try_from(i).ok().and_then(|i| args.get(i)) {
                out.push(k.as_slice());
            }
            i += self.step;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut names: Vec<_> = COMMANDS.iter().map(|s| s.name).collect();
        assert!(names.iter().all(|n| n.to_lowercase() == *n));
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before);
    }

    #[test]
    fn keys_and_arity() {
        let args = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let mset = lookup(b"MSET").expect("mset");
        assert_eq!(
            mset.keys(&args(&["mset", "a", "1", "b", "2"])),
            vec![&b"a"[..], b"b"]
        );
        assert!(!mset.arity_ok(2));
        let get = lookup(b"get").expect("get");
        assert!(get.arity_ok(2) && !get.arity_ok(3));
        assert_eq!(
            lookup(b"ping")
                .expect("ping")
                .keys(&args(&["ping", "x"]))
                .len(),
            0
        );
    }
}
