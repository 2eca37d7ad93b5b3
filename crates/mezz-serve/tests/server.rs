//! The server over TCP: commands and their Redis replies, pipelining, RESP3, AUTH, bad
//! input, limits, timeouts, concurrency, SHUTDOWN.

mod common;

use std::time::{Duration, Instant};

use common::{Client, Reply, TestServer, encode};
use mezz_serve::Config;
use mezz_serve::resp::Limits;

fn server(cfg: Config) -> (tempfile::TempDir, TestServer) {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = TestServer::start(dir.path(), cfg);
    (dir, s)
}

fn b(s: &str) -> Reply {
    Reply::bulk(s)
}

/// The engine's WAL sync count, from `INFO engine`.
fn wal_syncs(c: &mut Client) -> u64 {
    let Reply::Bulk(t) = c.cmd(&["INFO", "engine"]) else {
        panic!("INFO")
    };
    let t = String::from_utf8(t).expect("utf8");
    t.lines()
        .find_map(|l| l.strip_prefix("wal_syncs:"))
        .expect("wal_syncs line")
        .parse::<u64>()
        .expect("number")
}

#[test]
fn strings_hashes_and_errors_reply_as_redis() {
    let (_d, s) = server(Config::default());
    let mut c = s.client();
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    assert_eq!(c.cmd(&["ping", "hi"]), b("hi"));
    assert_eq!(c.cmd(&["ECHO", "x y"]), b("x y"));
    assert_eq!(c.cmd(&["SET", "k", "v"]), Reply::ok());
    assert_eq!(c.cmd(&["GET", "k"]), b("v"));
    assert_eq!(c.cmd(&["GET", "missing"]), Reply::Nil);
    assert_eq!(c.cmd(&["SET", "k", "w", "NX"]), Reply::Nil);
    assert_eq!(c.cmd(&["SET", "k", "w", "XX", "GET"]), b("v"));
    assert_eq!(c.cmd(&["SET", "new", "1", "XX"]), Reply::Nil);
    assert_eq!(
        c.cmd(&["SET", "k", "w", "NX", "XX"]).err(),
        "ERR syntax error"
    );
    assert!(
        c.cmd(&["SET", "k", "w", "EX", "10"])
            .err()
            .starts_with("ERR expiry")
    );
    assert_eq!(c.cmd(&["MSET", "a", "1", "b", "2"]), Reply::ok());
    assert_eq!(
        c.cmd(&["MGET", "a", "b", "nope"]),
        Reply::Array(vec![b("1"), b("2"), Reply::Nil])
    );
    assert_eq!(c.cmd(&["INCR", "a"]), Reply::Int(2));
    assert_eq!(c.cmd(&["INCRBY", "a", "10"]), Reply::Int(12));
    assert_eq!(c.cmd(&["DECR", "a"]), Reply::Int(11));
    assert_eq!(c.cmd(&["DECRBY", "a", "20"]), Reply::Int(-9));
    assert_eq!(
        c.cmd(&["INCR", "k"]).err(),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(c.cmd(&["APPEND", "k", "xyz"]), Reply::Int(4));
    assert_eq!(c.cmd(&["STRLEN", "k"]), Reply::Int(4));
    assert_eq!(c.cmd(&["GETRANGE", "k", "1", "-2"]), b("xy"));
    assert_eq!(c.cmd(&["SETRANGE", "k", "1", "AB"]), Reply::Int(4));
    assert_eq!(c.cmd(&["GET", "k"]), b("wABz"));
    assert_eq!(c.cmd(&["HSET", "h", "f1", "v1", "f2", "v2"]), Reply::Int(2));
    assert_eq!(c.cmd(&["HSET", "h", "f1", "x"]), Reply::Int(0));
    assert_eq!(c.cmd(&["HGET", "h", "f1"]), b("x"));
    assert_eq!(
        c.cmd(&["HMGET", "h", "f1", "zz", "f2"]),
        Reply::Array(vec![b("x"), Reply::Nil, b("v2")])
    );
    assert_eq!(c.cmd(&["HLEN", "h"]), Reply::Int(2));
    assert_eq!(c.cmd(&["HEXISTS", "h", "f2"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        Reply::Array(vec![b("f1"), b("x"), b("f2"), b("v2")])
    );
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(c.cmd(&["GET", "h"]).err(), wrongtype);
    assert_eq!(c.cmd(&["HGET", "k", "f"]).err(), wrongtype);
    assert_eq!(c.cmd(&["TYPE", "h"]), Reply::Simple("hash".into()));
    assert_eq!(c.cmd(&["HDEL", "h", "f1", "f1", "zz"]), Reply::Int(1));
    assert_eq!(c.cmd(&["EXISTS", "h", "k", "k", "none"]), Reply::Int(3));
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(4));
    assert_eq!(
        c.cmd(&["KEYS", "*"]),
        Reply::Array(vec![b("a"), b("b"), b("h"), b("k")])
    );
    assert_eq!(c.cmd(&["KEYS", "[hk]"]), Reply::Array(vec![b("h"), b("k")]));
    assert_eq!(c.cmd(&["DEL", "h", "a", "nope"]), Reply::Int(2));
    assert_eq!(c.cmd(&["UNLINK", "b"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["FOO", "bar", "baz"]).err(),
        "ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' "
    );
    assert_eq!(
        c.cmd(&["GET"]).err(),
        "ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        c.cmd(&["HSET", "h", "f"]).err(),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(
        c.cmd(&["MSET", "a", "1", "b"]).err(),
        "ERR wrong number of arguments for 'mset' command"
    );
    assert_eq!(c.cmd(&["SELECT", "0"]), Reply::ok());
    assert_eq!(
        c.cmd(&["SELECT", "1"]).err(),
        "ERR DB index is out of range"
    );
    assert_eq!(c.cmd(&["CLIENT", "SETNAME", "me"]), Reply::ok());
    assert_eq!(c.cmd(&["CLIENT", "GETNAME"]), b("me"));
    assert!(
        c.cmd(&["CLIENT", "SETNAME", "a b"])
            .err()
            .starts_with("ERR Client names")
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "appendonly"]),
        Reply::Array(vec![b("appendonly"), b("yes")])
    );
    match c.cmd(&["INFO"]) {
        Reply::Bulk(t) => {
            let t = String::from_utf8(t).expect("utf8");
            for s in [
                "# Server",
                "# Clients",
                "# Stats",
                "# Keyspace",
                "db0:keys=1",
                "# Engine",
            ] {
                assert!(t.contains(s), "INFO lacks {s}: {t}");
            }
        }
        other => panic!("INFO replied {other:?}"),
    }
    match c.cmd(&["COMMAND"]) {
        Reply::Array(v) => assert!(v.len() > 30),
        other => panic!("COMMAND replied {other:?}"),
    }
    assert_eq!(c.cmd(&["FLUSHDB"]), Reply::ok());
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(0));
}

