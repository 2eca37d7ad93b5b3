//! Command dispatch: authentication and cluster routing checks, then one function per
//! command writing its reply. Error texts are Redis's.
//!
//! Invariants: a command never panics on any arguments (arity is checked from the table
//! first, every further argument is read with bounds checks); every call writes exactly one
//! reply, except SHUTDOWN (none: the connection closes) and QUIT (`+OK`, then close).
//!
//! Thread-safety: runs on the server's event-loop thread; shared state is `Shared` (`Sync`).

use std::sync::atomic::Ordering;

use crate::cluster::{self, SlotMap};
use crate::glob;
use crate::resp::{Limits, Out, Proto, parse_i64};
use crate::server::Shared;
use crate::store::{ScanFilter, ScanPage, StoreError};
use crate::table::{self, COMMANDS, Spec};

/// One connection's state: identity, authentication, name, protocol.
#[derive(Debug)]
pub struct ConnState {
    /// Client id (CLIENT ID, HELLO).
    pub id: u64,
    /// Whether AUTH succeeded (or no password is set).
    pub authed: bool,
    /// CLIENT SETNAME.
    pub name: Option<Vec<u8>>,
    /// The reply protocol.
    pub proto: Proto,
}

impl ConnState {
    /// The limits of the next request: tighter before authentication.
    #[must_use]
    pub fn limits(&self, shared: &Shared) -> Limits {
        if self.authed {
            shared.cfg.limits
        } else {
            Limits::UNAUTHENTICATED
        }
    }
}

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Go on reading.
    Continue,
    /// Send what is buffered, then close.
    Close,
    /// Close and shut the server down.
    Shutdown,
}

fn lower(b: &[u8]) -> Vec<u8> {
    b.to_ascii_lowercase()
}

fn arg(args: &[Vec<u8>], i: usize) -> &[u8] {
    args.get(i).map_or(&[][..], Vec::as_slice)
}

/// Redis's text for an unknown command: the name and the first arguments, quoted.
#[must_use]
pub fn unknown_command(args: &[Vec<u8>]) -> String {
    let show = |b: &[u8], max: usize| {
        let s = String::from_utf8_lossy(b);
        s.chars().take(max).collect::<String>()
    };
    let mut tail = String::new();
    for a in args.iter().skip(1) {
        if tail.len() >= 128 {
            break;
        }
        let room = 128 - tail.len();
        tail.push_str(&format!("'{}' ", show(a, room)));
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {tail}",
        show(arg(args, 0), 128)
    )
}

fn wrong_arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";

fn int_arg(args: &[Vec<u8>], i: usize) -> Result<i64, &'static str> {
    parse_i64(arg(args, i)).ok_or(NOT_INT)
}

/// Whether `args` is a plain `SET key value` (no options): a blind write that may be
/// applied together with its neighbours.
pub(crate) fn is_plain_set(args: &[Vec<u8>]) -> bool {
    args.len() == 3 && arg(args, 0).eq_ignore_ascii_case(b"set")
}

/// Runs the requests of one read, in order. A run of consecutive plain `SET key value`
/// requests (as a pipelining client sends) is applied as one engine write batch: the same
/// replies and the same final state as one by one (no reply is sent before the batch is
/// written, and no request of this connection comes between), in one WAL write.
pub fn execute_all(
    shared: &Shared,
    conn: &mut ConnState,
    reqs: &[crate::resp::Request],
    out: &mut Out,
) -> Action {
    let batchable = conn.authed && shared.cfg.cluster.is_none();
    let mut i = 0;
    while let Some(args) = reqs.get(i) {
        if batchable && is_plain_set(args) {
            let run = reqs
                .get(i..)
                .unwrap_or_default()
                .iter()
                .take_while(|a| is_plain_set(a))
                .count();
            if run > 1 {
                let pairs: Vec<(&[u8], &[u8])> = reqs
                    .get(i..i + run)
                    .unwrap_or_default()
                    .iter()
                    .map(|a| (arg(a, 1), arg(a, 2)))
                    .collect();
                shared
                    .stats
                    .commands
                    .fetch_add(u64::try_from(run).unwrap_or(0), Ordering::Relaxed);
                match shared.store.mset(&pairs) {
                    Ok(()) => (0..run).for_each(|_| out.ok()),
                    Err(e) => {
                        let msg = e.to_string();
                        (0..run).for_each(|_| out.error(&msg));
                    }
                }
                i += run;
                continue;
            }
        }
        let action = execute(shared, conn, args, out);
        if action != Action::Continue {
            return action;
        }
        i += 1;
    }
    Action::Continue
}

