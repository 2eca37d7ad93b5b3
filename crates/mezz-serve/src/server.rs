//! The server loop: a listener thread accepts connections and gives each one a thread of
//! its own (blocking I/O; `commit::Committer` groups the writes of concurrent connections
//! into one engine write and, with `--sync`, one fsync). Enforces `maxclients`,
//! protected mode, idle and request timeouts, and runs SHUTDOWN: stop accepting, close
//! every connection, wait for them, close the engine.
//!
//! Invariants: the number of live connection threads never exceeds `maxclients` (a
//! connection past it gets Redis's error and is closed by the accept thread); a connection
//! holding an incomplete request or an unread reply is closed after `request_timeout`
//! without progress, so a slow or half-open client cannot hold a thread for ever; a
//! protocol error closes only its connection.
//!
//! Thread-safety: `Shared` is `Sync` (atomics, a mutex-guarded registry of live sockets,
//! the `Store`); each connection's parser and buffers are its thread's own.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::cluster::SlotMap;
use crate::cmd::{self, Action, ConnState};
use crate::resp::{Limits, Out, Parser, Proto};
use crate::store::Store;

/// Redis's reply to a connection past `maxclients`.
pub const MAXCLIENTS_ERROR: &str = "-ERR max number of clients reached\r\n";

/// Redis's reply to a non-loopback client in protected mode.
pub const DENIED_ERROR: &str = "-DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. In this mode connections are only \
accepted from the loopback interface. If you want to connect from external computers to Redis \
you may adopt one of the following solutions: 1) Just disable protected mode sending the command \
'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same \
host the server is running, however MAKE SURE Redis is not publicly accessible from internet if \
you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just \
disable the protected mode by editing the Redis configuration file, and setting the protected \
mode option to 'no', and then restarting the server. 3) If you started the server manually just \
for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication \
password for the default user. NOTE: You only need to do one of the above things in order for \
the server to start accepting connections from the outside.\r\n";

/// Server settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Password of the default user (`requirepass`); `None`: no AUTH needed.
    pub requirepass: Option<String>,
    /// Most connections at once.
    pub maxclients: usize,
    /// Close a connection idle this long (`None`: never, Redis's `timeout 0`).
    pub idle_timeout: Option<Duration>,
    /// Close a connection whose incomplete request or unread reply makes no progress for
    /// this long.
    pub request_timeout: Duration,
    /// Refuse non-loopback clients when no password is set.
    pub protected_mode: bool,
    /// The static slot map in cluster mode (node 0 is this server).
    pub cluster: Option<SlotMap>,
    /// Request limits of authenticated clients.
    pub limits: Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            requirepass: None,
            maxclients: 10_000,
            idle_timeout: None,
            request_timeout: Duration::from_secs(30),
            protected_mode: true,
            cluster: None,
            limits: Limits::DEFAULT,
        }
    }
}

/// Server-wide counters (INFO stats).
#[derive(Debug, Default)]
pub struct Counters {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Commands run.
    pub commands: AtomicU64,
    /// Connections refused (maxclients, protected mode).
    pub rejected: AtomicU64,
    /// Bytes read.
    pub net_in: AtomicU64,
    /// Bytes written.
    pub net_out: AtomicU64,
    /// Connections closed for a protocol error.
    pub protocol_errors: AtomicU64,
    /// Connections closed by a timeout.
    pub timeouts: AtomicU64,
}

/// What every connection shares.
#[derive(Debug)]
pub struct Shared {
    /// The data.
    pub store: Store,
    /// The settings.
    pub cfg: Config,
    /// INFO counters.
    pub stats: Counters,
    /// Live connections.
    pub clients: AtomicUsize,
    /// When the server started.
    pub started: Instant,
    /// The port listened on.
    pub port: u16,
    /// The host listened on, as text.
    pub bind_host: String,
    shutdown: AtomicBool,
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, TcpStream>>,
    idle: Condvar,
    local: SocketAddr,
}