#[test]
fn scan_cursor_is_stable_across_writes_and_sees_top_level_keys_only() {
    let (_d, s) = server(Config::default());
    let mut c = s.client();
    for i in 0..40 {
        c.cmd(&["SET", &format!("user:{i:02}"), "x"]);
    }
    c.cmd(&["HSET", "user:hash", "f1", "1", "f2", "2"]);
    let mut seen = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let Reply::Array(page) = c.cmd(&["SCAN", &cursor, "MATCH", "user:*", "COUNT", "7"]) else {
            panic!("bad SCAN reply");
        };
        let [Reply::Bulk(next), Reply::Array(keys)] = page.as_slice() else {
            panic!("bad SCAN page {page:?}");
        };
        for k in keys {
            let Reply::Bulk(k) = k else { panic!("key") };
            seen.push(String::from_utf8(k.clone()).expect("utf8"));
        }
        // Writes between pages do not disturb the cursor.
        c.cmd(&["SET", "aaa-before-everything", "x"]);
        c.cmd(&["DEL", "user:05"]);
        cursor = String::from_utf8(next.clone()).expect("utf8");
        if cursor == "0" {
            break;
        }
    }
    let mut want: Vec<String> = (0..40).map(|i| format!("user:{i:02}")).collect();
    want.push("user:hash".into());
    // user:05 may be seen (before its delete) or not, but nothing twice, no hash field.
    seen.retain(|k| k != "user:05");
    want.retain(|k| k != "user:05");
    assert_eq!(seen, want);
    let Reply::Array(h) = c.cmd(&["HSCAN", "user:hash", "0"]) else {
        panic!("HSCAN");
    };
    assert_eq!(h[1], Reply::Array(vec![b("f1"), b("1"), b("f2"), b("2")]));
    assert_eq!(c.cmd(&["SCAN", "99999999"]).err(), "ERR invalid cursor");
    assert_eq!(
        c.cmd(&["SCAN", "0", "TYPE", "hash", "COUNT", "1000"]),
        Reply::Array(vec![b("0"), Reply::Array(vec![b("user:hash")])])
    );
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let (_d, s) = server(Config::default());
    let mut c = s.client();
    let mut req = Vec::new();
    for i in 0..1000 {
        req.extend(encode(&[
            b"SET",
            format!("p{i}").as_bytes(),
            format!("{i}").as_bytes(),
        ]));
        req.extend(encode(&[b"INCR", b"counter"]));
    }
    req.extend(b"PING\r\nGET p999\r\n");
    c.send_raw(&req);
    for i in 0..1000 {
        assert_eq!(c.read(), Some(Reply::ok()));
        assert_eq!(c.read(), Some(Reply::Int(i + 1)));
    }
    assert_eq!(c.read(), Some(Reply::Simple("PONG".into())));
    assert_eq!(c.read(), Some(b("999")));
    // A run of plain SETs (one write batch): the last of each key wins, in order.
    let mut req = Vec::new();
    for i in 0..500 {
        req.extend(encode(&[
            b"SET",
            format!("r{}", i % 7).as_bytes(),
            format!("{i}").as_bytes(),
        ]));
    }
    req.extend(encode(&[b"MGET", b"r0", b"r6"]));
    c.send_raw(&req);
    for _ in 0..500 {
        assert_eq!(c.read(), Some(Reply::ok()));
    }
    assert_eq!(c.read(), Some(Reply::Array(vec![b("497"), b("496")])));
}