/// Runs one request.
pub fn execute(shared: &Shared, conn: &mut ConnState, args: &[Vec<u8>], out: &mut Out) -> Action {
    shared.stats.commands.fetch_add(1, Ordering::Relaxed);
    let name = arg(args, 0);
    let Some(spec) = table::lookup(name) else {
        if !conn.authed {
            out.error("NOAUTH Authentication required.");
        } else {
            out.error(&unknown_command(args));
        }
        return Action::Continue;
    };
    if !conn.authed && !matches!(spec.name, "auth" | "hello" | "quit") {
        out.error("NOAUTH Authentication required.");
        return Action::Continue;
    }
    if !spec.arity_ok(args.len()) {
        out.error(&wrong_arity(spec.name));
        return Action::Continue;
    }
    if let Some(err) = shared
        .cfg
        .cluster
        .as_ref()
        .and_then(|m| route(m, spec, args))
    {
        out.error(&err);
        return Action::Continue;
    }
    match run(shared, conn, spec, args, out) {
        Ok(a) => a,
        Err(e) => {
            out.error(&e);
            Action::Continue
        }
    }
}

/// Cluster routing: CROSSSLOT if the keys hash to several slots, MOVED if another node
/// serves the slot.
fn route(map: &SlotMap, spec: &Spec, args: &[Vec<u8>]) -> Option<String> {
    let keys = spec.keys(args);
    let mut slot = None;
    for k in keys {
        let s = cluster::key_slot(k);
        match slot {
            None => slot = Some(s),
            Some(prev) if prev != s => {
                return Some("CROSSSLOT Keys in request don't hash to the same slot".into());
            }
            Some(_) => {}
        }
    }
    let slot = slot?;
    if map.is_local(slot) {
        return None;
    }
    Some(match map.owner(slot) {
        Some(n) => format!("MOVED {slot} {}:{}", n.host, n.port),
        None => "CLUSTERDOWN Hash slot not served".into(),
    })
}

type CmdResult = Result<Action, String>;

fn store_err(e: StoreError) -> String {
    e.to_string()
}

