//! The text of INFO (Redis's `# Section` / `field:value` lines: server, clients, stats,
//! keyspace, and an engine section with the engine's statistics) and the values CONFIG GET
//! reports.
//!
//! Invariants: every line is `name:value` with no CR or LF inside. Thread-safety: reads
//! shared counters only.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use crate::server::Shared;

const SECTIONS: &[&str] = &["server", "clients", "stats", "keyspace", "engine"];

/// Renders the sections named in `args` (none, `default`, `all`, `everything`: every one).
#[must_use]
pub fn render(shared: &Shared, args: &[Vec<u8>]) -> String {
    let wanted: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| matches!(w.as_str(), "all" | "default" | "everything"));
    let mut out = String::new();
    for s in SECTIONS {
        if all || wanted.iter().any(|w| w == s) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            section(shared, s, &mut out);
        }
    }
    out
}

fn section(shared: &Shared, name: &str, o: &mut String) {
    let c = &shared.stats;
    match name {
        "server" => {
            let up = shared.started.elapsed().as_secs();
            let _ = write!(
                o,
                "# Server\r\nredis_version:{}\r\nmezz_version:{}\r\nredis_mode:{}\r\n\
                 os:{} {}\r\narch_bits:{}\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\n\
                 tcp_port:{}\r\nuptime_in_seconds:{up}\r\nuptime_in_days:{}\r\n",
                crate::REDIS_VERSION,
                env!("CARGO_PKG_VERSION"),
                if shared.cfg.cluster.is_some() {
                    "cluster"
                } else {
                    "standalone"
                },
                std::env::consts::OS,
                std::env::consts::ARCH,
                usize::BITS,
                std::process::id(),
                shared.port,
                up / 86_400,
            );
        }
        "clients" => {
            let _ = write!(
                o,
                "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:0\r\n",
                shared.clients.load(Ordering::Relaxed),
                shared.cfg.maxclients
            );
        }
        "stats" => {
            let _ = write!(
                o,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
                 total_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\n\
                 rejected_connections:{}\r\nprotocol_errors:{}\r\ntimed_out_clients:{}\r\n",
                c.connections.load(Ordering::Relaxed),
                c.commands.load(Ordering::Relaxed),
                c.net_in.load(Ordering::Relaxed),
                c.net_out.load(Ordering::Relaxed),
                c.rejected.load(Ordering::Relaxed),
                c.protocol_errors.load(Ordering::Relaxed),
                c.timeouts.load(Ordering::Relaxed),
            );
        }
        "keyspace" => {
            o.push_str("# Keyspace\r\n");
            if let Ok(n @ 1..) = shared.store.dbsize() {
                let _ = write!(o, "db0:keys={n},expires=0,avg_ttl=0\r\n");
            }
        }
        "engine" => {
            let s = shared.store.db().stats();
            let files: usize = s.levels.iter().map(|l| l.files).sum();
            let bytes: u64 = s.levels.iter().map(|l| l.bytes).sum();
            let _ = write!(
                o,
                "# Engine\r\nengine:mezzanine\r\nsync_writes:{}\r\nlast_sequence:{}\r\n\
                 user_bytes_written:{}\r\nwal_bytes_written:{}\r\nwal_syncs:{}\r\n\
                 write_groups:{}\r\nmemtable_bytes:{}\r\nimmutable_memtables:{}\r\n\
                 table_files:{files}\r\ntable_bytes:{bytes}\r\nflushes:{}\r\ncompactions:{}\r\n\
                 compaction_bytes_read:{}\r\ncompaction_bytes_written:{}\r\n\
                 stall_micros:{}\r\nblock_cache_hits:{}\r\nblock_cache_misses:{}\r\n\
                 get_p99_nanos:{}\r\nwrite_p99_nanos:{}\r\n",
                u8::from(shared.store.sync()),
                s.last_sequence,
                s.user_bytes_written,
                s.wal_bytes_written,
                s.wal_syncs,
                s.write_groups,
                s.memtable_bytes,
                s.immutable_memtables,
                s.flushes,
                s.compactions,
                s.compaction_bytes_read,
                s.compaction_bytes_written,
                s.stalls.total_micros(),
                s.block_cache_hits,
                s.block_cache_misses,
                s.get_latency.p99_nanos,
                s.write_latency.p99_nanos,
            );
            for l in s.levels.iter().filter(|l| l.files > 0) {
                let _ = write!(
                    o,
                    "level{}:files={},bytes={}\r\n",
                    l.level, l.files, l.bytes
                );
            }
        }
        _ => {}
    }
}

/// The parameters CONFIG GET answers, with their values.
#[must_use]
pub fn config_values(shared: &Shared) -> Vec<(String, String)> {
    let cfg = &shared.cfg;
    let sync = shared.store.sync();
    vec![
        ("bind".into(), shared.bind_host.clone()),
        ("port".into(), shared.port.to_string()),
        ("databases".into(), "1".into()),
        ("maxclients".into(), cfg.maxclients.to_string()),
        (
            "timeout".into(),
            cfg.idle_timeout.map_or(0, |d| d.as_secs()).to_string(),
        ),
        (
            "protected-mode".into(),
            if cfg.protected_mode { "yes" } else { "no" }.into(),
        ),
        (
            "requirepass".into(),
            cfg.requirepass.clone().unwrap_or_default(),
        ),
        (
            "proto-max-bulk-len".into(),
            cfg.limits.max_bulk_len.to_string(),
        ),
        ("save".into(), String::new()),
        ("appendonly".into(), "yes".into()),
        (
            "appendfsync".into(),
            if sync { "always" } else { "no" }.into(),
        ),
        (
            "cluster-enabled".into(),
            if cfg.cluster.is_some() { "yes" } else { "no" }.into(),
        ),
    ]
}