#[test]
fn resp3_hello_changes_reply_types() {
    let (_d, s) = server(Config::default());
    let mut c = s.client();
    let Reply::Map(m) = c.cmd(&["HELLO", "3"]) else {
        panic!("HELLO 3 is a map");
    };
    assert!(m.contains(&(b("proto"), Reply::Int(3))));
    c.cmd(&["HSET", "h", "f", "v"]);
    assert_eq!(c.cmd(&["GET", "nope"]), Reply::Nil);
    assert_eq!(c.cmd(&["HGETALL", "h"]), Reply::Map(vec![(b("f"), b("v"))]));
    assert!(
        matches!(c.cmd(&["INFO", "server"]), Reply::Verbatim(t) if t.starts_with("txt:# Server"))
    );
    assert_eq!(
        c.cmd(&["HELLO", "4"]).err(),
        "NOPROTO unsupported protocol version"
    );
    let Reply::Array(_) = c.cmd(&["HELLO", "2"]) else {
        panic!("HELLO 2 is an array");
    };
    assert_eq!(c.cmd(&["GET", "nope"]), Reply::Nil);
}

#[test]
fn auth_is_required_when_a_password_is_set() {
    let (_d, s) = server(Config {
        requirepass: Some("s3cret".into()),
        ..Config::default()
    });
    let mut c = s.client();
    assert_eq!(
        c.cmd(&["GET", "k"]).err(),
        "NOAUTH Authentication required."
    );
    assert_eq!(c.cmd(&["NOSUCH"]).err(), "NOAUTH Authentication required.");
    assert!(
        c.cmd(&["HELLO", "3"])
            .err()
            .starts_with("NOAUTH HELLO must be called")
    );
    assert_eq!(
        c.cmd(&["AUTH", "wrong"]).err(),
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(c.cmd(&["AUTH", "s3cret"]), Reply::ok());
    assert_eq!(c.cmd(&["SET", "k", "v"]), Reply::ok());
    let mut c2 = s.client();
    assert!(matches!(
        c2.cmd(&["HELLO", "3", "AUTH", "default", "s3cret"]),
        Reply::Map(_)
    ));
    assert_eq!(c2.cmd(&["GET", "k"]), b("v"));
    // Before AUTH, requests are held to Redis's small limits: a big one closes the
    // connection.
    let mut c3 = s.client();
    c3.send_raw(b"*1\r\n$100000\r\n");
    assert_eq!(
        c3.read().expect("error").err(),
        "ERR Protocol error: invalid bulk length"
    );
    assert!(c3.closed());
    // No password configured: AUTH says so.
    let (_d2, open) = server(Config::default());
    assert!(
        open.client()
            .cmd(&["AUTH", "x"])
            .err()
            .starts_with("ERR AUTH <password> called without")
    );
}

#[test]
fn malformed_requests_get_a_protocol_error_and_a_close() {
    let (_d, s) = server(Config {
        limits: Limits {
            max_bulk_len: 1024,
            max_multibulk_len: 100,
        },
        ..Config::default()
    });
    let cases: &[(&[u8], &str)] = &[
        (b"*1\r\n$x\r\n", "ERR Protocol error: invalid bulk length"),
        (b"*abc\r\n", "ERR Protocol error: invalid multibulk length"),
        (b"*1\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"),
        (
            b"*1\r\n$2000\r\n",
            "ERR Protocol error: invalid bulk length",
        ),
        (b"*101\r\n", "ERR Protocol error: invalid multibulk length"),
        (
            b"*1\r\n$1\r\nab\r\n",
            "ERR Protocol error: invalid bulk length",
        ),
        (
            b"GET \"k\r\n",
            "ERR Protocol error: unbalanced quotes in request",
        ),
    ];
    for (req, want) in cases {
        let mut c = s.client();
        c.send_raw(req);
        assert_eq!(c.read().expect("an error reply").err(), *want, "{req:?}");
        assert!(c.closed(), "connection stays open after {req:?}");
    }
    // A line with no end, longer than the inline limit.
    let mut c = s.client();
    c.send_raw(&vec![b'a'; 70 * 1024]);
    assert_eq!(
        c.read().expect("reply").err(),
        "ERR Protocol error: too big inline request"
    );
    // The server still serves.
    assert_eq!(s.client().cmd(&["PING"]), Reply::Simple("PONG".into()));
}

#[test]
fn maxclients_refuses_with_redis_text_and_frees_slots() {
    let (_d, s) = server(Config {
        maxclients: 3,
        ..Config::default()
    });
    let mut held: Vec<Client> = (0..3).map(|_| s.client()).collect();
    for c in &mut held {
        assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    }
    // A flood past the limit: each is refused, none crashes or blocks the server.
    for _ in 0..50 {
        let mut c = s.client();
        assert_eq!(
            c.read().expect("refusal").err(),
            "ERR max number of clients reached"
        );
        assert!(c.closed());
    }
    drop(held.pop());
    // The freed slot is reused once the server has seen the close.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut c = s.client();
        c.send(&["PING"]);
        match c.read() {
            Some(Reply::Simple(p)) if p == "PONG" => break,
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            other => panic!("no slot freed: {other:?}"),
        }
    }
}

