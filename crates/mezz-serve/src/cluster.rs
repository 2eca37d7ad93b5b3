//! The static slot map of a cluster of `mezz serve` processes: Redis Cluster's key slots
//! (CRC16/XMODEM of the key, or of its `{hash tag}`, modulo 16384), which node serves each
//! slot, and the replies of `CLUSTER SLOTS` / `CLUSTER SHARDS`. The map is fixed at start
//! (no replication, no slot migration).
//!
//! Invariants: node ranges lie in 0..16384 and do not overlap (checked by `SlotMap::new`).
//! Thread-safety: immutable after construction; shared read-only.

/// Number of slots, as Redis Cluster.
pub const SLOTS: u16 = 16384;

/// CRC16/XMODEM (polynomial 0x1021, initial value 0), as Redis's `crc16`.
#[must_use]
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of `key`: if the key has a non-empty `{...}` section, only its content is
/// hashed (the first `{` and the first `}` after it), as Redis's `keyHashSlot`.
#[must_use]
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = key.get(open + 1..)?;
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| rest.get(..close)).flatten()
        })
        .unwrap_or(key);
    crc16(hashed) & (SLOTS - 1)
}

/// One node and the slots it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `host:port` clients connect to.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Inclusive slot ranges.
    pub ranges: Vec<(u16, u16)>,
    /// A stable 40-character node id (derived from the address).
    pub id: String,
}

/// Parses `A-B` (or a single slot `A`) into an inclusive range.
///
/// # Errors
/// A message naming the bad text.
pub fn parse_range(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("bad slot range '{s}' (expected A-B with 0 <= A <= B < 16384)");
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a, b),
        None => (s, s),
    };
    let a: u16 = a.trim().parse().map_err(|_| bad())?;
    let b: u16 = b.trim().parse().map_err(|_| bad())?;
    if a > b || b >= SLOTS {
        return Err(bad());
    }
    Ok((a, b))
}

fn node_id(addr: &str) -> String {
    // Two FNV-1a variants over the address, printed as 40 hex digits.
    let mut out = String::with_capacity(40);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for round in 0u64..3 {
        for &b in addr.as_bytes() {
            h ^= u64::from(b) ^ round;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out.truncate(40);
    out
}

impl Node {
    /// A node at `addr` (`host:port`) serving `ranges`.
    ///
    /// # Errors
    /// A message if `addr` is not `host:port`.
    pub fn new(addr: &str, ranges: Vec<(u16, u16)>) -> Result<Node, String> {
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| format!("bad node address '{addr}' (expected host:port)"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("bad port in node address '{addr}'"))?;
        Ok(Node {
            host: host.to_string(),
            port,
            ranges,
            id: node_id(addr),
        })
    }
}

/// The whole map: this node first, then the others.
#[derive(Debug, Clone)]
pub struct SlotMap {
    /// Every node; index 0 is this server.
    pub nodes: Vec<Node>,
    owner: Vec<u16>,
}

/// Marks a slot nobody serves in `SlotMap::owner`.
const UNOWNED: u16 = u16::MAX;

impl SlotMap {
    /// Builds the map; `nodes[0]` is this server.
    ///
    /// # Errors
    /// A message when two nodes claim one slot or no node is given.
    pub fn new(nodes: Vec<Node>) -> Result<SlotMap, String> {
        if nodes.is_empty() {
            return Err("a cluster map needs at least this node".into());
        }
        let mut owner = vec![UNOWNED; usize::from(SLOTS)];
        for (i, n) in nodes.iter().enumerate() {
            let idx = u16::try_from(i).map_err(|_| "too many cluster nodes".to_string())?;
            for &(a, b) in &n.ranges {
                for s in a..=b {
                    let slot = owner
                        .get_mut(usize::from(s))
                        .ok_or_else(|| format!("slot {s} out of range"))?;
                    if *slot != UNOWNED {
                        return Err(format!(
                            "slot {s} is claimed by both {}:{} and {}:{}",
                            nodes
                                .get(usize::from(*slot))
                                .map_or("?", |n| n.host.as_str()),
                            nodes.get(usize::from(*slot)).map_or(0, |n| n.port),
                            n.host,
                            n.port
                        ));
                    }
                    *slot = idx;
                }
            }
        }
        Ok(SlotMap { nodes, owner })
    }

    /// The node serving `slot`, if any.
    #[must_use]
    pub fn owner(&self, slot: u16) -> Option<&Node> {
        let i = *self.owner.get(usize::from(slot))?;
        self.nodes.get(usize::from(i))
    }

    /// Whether this server serves `slot`.
    #[must_use]
    pub fn is_local(&self, slot: u16) -> bool {
        self.owner.get(usize::from(slot)) == Some(&0)
    }

    /// How many slots have an owner.
    #[must_use]
    pub fn slots_assigned(&self) -> usize {
        self.owner.iter().filter(|&&o| o != UNOWNED).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from Redis Cluster's specification and `CLUSTER KEYSLOT`.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
    }

    #[test]
    fn maps_reject_overlaps_and_find_owners() {
        let a = Node::new("127.0.0.1:7000", vec![(0, 8191)]).expect("node");
        let b = Node::new("127.0.0.1:7001", vec![(8192, 16383)]).expect("node");
        let m = SlotMap::new(vec![a.clone(), b.clone()]).expect("map");
        assert!(m.is_local(0));
        assert!(!m.is_local(9000));
        assert_eq!(m.owner(9000).map(|n| n.port), Some(7001));
        assert_eq!(m.slots_assigned(), 16384);
        let c = Node::new("127.0.0.1:7002", vec![(8000, 8200)]).expect("node");
        assert!(SlotMap::new(vec![a, b, c]).is_err());
        assert!(parse_range("5-3").is_err());
        assert!(parse_range("0-16384").is_err());
        assert_eq!(parse_range("7"), Ok((7, 7)));
    }
}