fn run(
    shared: &Shared,
    conn: &mut ConnState,
    spec: &Spec,
    args: &[Vec<u8>],
    out: &mut Out,
) -> CmdResult {
    let st = &shared.store;
    let key = arg(args, 1);
    match spec.name {
        "ping" => match args.len() {
            1 => out.simple("PONG"),
            2 => out.bulk(key),
            _ => return Err(wrong_arity("ping")),
        },
        "echo" => out.bulk(key),
        "quit" => {
            out.ok();
            return Ok(Action::Close);
        }
        "auth" => auth(shared, conn, args, out)?,
        "hello" => hello(shared, conn, args, out)?,
        "select" => {
            if int_arg(args, 1)? != 0 {
                return Err("ERR DB index is out of range".into());
            }
            out.ok();
        }
        "client" => client(shared, conn, args, out)?,
        "info" => {
            let text = crate::info::render(shared, &args[1..]);
            out.verbatim(&text);
        }
        "config" => config(shared, args, out)?,
        "command" => command(args, out)?,
        "cluster" => cluster_cmd(shared, args, out)?,
        "dbsize" => out.int(i64::try_from(st.dbsize().map_err(store_err)?).unwrap_or(i64::MAX)),
        "shutdown" => {
            for a in &args[1..] {
                match lower(a).as_slice() {
                    b"nosave" | b"save" | b"now" | b"force" => {}
                    b"abort" => return Err("ERR No shutdown in progress.".into()),
                    _ => return Err(SYNTAX.into()),
                }
            }
            return Ok(Action::Shutdown);
        }
        "flushdb" | "flushall" => {
            for a in &args[1..] {
                if !matches!(lower(a).as_slice(), b"sync" | b"async") {
                    return Err(SYNTAX.into());
                }
            }
            st.flushdb().map_err(store_err)?;
            out.ok();
        }
        "get" => out.opt_bulk(st.get(key).map_err(store_err)?.as_deref()),
        "set" => set(shared, args, out)?,
        "mget" => {
            let vals = st.mget(&args[1..]).map_err(store_err)?;
            out.array(vals.len());
            for v in vals {
                out.opt_bulk(v.as_deref());
            }
        }
        "mset" => {
            if args.len().is_multiple_of(2) {
                return Err(wrong_arity("mset"));
            }
            let pairs: Vec<(&[u8], &[u8])> = args[1..]
                .chunks_exact(2)
                .map(|c| (c[0].as_slice(), c[1].as_slice()))
                .collect();
            st.mset(&pairs).map_err(store_err)?;
            out.ok();
        }
        "del" | "unlink" => out.int(st.del(&args[1..]).map_err(store_err)?),
        "exists" => out.int(st.exists(&args[1..]).map_err(store_err)?),
        "type" => out.simple(match st.meta(key).map_err(store_err)? {
            None => "none",
            Some(crate::store::Meta::Str(_)) => "string",
            Some(crate::store::Meta::Hash { .. }) => "hash",
        }),
        "incr" => out.int(st.incr_by(key, 1).map_err(store_err)?),
        "decr" => out.int(st.incr_by(key, -1).map_err(store_err)?),
        "incrby" => out.int(st.incr_by(key, int_arg(args, 2)?).map_err(store_err)?),
        "decrby" => {
            let d = int_arg(args, 2)?;
            let d = d.checked_neg().ok_or("ERR decrement would overflow")?;
            out.int(st.incr_by(key, d).map_err(store_err)?);
        }
        "append" => {
            let n = st.append(key, arg(args, 2)).map_err(store_err)?;
            out.int(i64::try_from(n).unwrap_or(i64::MAX));
        }
        "strlen" => {
            let n = st.get(key).map_err(store_err)?.map_or(0, |v| v.len());
            out.int(i64::try_from(n).unwrap_or(i64::MAX));
        }
        "getrange" => {
            let (start, end) = (int_arg(args, 2)?, int_arg(args, 3)?);
            let v = st.get(key).map_err(store_err)?.unwrap_or_default();
            out.bulk(getrange(&v, start, end));
        }
        "setrange" => {
            let off = int_arg(args, 2)?;
            let off = usize::try_from(off).map_err(|_| "ERR offset is out of range")?;
            let n = st.setrange(key, off, arg(args, 3)).map_err(store_err)?;
            out.int(i64::try_from(n).unwrap_or(i64::MAX));
        }
        "scan" => scan(shared, args, out)?,
        "keys" => {
            let keys = st.keys(key).map_err(store_err)?;
            out.array(keys.len());
            for k in keys {
                out.bulk(&k);
            }
        }
        "hset" | "hmset" => {
            if !args.len().is_multiple_of(2) {
                return Err(wrong_arity(spec.name));
            }
            let pairs: Vec<(&[u8], &[u8])> = args[2..]
                .chunks_exact(2)
                .map(|c| (c[0].as_slice(), c[1].as_slice()))
                .collect();
            let added = st.hset(key, &pairs).map_err(store_err)?;
            if spec.name == "hset" {
                out.int(added);
            } else {
                out.ok();
            }
        }
        "hget" => out.opt_bulk(st.hget(key, arg(args, 2)).map_err(store_err)?.as_deref()),
        "hmget" => {
            let vals = st.hmget(key, &args[2..]).map_err(store_err)?;
            out.array(vals.len());
            for v in vals {
                out.opt_bulk(v.as_deref());
            }
        }
        "hdel" => out.int(st.hdel(key, &args[2..]).map_err(store_err)?),
        "hgetall" => {
            let pairs = st.hgetall(key).map_err(store_err)?;
            out.map(pairs.len());
            for (f, v) in pairs {
                out.bulk(&f);
                out.bulk(&v);
            }
        }
        "hlen" => out.int(st.hlen(key).map_err(store_err)?),
        "hexists" => {
            let v = st.hget(key, arg(args, 2)).map_err(store_err)?;
            out.int(i64::from(v.is_some()));
        }
        "hscan" => hscan(shared, args, out)?,
        other => return Err(format!("ERR command '{other}' is not implemented")),
    }
    Ok(Action::Continue)
}

