//! `mezz serve DB`: the Redis-protocol server of crate `mezz-serve` over the database.
//! Prints `mezz serve: listening on ADDR` on stderr once bound; SHUTDOWN, SIGTERM or
//! SIGINT close the connections and the database, then the command exits 0.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::time::Duration;

use mezz_serve::cluster::{Node, SlotMap, parse_range};
use mezz_serve::{Config, Server, Store};

use crate::common::{CliError, DbArgs, Result};

/// Arguments of `mezz serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:6379")]
    bind: String,
    /// Sync the WAL before each write is acknowledged (the writes of one event-loop round share
    /// one sync).
    #[arg(long)]
    sync: bool,
    /// Password clients must give with AUTH (or HELLO ... AUTH).
    #[arg(long)]
    requirepass: Option<String>,
    /// Most client connections at once.
    #[arg(long, default_value_t = 10_000)]
    maxclients: usize,
    /// Close connections idle for this many seconds (0: never).
    #[arg(long, default_value_t = 0)]
    timeout: u64,
    /// Close a connection whose partial request or unread reply makes no progress for
    /// this many seconds.
    #[arg(long, default_value_t = 30)]
    request_timeout: u64,
    /// Refuse non-loopback clients while no password is set (yes|no).
    #[arg(long, default_value = "yes")]
    protected_mode: String,
    /// Cluster mode: the slot ranges this server serves, `A-B[,C-D...]`.
    #[arg(long, value_name = "A-B")]
    cluster_slots: Option<String>,
    /// Cluster mode: another node and its slots, `HOST:PORT=A-B[,C-D...]` (repeatable).
    #[arg(long, value_name = "HOST:PORT=A-B")]
    cluster_node: Vec<String>,
    /// Cluster mode: the address other nodes and clients know this server by (default:
    /// the bound address; 127.0.0.1 if it is bound to all interfaces).
    #[arg(long, value_name = "HOST:PORT")]
    cluster_announce: Option<String>,
}

fn ranges(s: &str) -> Result<Vec<(u16, u16)>> {
    s.split(',')
        .map(|r| parse_range(r).map_err(CliError::Failed))
        .collect()
}

fn slot_map(a: &Args, local: SocketAddr) -> Result<Option<SlotMap>> {
    let Some(own) = &a.cluster_slots else {
        if a.cluster_node.is_empty() {
            return Ok(None);
        }
        return Err(CliError::Failed(
            "--cluster-node needs --cluster-slots (this server's slots)".into(),
        ));
    };
    let me = match &a.cluster_announce {
        Some(addr) => addr.clone(),
        None if local.ip().is_unspecified() => format!("127.0.0.1:{}", local.port()),
        None => local.to_string(),
    };
    let mut nodes = vec![Node::new(&me, ranges(own)?).map_err(CliError::Failed)?];
    for n in &a.cluster_node {
        let (addr, r) = n.split_once('=').ok_or_else(|| {
            CliError::Failed(format!("bad --cluster-node '{n}' (expected HOST:PORT=A-B)"))
        })?;
        nodes.push(Node::new(addr, ranges(r)?).map_err(CliError::Failed)?);
    }
    SlotMap::new(nodes).map(Some).map_err(CliError::Failed)
}

/// Runs `mezz serve`.
pub fn run(a: &Args) -> Result<()> {
    let protected_mode = match a.protected_mode.as_str() {
        "yes" => true,
        "no" => false,
        other => {
            return Err(CliError::Failed(format!(
                "--protected-mode takes yes or no, not '{other}'"
            )));
        }
    };
    let addr = a
        .bind
        .to_socket_addrs()
        .map_err(|e| CliError::Failed(format!("bad --bind '{}': {e}", a.bind)))?
        .next()
        .ok_or_else(|| CliError::Failed(format!("--bind '{}' names no address", a.bind)))?;
    let listener = TcpListener::bind(addr)
        .map_err(|e| CliError::Failed(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Failed(format!("listener: {e}")))?;
    let cfg = Config {
        requirepass: a.requirepass.clone().filter(|p| !p.is_empty()),
        maxclients: a.maxclients,
        idle_timeout: (a.timeout > 0).then(|| Duration::from_secs(a.timeout)),
        request_timeout: Duration::from_secs(a.request_timeout.max(1)),
        protected_mode,
        cluster: slot_map(a, local)?,
        ..Config::default()
    };
    let db = a.db.open(true)?;
    let server = Server::new(listener, Store::new(db, a.sync), cfg)
        .map_err(|e| CliError::Failed(format!("listener: {e}")))?;
    let handle = server.shutdown_handle();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ])
    .map_err(|e| CliError::Failed(format!("installing signal handlers: {e}")))?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            handle.shutdown();
        }
    });
    eprintln!("mezz serve: listening on {local}");
    server.run().map_err(CliError::Failed)
}