/// Whether protected mode refuses a client from `peer`.
#[must_use]
pub fn protected_mode_denies(cfg: &Config, peer: IpAddr) -> bool {
    cfg.protected_mode && cfg.requirepass.is_none() && !is_loopback(peer)
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

/// Asks a running server to shut down (as the SHUTDOWN command does), from any thread.
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl ShutdownHandle {
    /// Starts the shutdown; `Server::run` returns once it is complete.
    pub fn shutdown(&self) {
        begin_shutdown(&self.shared);
    }
}

fn begin_shutdown(shared: &Shared) {
    if shared.shutdown.swap(true, Ordering::SeqCst) {
        return;
    }
    // Wake the accept loop with a connection of our own.
    let mut wake = shared.local;
    if wake.ip().is_unspecified() {
        wake.set_ip(match wake.ip() {
            IpAddr::V4(_) => IpAddr::from([127, 0, 0, 1]),
            IpAddr::V6(_) => IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
        });
    }
    let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
}

impl Server {
    /// Serves `store` on an already bound listener.
    ///
    /// # Errors
    /// The listener's address cannot be read.
    pub fn new(listener: TcpListener, store: Store, cfg: Config) -> io::Result<Server> {
        let local = listener.local_addr()?;
        let shared = Arc::new(Shared {
            store,
            cfg,
            stats: Counters::default(),
            clients: AtomicUsize::new(0),
            started: Instant::now(),
            port: local.port(),
            bind_host: local.ip().to_string(),
            shutdown: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            live: Mutex::new(HashMap::new()),
            idle: Condvar::new(),
            local,
        });
        Ok(Server { listener, shared })
    }

    /// The address listened on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local
    }

    /// A handle that shuts the server down.
    #[must_use]
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: self.shared.clone(),
        }
    }

    /// Accepts and serves connections until SHUTDOWN (or the handle); then closes every
    /// connection and the engine.
    ///
    /// # Errors
    /// The engine's error while closing.
    pub fn run(self) -> Result<(), String> {
        let shared = self.shared;
        for conn in self.listener.incoming() {
            if shared.shutdown.load(Ordering::SeqCst) {
                break;
            }
            let stream = match conn {
                Ok(s) => s,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted
                    ) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    continue;
                }
            };
            accept(&shared, stream);
        }
        // Close every live connection and wait for their threads.
        {
            let mut live = shared.live.lock();
            for s in live.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            while !live.is_empty() {
                if shared.idle.wait_until(&mut live, deadline).timed_out() {
                    break;
                }
            }
        }
        match shared.store.db().close() {
            Ok(()) | Err(mezzanine::Error::Closed) => Ok(()),
            Err(e) => Err(format!("closing the database: {e}")),
        }
    }
}

fn refuse(shared: &Shared, mut stream: TcpStream, msg: &str) {
    shared.stats.rejected.fetch_add(1, Ordering::Relaxed);
    // A fresh socket's send buffer takes the line at once; never block the accept loop.
    let _ = stream.set_nonblocking(true);
    let _ = stream.write_all(msg.as_bytes());
    let _ = stream.shutdown(Shutdown::Both);
}

fn accept(shared: &Arc<Shared>, stream: TcpStream) {
    shared.stats.connections.fetch_add(1, Ordering::Relaxed);
    if let Ok(peer) = stream.peer_addr()
        && protected_mode_denies(&shared.cfg, peer.ip())
    {
        refuse(shared, stream, DENIED_ERROR);
        return;
    }
    if shared.clients.load(Ordering::SeqCst) >= shared.cfg.maxclients {
        refuse(shared, stream, MAXCLIENTS_ERROR);
        return;
    }
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let Ok(registered) = stream.try_clone() else {
        return;
    };
    shared.clients.fetch_add(1, Ordering::SeqCst);
    shared.live.lock().insert(id, registered);
    let s2 = shared.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("mezz-serve-conn-{id}"))
        .stack_size(512 * 1024)
        .spawn(move || {
            serve_connection(&s2, stream, id);
            let mut live = s2.live.lock();
            live.remove(&id);
            s2.clients.fetch_sub(1, Ordering::SeqCst);
            s2.idle.notify_all();
        });
    if spawned.is_err() {
        // No thread for it (resource limits): close it as if over maxclients.
        let removed = shared.live.lock().remove(&id);
        shared.clients.fetch_sub(1, Ordering::SeqCst);
        if let Some(s) = removed {
            refuse(shared, s, MAXCLIENTS_ERROR);
        }
    }
}

/// Sends the buffered replies, after the sync the writes behind them owe (`--sync`). If
/// that sync fails, the replies are dropped and the connection is closed: the client must
/// not read an acknowledgement of a write that may not be durable.
fn flush(shared: &Shared, stream: &mut TcpStream, out: &mut Out) -> io::Result<()> {
    if shared.store.settle().is_err() {
        out.buf.clear();
        return Err(io::Error::other("the WAL sync failed"));
    }
    if out.buf.is_empty() {
        return Ok(());
    }
    stream.write_all(&out.buf)?;
    shared
        .stats
        .net_out
        .fetch_add(u64::try_from(out.buf.len()).unwrap_or(0), Ordering::Relaxed);
    out.buf.clear();
    Ok(())
}

