//! The server loop: one thread runs an event loop (epoll, through `mio`) over the listener
//! and every connection, as Redis does. Each round: accept new connections; read what
//! arrived on the ready ones and run their complete requests, in order; commit the round's
//! writes (`Store::commit`: one engine write for every connection of the round, and with
//! `--sync` one fsync); then send the replies. Enforces `maxclients`, protected mode, idle
//! and request timeouts, and runs SHUTDOWN: stop accepting, close every connection, close
//! the engine.
//!
//! Why one thread: the engine's reads are short and its writes are grouped here, so one
//! thread keeps a core busy without the cost of a thread per connection (dozens of threads
//! on a few cores spent their time waking each other); a read-modify-write (INCR) never
//! waits for another connection; and the round is the natural group for one WAL write and
//! one fsync, as Redis's `appendfsync always` makes its round the group of one fsync.
//!
//! Invariants: no reply of a round is sent before the round's commit returned; if it
//! failed, every connection answered in the round is closed unanswered (a client must not
//! read the acknowledgement of a write that may not be durable, nor a value read from one).
//! A connection whose unsent replies pass `OUT_HIGH_WATER` is not read until they drain (a
//! client that pipelines without reading cannot grow the server's memory without bound). A
//! connection holding an incomplete request or unsent replies is closed after
//! `request_timeout` without progress, an idle one after `idle_timeout`. A protocol error
//! closes only its connection. At most `maxclients` connections are open.
//!
//! Thread-safety: the loop and every connection's state belong to the thread that runs
//! `Server::run`; `Shared` (the store, counters, the shutdown flag and the loop's waker) is
//! `Sync`, so `ShutdownHandle` works from any thread.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mio::net::{TcpListener as MioListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

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
    waker: Waker,
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
    poll: Poll,
    listener: MioListener,
    local: SocketAddr,
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
    if !shared.shutdown.swap(true, Ordering::SeqCst) {
        // A failed wake leaves the loop to see the flag at its next tick.
        let _ = shared.waker.wake();
    }
}

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
/// Unsent replies past which a connection is not read (and its buffered requests not
/// run) until they drain.
const OUT_HIGH_WATER: usize = 1 << 20;
/// Most plain SETs gathered into one MSET.
const RUN_AT_ONCE: usize = 1024;
const READ_CHUNK: usize = 64 * 1024;
/// Most bytes read from one connection in one round, so that one busy client cannot
/// starve the others.
const READ_BUDGET: usize = 1 << 20;
/// How often timeouts are checked (and a failed accept retried).
const TICK: Duration = Duration::from_millis(100);

impl Server {
    /// Serves `store` on an already bound listener.
    ///
    /// # Errors
    /// The listener's address cannot be read, or the event loop cannot be made.
    pub fn new(listener: TcpListener, store: Store, cfg: Config) -> io::Result<Server> {
        let local = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let mut listener = MioListener::from_std(listener);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Waker::new(poll.registry(), WAKER)?;
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
            waker,
        });
        Ok(Server {
            poll,
            listener,
            local,
            shared,
        })
    }

    /// The address listened on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local
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
    /// The event loop failed, or the engine's error while closing.
    pub fn run(self) -> Result<(), String> {
        let Server {
            mut poll,
            listener,
            shared,
            ..
        } = self;
        let mut lp = Loop {
            shared,
            listener,
            conns: HashMap::new(),
            chunk: vec![0u8; READ_CHUNK].into_boxed_slice(),
        };
        let failed = lp.run(&mut poll).err();
        lp.close_all(&poll);
        let closed = match lp.shared.store.db().close() {
            Ok(()) | Err(mezzanine::Error::Closed) => Ok(()),
            Err(e) => Err(format!("closing the database: {e}")),
        };
        match failed {
            Some(e) => Err(format!("the event loop failed: {e}")),
            None => closed,
        }
    }
}

/// One connection.
#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    state: ConnState,
    parser: Parser,
    /// Bytes read and not yet parsed into requests.
    inbuf: Vec<u8>,
    /// Replies; `out.buf[..sent]` has been written to the socket.
    out: Out,
    sent: usize,
    /// The socket may have more to read (its last readiness edge was not read dry).
    readable: bool,
    /// `inbuf` holds complete requests not run yet (held back by `OUT_HIGH_WATER`).
    backlog: bool,
    /// Close once the replies are sent (QUIT, a protocol error, the peer closed its side).
    closing: bool,
    /// The socket failed: close now.
    dead: bool,
    /// Replies were added in this round (so they wait on the round's commit).
    answered: bool,
    /// When a byte last moved either way.
    last_progress: Instant,
    /// When a byte was last read.
    last_input: Instant,
}

impl Conn {
    fn unsent(&self) -> usize {
        self.out.buf.len().saturating_sub(self.sent)
    }