/// GETRANGE's index arithmetic (negative indexes count from the end), as Redis.
fn getrange(v: &[u8], start: i64, end: i64) -> &[u8] {
    let len = i64::try_from(v.len()).unwrap_or(i64::MAX);
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return &[];
    }
    let mut s = if start < 0 { len + start } else { start };
    let mut e = if end < 0 { len + end } else { end };
    s = s.max(0);
    e = e.max(0);
    e = e.min(len - 1);
    if s > e {
        return &[];
    }
    let s = usize::try_from(s).unwrap_or(0);
    let e = usize::try_from(e).unwrap_or(0);
    v.get(s..=e).unwrap_or_default()
}

fn set(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Result<(), String> {
    let (key, value) = (arg(args, 1), arg(args, 2));
    let (mut nx, mut xx, mut get) = (false, false, false);
    let mut i = 3;
    while i < args.len() {
        match lower(arg(args, i)).as_slice() {
            b"nx" if !xx => nx = true,
            b"xx" if !nx => xx = true,
            b"get" => get = true,
            b"keepttl" => {}
            b"ex" | b"px" | b"exat" | b"pxat" => {
                return Err(
                    "ERR expiry (EX, PX, EXAT, PXAT) is not supported: mezz serve \
                            keeps no expiry times"
                        .into(),
                );
            }
            _ => return Err(SYNTAX.into()),
        }
        i += 1;
    }
    let st = &shared.store;
    if !nx && !xx && !get {
        st.set(key, value).map_err(store_err)?;
        out.ok();
        return Ok(());
    }
    let (done, old) = st.set_with(key, value, nx, xx, get).map_err(store_err)?;
    if get {
        out.opt_bulk(old.as_deref());
    } else if done {
        out.ok();
    } else {
        out.null();
    }
    Ok(())
}

fn auth(
    shared: &Shared,
    conn: &mut ConnState,
    args: &[Vec<u8>],
    out: &mut Out,
) -> Result<(), String> {
    let (user, pass) = match args.len() {
        2 => (&b"default"[..], arg(args, 1)),
        3 => (arg(args, 1), arg(args, 2)),
        _ => return Err(SYNTAX.into()),
    };
    if args.len() == 2 && shared.cfg.requirepass.is_none() {
        return Err(
            "ERR AUTH <password> called without any password configured for the \
                    default user. Are you sure your configuration is correct?"
                .into(),
        );
    }
    check_password(shared, conn, user, pass)?;
    out.ok();
    Ok(())
}

fn check_password(
    shared: &Shared,
    conn: &mut ConnState,
    user: &[u8],
    pass: &[u8],
) -> Result<(), String> {
    let Some(pw) = &shared.cfg.requirepass else {
        // Without a password the default user takes any password, as Redis's `nopass`.
        if user == b"default" {
            conn.authed = true;
            return Ok(());
        }
        return Err("WRONGPASS invalid username-password pair or user is disabled.".into());
    };
    if user == b"default" && constant_time_eq(pw.as_bytes(), pass) {
        conn.authed = true;
        Ok(())
    } else {
        Err("WRONGPASS invalid username-password pair or user is disabled.".into())
    }
}

/// Compares without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hello(
    shared: &Shared,
    conn: &mut ConnState,
    args: &[Vec<u8>],
    out: &mut Out,
) -> Result<(), String> {
    let mut proto = conn.proto;
    let mut i = 1;
    if args.len() > 1 {
        proto = match parse_i64(arg(args, 1)) {
            Some(2) => Proto::Resp2,
            Some(3) => Proto::Resp3,
            Some(_) => return Err("NOPROTO unsupported protocol version".into()),
            None => return Err("ERR Protocol version is not an integer or out of range".into()),
        };
        i = 2;
    }
    let mut name = None;
    let mut authed_now = false;
    while i < args.len() {
        match lower(arg(args, i)).as_slice() {
            b"auth" if i + 2 < args.len() => {
                check_password(shared, conn, arg(args, i + 1), arg(args, i + 2))?;
                authed_now = true;
                i += 3;
            }
            b"setname" if i + 1 < args.len() => {
                name = Some(valid_name(arg(args, i + 1))?);
                i += 2;
            }
            _ => {
                return Err(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(arg(args, i))
                ));
            }
        }
    }
    if !conn.authed && !authed_now {
        return Err(
            "NOAUTH HELLO must be called with the client already authenticated, \
                    otherwise the HELLO <proto> AUTH <user> <pass> option can be used to \
                    authenticate the client and select the RESP protocol version at the same \
                    time"
                .into(),
        );
    }
    if let Some(n) = name {
        conn.name = Some(n);
    }
    conn.proto = proto;
    out.proto = proto;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(crate::REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if proto == Proto::Resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(i64::try_from(conn.id).unwrap_or(i64::MAX));
    out.bulk(b"mode");
    out.bulk(if shared.cfg.cluster.is_some() {
        b"cluster"
    } else {
        b"standalone"
    });
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(())
}