#[test]
fn slow_and_idle_clients_are_timed_out() {
    let (_d, s) = server(Config {
        idle_timeout: Some(Duration::from_secs(2)),
        request_timeout: Duration::from_secs(1),
        ..Config::default()
    });
    // Half a request, then silence: closed after the request timeout.
    let mut c = s.client();
    let t = Instant::now();
    c.send_raw(b"*2\r\n$3\r\nGET\r\n$5\r\nhe");
    assert!(c.closed());
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(10),
        "{took:?}"
    );
    // An idle connection: closed after the idle timeout.
    let mut idle = s.client();
    assert_eq!(idle.cmd(&["PING"]), Reply::Simple("PONG".into()));
    let t = Instant::now();
    assert!(idle.closed());
    assert!(
        t.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        t.elapsed()
    );
    let info = s.client().cmd(&["INFO", "stats"]);
    let Reply::Bulk(text) = info else {
        panic!("INFO")
    };
    assert!(String::from_utf8_lossy(&text).contains("timed_out_clients:2"));
}

#[test]
fn concurrent_incr_is_atomic() {
    let (_d, s) = server(Config::default());
    let addr = s.addr;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..200 {
                    c.cmd(&["INCR", "n"]);
                    c.cmd(&["SET", &format!("t{t}"), &i.to_string()]);
                    c.cmd(&["INCRBY", "m", "-2"]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let mut c = s.client();
    assert_eq!(c.cmd(&["GET", "n"]), b("1600"));
    assert_eq!(c.cmd(&["GET", "m"]), b("-3200"));
}

#[test]
fn shutdown_closes_the_engine_and_data_survives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = TestServer::start(dir.path(), Config::default());
    let mut c = s.client();
    c.cmd(&["SET", "durable", "yes"]);
    c.cmd(&["HSET", "h", "f", "v"]);
    let mut idle = s.client();
    c.send(&["SHUTDOWN"]);
    assert_eq!(c.read(), None, "SHUTDOWN sends no reply");
    assert!(idle.closed(), "other connections are closed too");
    assert_eq!(
        s.thread.take().expect("thread").join().expect("join"),
        Ok(())
    );
    // The engine is closed: the database opens again at once.
    let mut s2 = TestServer::start(dir.path(), Config::default());
    let mut c = s2.client();
    assert_eq!(c.cmd(&["GET", "durable"]), b("yes"));
    assert_eq!(c.cmd(&["HGET", "h", "f"]), b("v"));
    assert_eq!(s2.stop(), Ok(()));
}

#[test]
fn quit_and_inline_commands() {
    let (_d, s) = server(Config::default());
    let mut c = s.client();
    c.send_raw(b"SET \"a key\" 'a value'\r\nGET \"a key\"\r\n\r\nQUIT\r\n");
    assert_eq!(c.read(), Some(Reply::ok()));
    assert_eq!(c.read(), Some(b("a value")));
    assert_eq!(c.read(), Some(Reply::ok()));
    assert!(c.closed());
}

#[test]
fn synced_server_acknowledges_after_one_sync_per_pipeline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut s = TestServer::start_with(l, dir.path(), Config::default(), true);
    let mut c = s.client();
    let before = wal_syncs(&mut c);
    let mut req = Vec::new();
    for i in 0..50 {
        req.extend(encode(&[b"SET", format!("s{i}").as_bytes(), b"v"]));
        req.extend(encode(&[b"INCR", b"n"]));
    }
    c.send_raw(&req);
    for i in 0..50 {
        assert_eq!(c.read(), Some(Reply::ok()));
        assert_eq!(c.read(), Some(Reply::Int(i + 1)));
    }
    let after = wal_syncs(&mut c);
    assert!(after > before, "the pipeline was synced");
    assert!(
        after - before <= 5,
        "{} syncs for one pipeline",
        after - before
    );
    assert_eq!(s.stop(), Ok(()));
    let mut s2 = TestServer::start(dir.path(), Config::default());
    assert_eq!(s2.client().cmd(&["GET", "n"]), b("50"));
    assert_eq!(s2.stop(), Ok(()));
}

