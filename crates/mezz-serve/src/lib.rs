//! # mezz-serve
//!
//! A Redis-protocol server over the Mezzanine engine (`mezz serve`): RESP2 and RESP3 over
//! TCP, strings and hashes stored as engine keys (format: `docs/serve.md`), AUTH,
//! protected mode and client limits as Redis has them, and a static cluster slot map for
//! cluster-aware clients.
//!
//! Layout: `resp` (wire format), `table` (command table), `cmd` (dispatch), `store` (data
//! model over `mezzanine::Db`, staged writes and their commit), `glob` (patterns), `cluster` (slots), `info` (INFO text),
//! `server` (listener and connections).
//!
//! ```no_run
//! use mezz_serve::{Config, Server, Store};
//! let db = mezzanine::Db::open("/tmp/db", mezzanine::Options::default())?;
//! let listener = std::net::TcpListener::bind("127.0.0.1:6379")?;
//! Server::new(listener, Store::new(db, false), Config::default())?.run()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cluster;
pub mod cmd;
pub mod glob;
pub mod info;
pub mod resp;
pub mod server;
pub mod store;
pub mod table;

pub use server::{Config, Server, ShutdownHandle};
pub use store::Store;

/// The Redis version the server reports (HELLO, INFO): the protocol and command
/// behaviour it follows.
pub const REDIS_VERSION: &str = "7.0.0";

/// Entry points of the cargo-fuzz targets in `fuzz/` (also replayed on stable by
/// `tests/fuzz_corpus.rs`).
#[doc(hidden)]
pub mod fuzzing {
    use crate::resp::{Limits, Parser, parse_request};

    /// Parses `data` whole, then again fed in pieces whose sizes come from the first byte;
    /// both must agree (the same requests, the same error) and never panic.
    pub fn fuzz_resp_request(data: &[u8]) {
        let limits = Limits {
            max_bulk_len: 4096,
            max_multibulk_len: 64,
        };
        let Some((&step, data)) = data.split_first() else {
            return;
        };
        let step = usize::from(step % 17) + 1;
        let whole = parse_all(data, data.len(), &limits);
        let pieces = parse_all(data, step, &limits);
        assert_eq!(whole, pieces, "parsing in pieces of {step} differs");
        let _ = parse_request(data, &Limits::UNAUTHENTICATED);
    }

    type Parsed = (Vec<Vec<Vec<u8>>>, Option<String>);

    fn parse_all(data: &[u8], step: usize, limits: &Limits) -> Parsed {
        let mut p = Parser::default();
        let mut buf = Vec::new();
        let mut reqs = Vec::new();
        let mut fed = 0;
        loop {
            match p.parse(&buf, limits) {
                Ok((Some(args), used)) => {
                    buf.drain(..used);
                    reqs.push(args);
                }
                Ok((None, used)) => {
                    buf.drain(..used);
                    if fed >= data.len() {
                        return (reqs, None);
                    }
                    let end = (fed + step).min(data.len());
                    buf.extend_from_slice(data.get(fed..end).unwrap_or_default());
                    fed = end;
                }
                Err(e) => return (reqs, Some(e.0)),
            }
        }
    }
}