fn valid_name(n: &[u8]) -> Result<Vec<u8>, String> {
    if n.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(
            "ERR Client names cannot contain spaces, newlines or special characters.".into(),
        );
    }
    Ok(n.to_vec())
}

fn client(
    shared: &Shared,
    conn: &mut ConnState,
    args: &[Vec<u8>],
    out: &mut Out,
) -> Result<(), String> {
    let sub = lower(arg(args, 1));
    let bad_arity = || {
        format!(
            "ERR wrong number of arguments for 'client|{}' command",
            String::from_utf8_lossy(&sub)
        )
    };
    match sub.as_slice() {
        b"setname" => {
            if args.len() != 3 {
                return Err(bad_arity());
            }
            let n = valid_name(arg(args, 2))?;
            conn.name = (!n.is_empty()).then_some(n);
            out.ok();
        }
        b"getname" => out.opt_bulk(conn.name.as_deref()),
        b"id" => out.int(i64::try_from(conn.id).unwrap_or(i64::MAX)),
        b"setinfo" => {
            if args.len() != 4 {
                return Err(bad_arity());
            }
            out.ok();
        }
        b"info" | b"list" => {
            let line = format!(
                "id={} name={} db=0 resp={}\n",
                conn.id,
                String::from_utf8_lossy(conn.name.as_deref().unwrap_or_default()),
                if conn.proto == Proto::Resp3 { 3 } else { 2 }
            );
            out.verbatim(&line);
        }
        _ => {
            let _ = shared;
            return Err(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(arg(args, 1))
            ));
        }
    }
    Ok(())
}