/// This machine's address on the interface of its default route, if it has one that is
/// not loopback (found by connecting a UDP socket, which sends nothing).
fn non_loopback_ip() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn protected_mode_denies_non_loopback_clients_without_a_password() {
    let Some(ip) = non_loopback_ip() else {
        eprintln!("skipped: this machine has no non-loopback address to connect from");
        return;
    };
    let start = |cfg: Config| {
        let dir = tempfile::tempdir().expect("tempdir");
        let l = std::net::TcpListener::bind("0.0.0.0:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        (
            dir.path().to_path_buf(),
            TestServer::start_on(l, dir.path(), cfg),
            port,
            dir,
        )
    };
    let (_p, s, port, _d) = start(Config::default());
    let remote = std::net::SocketAddr::new(ip, port);
    let mut c = Client::connect(remote);
    assert!(
        c.read()
            .expect("DENIED")
            .err()
            .starts_with("DENIED Redis is running in protected mode")
    );
    assert!(c.closed());
    // Loopback clients are served.
    let local = std::net::SocketAddr::new([127, 0, 0, 1].into(), port);
    assert_eq!(
        Client::connect(local).cmd(&["PING"]),
        Reply::Simple("PONG".into())
    );
    drop(s);
    // With a password, remote clients may connect (and must AUTH).
    let (_p, _s, port, _d) = start(Config {
        requirepass: Some("pw".into()),
        ..Config::default()
    });
    let mut c = Client::connect(std::net::SocketAddr::new(ip, port));
    assert_eq!(
        c.cmd(&["GET", "k"]).err(),
        "NOAUTH Authentication required."
    );
    assert_eq!(c.cmd(&["AUTH", "pw"]), Reply::ok());
}