    /// Writes what it can of the replies without blocking (`now`: the round's clock).
    fn write_out(&mut self, stats: &Counters, now: Instant) -> io::Result<()> {
        while self.sent < self.out.buf.len() {
            match self
                .stream
                .write(self.out.buf.get(self.sent..).unwrap_or_default())
            {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.sent += n;
                    self.last_progress = now;
                    stats
                        .net_out
                        .fetch_add(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.sent == self.out.buf.len() {
            self.out.buf.clear();
            self.sent = 0;
        }
        Ok(())
    }
}

struct Loop {
    shared: Arc<Shared>,
    listener: MioListener,
    conns: HashMap<usize, Conn>,
    chunk: Box<[u8]>,
}

impl Loop {
    fn run(&mut self, poll: &mut Poll) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        // Connections to serve in this round, and those to serve again in the next one
        // without waiting for an event (more to read, or requests held back).
        let mut todo: Vec<usize> = Vec::new();
        let mut carry: Vec<usize> = Vec::new();
        let mut accept_again = true;
        let mut last_tick = Instant::now();
        while !self.shared.shutdown.load(Ordering::SeqCst) {
            let timeout = if carry.is_empty() {
                TICK
            } else {
                Duration::ZERO
            };
            if let Err(e) = poll.poll(&mut events, Some(timeout)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            // One clock reading per round, for the progress times.
            let now = Instant::now();
            todo.append(&mut carry);
            for ev in &events {
                match ev.token() {
                    LISTENER => accept_again = true,
                    WAKER => {}
                    Token(t) => {
                        if let Some(c) = self.conns.get_mut(&t) {
                            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                                c.readable = true;
                            }
                            todo.push(t);
                        }
                    }
                }
            }
            if accept_again {
                accept_again = self.accept(poll, &mut todo);
            }
            todo.sort_unstable();
            todo.dedup();
            let mut shutdown = false;
            for &t in &todo {
                if let Some(c) = self.conns.get_mut(&t) {
                    let before = c.out.buf.len();
                    if serve_input(&self.shared, c, &mut self.chunk, now) == Action::Shutdown {
                        shutdown = true;
                    }
                    c.answered |= c.out.buf.len() != before;
                }
            }
            // The round's writes, before any of its replies.
            let committed = self.shared.store.commit().is_ok();
            for &t in &todo {
                let Some(c) = self.conns.get_mut(&t) else {
                    continue;
                };
                let answered = std::mem::take(&mut c.answered);
                if c.dead
                    || (answered && !committed)
                    || c.write_out(&self.shared.stats, now).is_err()
                {
                    self.close(poll, t);
                    continue;
                }
                if c.closing && c.unsent() == 0 {
                    let _ = c.stream.shutdown(Shutdown::Both);
                    self.close(poll, t);
                    continue;
                }
                if (c.readable || c.backlog) && !c.closing && c.unsent() < OUT_HIGH_WATER {
                    carry.push(t);
                }
            }
            todo.clear();
            if shutdown {
                begin_shutdown(&self.shared);
            }
            if now.duration_since(last_tick) >= TICK {
                last_tick = now;
                self.expire(poll);
            }
        }
        Ok(())
    }

    /// Accepts every pending connection. Returns whether to try again next round (an
    /// error other than "nothing pending", such as running out of descriptors).
    fn accept(&mut self, poll: &Poll, todo: &mut Vec<usize>) -> bool {
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if let Some(t) = self.admit(poll, stream, peer) {
                        todo.push(t);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(_) => return true,
            }
        }
    }

    fn admit(&mut self, poll: &Poll, mut stream: TcpStream, peer: SocketAddr) -> Option<usize> {
        let shared = &self.shared;
        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
        if protected_mode_denies(&shared.cfg, peer.ip()) {
            refuse(shared, stream, DENIED_ERROR);
            return None;
        }
        if self.conns.len() >= shared.cfg.maxclients {
            refuse(shared, stream, MAXCLIENTS_ERROR);
            return None;
        }
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let token = usize::try_from(id).ok()?.checked_add(1)?;
        let _ = stream.set_nodelay(true);
        if poll
            .registry()
            .register(
                &mut stream,
                Token(token),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            refuse(shared, stream, MAXCLIENTS_ERROR);
            return None;
        }
        let now = Instant::now();
        self.conns.insert(
            token,
            Conn {
                stream,
                state: ConnState {
                    id,
                    authed: shared.cfg.requirepass.is_none(),
                    name: None,
                    proto: Proto::Resp2,
                },
                parser: Parser::default(),
                inbuf: Vec::with_capacity(16 * 1024),
                out: Out::new(Proto::Resp2),
                sent: 0,
                readable: true,
                backlog: false,
                closing: false,
                dead: false,
                answered: false,
                last_progress: now,
                last_input: now,
            },
        );
        shared.clients.fetch_add(1, Ordering::SeqCst);
        Some(token)
    }

    fn close(&mut self, poll: &Poll, t: usize) {
        if let Some(mut c) = self.conns.remove(&t) {
            let _ = poll.registry().deregister(&mut c.stream);
            self.shared.clients.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Closes connections past their timeouts.
    fn expire(&mut self, poll: &Poll) {
        let cfg = &self.shared.cfg;
        let now = Instant::now();
        let expired: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| {
                let busy = !c.inbuf.is_empty() || c.unsent() > 0;
                if busy {
                    now.duration_since(c.last_progress) >= cfg.request_timeout
                } else {
                    cfg.idle_timeout
                        .is_some_and(|d| now.duration_since(c.last_input) >= d)
                }
            })
            .map(|(&t, _)| t)
            .collect();
        for t in expired {
            self.shared.stats.timeouts.fetch_add(1, Ordering::Relaxed);
            if let Some(c) = self.conns.get(&t) {
                let _ = c.stream.shutdown(Shutdown::Both);
            }
            self.close(poll, t);
        }
    }

    /// At shutdown: sends what each connection can take at once, then closes it.
    fn close_all(&mut self, poll: &Poll) {
        let tokens: Vec<usize> = self.conns.keys().copied().collect();
        for t in tokens {
            if let Some(c) = self.conns.get_mut(&t) {
                let _ = c.write_out(&self.shared.stats, Instant::now());
                let _ = c.stream.shutdown(Shutdown::Both);
            }
            self.close(poll, t);
        }
    }
}

fn refuse(shared: &Shared, mut stream: TcpStream, msg: &str) {
    shared.stats.rejected.fetch_add(1, Ordering::Relaxed);
    // A fresh socket's send buffer takes the line at once; the socket never blocks.
    let _ = stream.write_all(msg.as_bytes());
    let _ = stream.shutdown(Shutdown::Both);
}

/// Reads what the connection has (within `READ_BUDGET`, and not while its replies are
/// over `OUT_HIGH_WATER`) and runs its complete requests.
fn serve_input(shared: &Shared, c: &mut Conn, chunk: &mut [u8], now: Instant) -> Action {
    let mut budget = READ_BUDGET;
    while c.readable && budget > 0 && !c.closing && c.unsent() < OUT_HIGH_WATER {
        match c.stream.read(chunk) {
            Ok(0) => {
                // The peer closed its side: answer what it sent, then close.
                c.readable = false;
                c.closing = true;
            }
            Ok(n) => {
                c.inbuf
                    .extend_from_slice(chunk.get(..n).unwrap_or_default());
                budget = budget.saturating_sub(n);
                // A short read emptied the socket's queue. Linux signals every later
                // arrival as a new edge, so this saves the read that would only return
                // `WouldBlock` (one system call per request at `-P 1`).
                if n < chunk.len() {
                    c.readable = false;
                }
                c.last_progress = now;
                c.last_input = now;
                shared
                    .stats
                    .net_in
                    .fetch_add(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.readable = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                c.readable = false;
                c.dead = true;
                return Action::Close;
            }
        }
    }
    if shared.shutdown.load(Ordering::SeqCst) || c.dead {
        return Action::Continue;
    }
    let action = run_requests(shared, c);
    if action == Action::Close {
        c.closing = true;
    }
    action
}

/// Parses and runs the complete requests in `c.inbuf`, in order, until the replies pass
/// `OUT_HIGH_WATER` (the rest waits: `c.backlog`).
fn run_requests(shared: &Shared, c: &mut Conn) -> Action {
    let mut pos = 0;
    let mut action = Action::Continue;
    let mut reqs = Vec::new();
    let mut queued = 0usize;
    c.backlog = false;
    loop {
        if c.unsent() >= OUT_HIGH_WATER {
            c.backlog = true;
            break;
        }
        let limits = c.state.limits(shared);
        match c
            .parser
            .parse(c.inbuf.get(pos..).unwrap_or_default(), &limits)
        {
            Ok((Some(args), used)) => {
                pos += used;
                if args.is_empty() {
                    continue;
                }
                // Only a run of plain SETs is gathered (to be staged as one MSET): any
                // other request runs at once, so the replies are checked against the
                // high-water mark after each one. AUTH and HELLO change the limits of
                // what follows, so nothing is gathered before authentication either.
                let gather = c.state.authed && cmd::is_plain_set(&args);
                queued += args.iter().map(Vec::len).sum::<usize>();
                reqs.push(args);
                if !gather || queued >= OUT_HIGH_WATER || reqs.len() >= RUN_AT_ONCE {
                    action = cmd::execute_all(shared, &mut c.state, &reqs, &mut c.out);
                    reqs.clear();
                    queued = 0;
                    if action != Action::Continue {
                        break;
                    }
                }
            }
            Ok((None, used)) => {
                pos += used;
                break;
            }
            Err(e) => {
                action = cmd::execute_all(shared, &mut c.state, &reqs, &mut c.out);
                reqs.clear();
                if action == Action::Continue {
                    shared.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                    c.out.error(&format!("ERR {e}"));
                    action = Action::Close;
                }
                break;
            }
        }
    }
    if !reqs.is_empty() {
        action = cmd::execute_all(shared, &mut c.state, &reqs, &mut c.out);
    }
    c.inbuf.drain(..pos.min(c.inbuf.len()));
    action
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