fn config(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Result<(), String> {
    match lower(arg(args, 1)).as_slice() {
        b"get" => {
            if args.len() < 3 {
                return Err("ERR wrong number of arguments for 'config|get' command".into());
            }
            let all = crate::info::config_values(shared);
            let found: Vec<&(String, String)> = all
                .iter()
                .filter(|(k, _)| {
                    args[2..]
                        .iter()
                        .any(|p| glob::matches(&lower(p), k.as_bytes()))
                })
                .collect();
            out.map(found.len());
            for (k, v) in found {
                out.bulk(k.as_bytes());
                out.bulk(v.as_bytes());
            }
            Ok(())
        }
        b"set" | b"rewrite" | b"resetstat" => Err(
            "ERR CONFIG SET, REWRITE and RESETSTAT are not supported: the configuration \
                 is fixed at start"
                .into(),
        ),
        _ => Err(format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(arg(args, 1))
        )),
    }
}

fn command_entry(s: &Spec, out: &mut Out) {
    out.array(7);
    out.bulk(s.name.as_bytes());
    out.int(s.arity);
    out.array(s.flags.len());
    for f in s.flags {
        out.simple(f);
    }
    out.int(s.first);
    out.int(s.last);
    out.int(s.step);
    out.array(0);
}

fn command(args: &[Vec<u8>], out: &mut Out) -> Result<(), String> {
    if args.len() == 1 {
        out.array(COMMANDS.len());
        for s in COMMANDS {
            command_entry(s, out);
        }
        return Ok(());
    }
    match lower(arg(args, 1)).as_slice() {
        b"count" => out.int(i64::try_from(COMMANDS.len()).unwrap_or(0)),
        b"info" => {
            out.array(args.len() - 2);
            for n in &args[2..] {
                match table::lookup(n) {
                    Some(s) => command_entry(s, out),
                    None => out.null(),
                }
            }
        }
        b"docs" => {
            // No documentation is served: an empty map (redis-cli then skips its hints).
            out.map(0);
        }
        b"getkeys" => {
            let spec = table::lookup(arg(args, 2)).ok_or("ERR Invalid command specified")?;
            if !spec.arity_ok(args.len() - 2) {
                return Err("ERR Invalid number of arguments specified for command".into());
            }
            let keys = spec.keys(&args[2..]);
            if keys.is_empty() {
                return Err("ERR The command has no key arguments".into());
            }
            out.array(keys.len());
            for k in keys {
                out.bulk(k);
            }
        }
        _ => {
            return Err(format!(
                "ERR unknown subcommand '{}'. Try COMMAND HELP.",
                String::from_utf8_lossy(arg(args, 1))
            ));
        }
    }
    Ok(())
}