#[test]
fn a_client_that_never_reads_holds_back_only_itself() {
    let (_d, s) = server(Config {
        request_timeout: Duration::from_secs(1),
        ..Config::default()
    });
    let mut c = s.client();
    let big = "x".repeat(256 * 1024);
    assert_eq!(c.cmd(&["SET", "big", &big]), Reply::ok());
    // 2000 GETs of 256 KiB (500 MiB of replies), never read: the server stops reading
    // this client once its unsent replies pass the high-water mark.
    let mut flood = Vec::new();
    for _ in 0..2000 {
        flood.extend(encode(&[b"GET", b"big"]));
    }
    let mut w = c.w.try_clone().expect("clone");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = w.set_write_timeout(Some(Duration::from_secs(30)));
        // Blocks once both socket buffers are full; fails once the server closes.
        let _ = w.write_all(&flood);
    });
    // Everyone else is served meanwhile, at once.
    let mut other = s.client();
    for i in 0..20 {
        let t = Instant::now();
        assert_eq!(other.cmd(&["INCR", "n"]), Reply::Int(i + 1));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
    writer.join().expect("writer");
    // Replies were made only up to about the high-water mark past what the socket
    // buffers took, not for every request sent.
    let stats = |other: &mut Client| {
        let Reply::Bulk(text) = other.cmd(&["INFO", "stats"]) else {
            panic!("INFO")
        };
        String::from_utf8_lossy(&text).into_owned()
    };
    let text = stats(&mut other);
    let run: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.parse().ok())
        .expect("commands line");
    assert!(
        run < 200,
        "{run} commands run for a client that reads nothing"
    );
    // The stalled client is closed after the request timeout without progress.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !stats(&mut other).contains("timed_out_clients:1") {
        assert!(
            Instant::now() < deadline,
            "the stalled client is still open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // What it was sent ends with the server's close (EOF or a reset), not a read timeout.
    let mut rest = Vec::new();
    if let Err(e) = std::io::Read::read_to_end(&mut c.r, &mut rest) {
        assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{e}"
        );
    }
}

#[test]
fn writes_of_many_clients_in_one_round_share_one_sync() {
    let dir = tempfile::tempdir().expect("tempdir");
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut s = TestServer::start_with(l, dir.path(), Config::default(), true);
    let addr = s.addr;
    let mut probe = s.client();
    let before = wal_syncs(&mut probe);
    // 16 clients, 100 synced SETs each, one at a time: 1600 acknowledged writes.
    let threads: Vec<_> = (0..16)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..100 {
                    assert_eq!(
                        c.cmd(&["SET", &format!("c{t}"), &i.to_string()]),
                        Reply::ok()
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client");
    }
    let after = wal_syncs(&mut probe);
    assert!(after > before);
    // Every acknowledged write was synced; concurrent clients shared syncs (without the
    // sharing this would be 1600).
    assert!(
        after - before < 1600,
        "{} syncs for 1600 writes",
        after - before
    );
    assert_eq!(s.stop(), Ok(()));
    let mut s2 = TestServer::start(dir.path(), Config::default());
    let mut c = s2.client();
    for t in 0..16 {
        assert_eq!(c.cmd(&["GET", &format!("c{t}")]), b("99"));
    }
    assert_eq!(s2.stop(), Ok(()));
}