/// Replies are sent once this many bytes are buffered, even mid-pipeline.
const OUT_HIGH_WATER: usize = 1 << 20;
const READ_CHUNK: usize = 64 * 1024;

fn serve_connection(shared: &Shared, mut stream: TcpStream, id: u64) {
    let cfg = &shared.cfg;
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(cfg.request_timeout));
    let mut conn = ConnState {
        id,
        authed: cfg.requirepass.is_none(),
        name: None,
        proto: Proto::Resp2,
    };
    let mut parser = Parser::default();
    let mut inbuf: Vec<u8> = Vec::with_capacity(16 * 1024);
    // Read into a buffer zeroed once, then copy what arrived (zeroing a fresh 64 KiB tail of
    // `inbuf` before each read cost more than the copy).
    let mut chunk = vec![0u8; READ_CHUNK].into_boxed_slice();
    let mut out = Out::new(Proto::Resp2);
    let mut timeout_set: Option<Option<Duration>> = None;
    let mut partial = false;
    loop {
        let want = if partial {
            Some(cfg.request_timeout)
        } else {
            cfg.idle_timeout
        };
        if timeout_set != Some(want) {
            let _ = stream.set_read_timeout(want);
            timeout_set = Some(want);
        }
        let n = match stream.read(&mut chunk[..]) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                shared.stats.timeouts.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(_) => return,
        };
        inbuf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        shared
            .stats
            .net_in
            .fetch_add(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        // Parse every complete request of this read, then run them (a run of plain SETs
        // becomes one write batch); replies go out together.
        let mut pos = 0;
        let mut action = Action::Continue;
        let mut reqs = Vec::new();
        let mut queued = 0usize;
        loop {
            let limits = conn.limits(shared);
            match parser.parse(inbuf.get(pos..).unwrap_or_default(), &limits) {
                Ok((Some(args), used)) => {
                    pos += used;
                    if args.is_empty() {
                        continue;
                    }
                    // AUTH and HELLO change the limits of what follows: run them at once.
                    let before_auth = !conn.authed;
                    queued += args.iter().map(Vec::len).sum::<usize>();
                    reqs.push(args);
                    if before_auth || queued >= OUT_HIGH_WATER || reqs.len() >= 1024 {
                        action = cmd::execute_all(shared, &mut conn, &reqs, &mut out);
                        reqs.clear();
                        queued = 0;
                        if action != Action::Continue {
                            break;
                        }
                        if out.buf.len() >= OUT_HIGH_WATER
                            && flush(shared, &mut stream, &mut out).is_err()
                        {
                            return;
                        }
                    }
                }
                Ok((None, used)) => {
                    pos += used;
                    break;
                }
                Err(e) => {
                    action = cmd::execute_all(shared, &mut conn, &reqs, &mut out);
                    reqs.clear();
                    if action == Action::Continue {
                        shared.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                        out.error(&format!("ERR {e}"));
                        action = Action::Close;
                    }
                    break;
                }
            }
        }
        if !reqs.is_empty() {
            action = cmd::execute_all(shared, &mut conn, &reqs, &mut out);
        }
        inbuf.drain(..pos.min(inbuf.len()));
        partial = !inbuf.is_empty();
        let sent = flush(shared, &mut stream, &mut out);
        match action {
            Action::Continue if sent.is_ok() => {}
            Action::Shutdown => {
                // Deferred writes of this connection first (the engine's close syncs them).
                let _ = shared.store.prepare();
                begin_shutdown(shared);
                return;
            }
            _ => {
                let _ = stream.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_mode_refuses_only_remote_clients_without_password() {
        let mut cfg = Config::default();
        let remote: IpAddr = "192.0.2.7".parse().expect("ip");
        let local: IpAddr = "127.0.0.1".parse().expect("ip");
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert!(protected_mode_denies(&cfg, remote));
        assert!(!protected_mode_denies(&cfg, local));
        assert!(!protected_mode_denies(&cfg, mapped));
        cfg.requirepass = Some("pw".into());
        assert!(!protected_mode_denies(&cfg, remote));
        cfg.requirepass = None;
        cfg.protected_mode = false;
        assert!(!protected_mode_denies(&cfg, remote));
    }
}