fn cluster_cmd(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Result<(), String> {
    let sub = lower(arg(args, 1));
    if sub == b"keyslot" {
        if args.len() != 3 {
            return Err("ERR wrong number of arguments for 'cluster|keyslot' command".into());
        }
        out.int(i64::from(cluster::key_slot(arg(args, 2))));
        return Ok(());
    }
    let Some(map) = &shared.cfg.cluster else {
        return Err("ERR This instance has cluster support disabled".into());
    };
    match sub.as_slice() {
        b"slots" => {
            let ranges: Vec<(&cluster::Node, (u16, u16))> = map
                .nodes
                .iter()
                .flat_map(|n| n.ranges.iter().map(move |r| (n, *r)))
                .collect();
            out.array(ranges.len());
            for (n, (a, b)) in ranges {
                out.array(3);
                out.int(i64::from(a));
                out.int(i64::from(b));
                out.array(3);
                out.bulk(n.host.as_bytes());
                out.int(i64::from(n.port));
                out.bulk(n.id.as_bytes());
            }
        }
        b"shards" => {
            out.array(map.nodes.len());
            for n in &map.nodes {
                out.map(2);
                out.bulk(b"slots");
                out.array(n.ranges.len() * 2);
                for (a, b) in &n.ranges {
                    out.int(i64::from(*a));
                    out.int(i64::from(*b));
                }
                out.bulk(b"nodes");
                out.array(1);
                out.map(7);
                for (k, v) in [
                    ("id", n.id.as_str()),
                    ("ip", n.host.as_str()),
                    ("endpoint", n.host.as_str()),
                    ("role", "master"),
                    ("health", "online"),
                ] {
                    out.bulk(k.as_bytes());
                    out.bulk(v.as_bytes());
                }
                out.bulk(b"port");
                out.int(i64::from(n.port));
                out.bulk(b"replication-offset");
                out.int(0);
            }
        }
        b"myid" => {
            let me = map.nodes.first().ok_or("ERR no node")?;
            out.bulk(me.id.as_bytes());
        }
        b"info" => {
            let assigned = map.slots_assigned();
            let text = format!(
                "cluster_enabled:1\r\ncluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\n\
                 cluster_slots_ok:{assigned}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n\
                 cluster_known_nodes:{}\r\ncluster_size:{}\r\n",
                if assigned == usize::from(cluster::SLOTS) {
                    "ok"
                } else {
                    "fail"
                },
                map.nodes.len(),
                map.nodes.len()
            );
            out.verbatim(&text);
        }
        _ => {
            return Err(format!(
                "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
                String::from_utf8_lossy(arg(args, 1))
            ));
        }
    }
    Ok(())
}

/// Parses `[MATCH p] [COUNT n] [TYPE t]` from `args[from..]`.
fn scan_options(
    args: &[Vec<u8>],
    from: usize,
    allow_type: bool,
) -> Result<(ScanFilter, usize), String> {
    let mut f = ScanFilter::default();
    let mut count = 10usize;
    let mut i = from;
    while i < args.len() {
        let opt = lower(arg(args, i));
        if i + 1 >= args.len() {
            return Err(SYNTAX.into());
        }
        let v = arg(args, i + 1);
        match opt.as_slice() {
            b"match" => f.pattern = (v != b"*").then(|| v.to_vec()),
            b"count" => {
                let n = parse_i64(v).ok_or(NOT_INT)?;
                if n < 1 {
                    return Err(SYNTAX.into());
                }
                count = usize::try_from(n).unwrap_or(usize::MAX).min(1_000_000);
            }
            b"type" if allow_type => f.type_name = Some(v.to_vec()),
            _ => return Err(SYNTAX.into()),
        }
        i += 2;
    }
    Ok((f, count))
}

fn parse_cursor(b: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(b)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| "ERR invalid cursor".into())
}

fn page_reply(page: ScanPage, out: &mut Out) {
    out.array(2);
    out.bulk(page.cursor.to_string().as_bytes());
    out.array(page.items.len());
    for k in page.items {
        out.bulk(&k);
    }
}

fn scan(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Result<(), String> {
    let cursor = parse_cursor(arg(args, 1))?;
    let (filter, count) = scan_options(args, 2, true)?;
    let page = shared
        .store
        .scan(cursor, &filter, count)
        .map_err(store_err)?;
    page_reply(page, out);
    Ok(())
}

fn hscan(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Result<(), String> {
    let cursor = parse_cursor(arg(args, 2))?;
    let (filter, count) = scan_options(args, 3, false)?;
    let page = shared
        .store
        .hscan(arg(args, 1), cursor, filter.pattern.as_deref(), count)
        .map_err(store_err)?;
    page_reply(page, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_text_is_redis() {
        let args: Vec<Vec<u8>> = vec![b"foo".to_vec(), b"a".to_vec(), b"b".to_vec()];
        assert_eq!(
            unknown_command(&args),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        assert_eq!(
            unknown_command(&[b"x".to_vec()]),
            "ERR unknown command 'x', with args beginning with: "
        );
    }

    #[test]
    fn getrange_indexes() {
        let v = b"This is a string";
        assert_eq!(getrange(v, 0, 3), b"This");
        assert_eq!(getrange(v, -3, -1), b"ing");
        assert_eq!(getrange(v, 0, -1), v);
        assert_eq!(getrange(v, 10, 100), b"string");
        assert_eq!(getrange(v, 5, 3), b"");
        assert_eq!(getrange(b"", 0, -1), b"");
        assert_eq!(getrange(v, i64::MIN, i64::MAX), v);
    }
}
