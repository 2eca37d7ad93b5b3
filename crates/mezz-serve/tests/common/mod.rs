//! A small RESP client and server fixture for the integration tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use mezz_serve::{Config, Server, ShutdownHandle, Store};

/// A decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Verbatim(String),
}

impl Reply {
    pub fn bulk(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }
    pub fn ok() -> Reply {
        Reply::Simple("OK".into())
    }
    pub fn err(&self) -> &str {
        match self {
            Reply::Error(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }
}

pub struct Client {
    pub r: BufReader<TcpStream>,
    pub w: TcpStream,
}

pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        Client {
            r: BufReader::new(s.try_clone().expect("clone")),
            w: s,
        }
    }

    pub fn send_raw(&mut self, b: &[u8]) {
        self.w.write_all(b).expect("write");
    }

    pub fn send(&mut self, args: &[&str]) {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.send_raw(&encode(&a));
    }

    pub fn cmd(&mut self, args: &[&str]) -> Reply {
        self.send(args);
        self.read().expect("a reply")
    }

    fn line(&mut self) -> Option<String> {
        let mut l = String::new();
        match self.r.read_line(&mut l) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(l.trim_end_matches("\r\n").to_string()),
        }
    }

    /// The next reply, `None` once the server closed the connection.
    pub fn read(&mut self) -> Option<Reply> {
        let l = self.line()?;
        let (tag, rest) = l.split_at(1);
        Some(match tag {
            "+" => Reply::Simple(rest.into()),
            "-" => Reply::Error(rest.into()),
            ":" => Reply::Int(rest.parse().expect("int")),
            "_" => Reply::Nil,
            "$" | "=" => {
                let n: i64 = rest.parse().expect("len");
                if n < 0 {
                    return Some(Reply::Nil);
                }
                let mut b = vec![0; usize::try_from(n).expect("len") + 2];
                self.r.read_exact(&mut b).ok()?;
                b.truncate(b.len() - 2);
                if tag == "=" {
                    Reply::Verbatim(String::from_utf8(b).expect("utf8"))
                } else {
                    Reply::Bulk(b)
                }
            }
            "*" => {
                let n: i64 = rest.parse().expect("len");
                if n < 0 {
                    return Some(Reply::Nil);
                }
                Reply::Array((0..n).map(|_| self.read().expect("element")).collect())
            }
            "%" => {
                let n: i64 = rest.parse().expect("len");
                Reply::Map(
                    (0..n)
                        .map(|_| (self.read().expect("key"), self.read().expect("value")))
                        .collect(),
                )
            }
            other => panic!("unknown reply type {other:?} in {l:?}"),
        })
    }

    /// Whether the server closed the connection (reads EOF or a reset).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0) | Err(_))
    }
}

/// A server on a loopback port, stopped (and its database closed) on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    pub handle: ShutdownHandle,
    pub thread: Option<JoinHandle<Result<(), String>>>,
    pub dir: std::path::PathBuf,
}

impl TestServer {
    pub fn start(dir: &std::path::Path, cfg: Config) -> TestServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        Self::start_on(l, dir, cfg)
    }

    pub fn start_on(l: TcpListener, dir: &std::path::Path, cfg: Config) -> TestServer {
        Self::start_with(l, dir, cfg, false)
    }

    pub fn start_with(
        l: TcpListener,
        dir: &std::path::Path,
        cfg: Config,
        sync: bool,
    ) -> TestServer {
        let db = mezzanine::Db::open(dir, mezzanine::Options::default()).expect("open");
        let server = Server::new(l, Store::new(db, sync), cfg).expect("server");
        let addr = server.local_addr();
        let handle = server.shutdown_handle();
        let thread = Some(std::thread::spawn(move || server.run()));
        TestServer {
            addr,
            handle,
            thread,
            dir: dir.to_path_buf(),
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// Stops the server and returns what `run` returned.
    pub fn stop(&mut self) -> Result<(), String> {
        self.handle.shutdown();
        self.thread
            .take()
            .map_or(Ok(()), |t| t.join().expect("server thread"))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
