//! Three servers with a static slot map: MOVED and CROSSSLOT replies, CLUSTER SLOTS /
//! SHARDS / KEYSLOT, and keys served only by their slot's owner.

mod common;

use std::net::TcpListener;

use common::{Reply, TestServer};
use mezz_serve::Config;
use mezz_serve::cluster::{Node, SlotMap, key_slot};

const RANGES: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];

#[test]
fn three_nodes_route_by_slot() {
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let addrs: Vec<String> = listeners
        .iter()
        .map(|l| l.local_addr().expect("addr").to_string())
        .collect();
    let mut servers = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        // This node first, then the others.
        let mut nodes = vec![Node::new(&addrs[i], vec![RANGES[i]]).expect("node")];
        for j in (0..3).filter(|&j| j != i) {
            nodes.push(Node::new(&addrs[j], vec![RANGES[j]]).expect("node"));
        }
        let cfg = Config {
            cluster: Some(SlotMap::new(nodes).expect("map")),
            ..Config::default()
        };
        servers.push(TestServer::start_on(l, dirs[i].path(), cfg));
    }
    let owner = |key: &str| {
        let slot = key_slot(key.as_bytes());
        RANGES
            .iter()
            .position(|&(a, b)| (a..=b).contains(&slot))
            .expect("owned")
    };
    let mut clients: Vec<_> = servers.iter().map(TestServer::client).collect();
    for i in 0..200 {
        let key = format!("key:{i}");
        let o = owner(&key);
        for (n, c) in clients.iter_mut().enumerate() {
            let r = c.cmd(&["SET", &key, "v"]);
            if n == o {
                assert_eq!(r, Reply::ok());
            } else {
                let slot = key_slot(key.as_bytes());
                assert_eq!(r.err(), format!("MOVED {slot} {}", addrs[o]));
            }
        }
    }
    // Every key lives on exactly one node.
    let total: i64 = clients
        .iter_mut()
        .map(|c| match c.cmd(&["DBSIZE"]) {
            Reply::Int(n) => n,
            other => panic!("DBSIZE {other:?}"),
        })
        .sum();
    assert_eq!(total, 200);
    let c = &mut clients[0];
    assert_eq!(c.cmd(&["CLUSTER", "KEYSLOT", "foo"]), Reply::Int(12182));
    assert_eq!(
        c.cmd(&["MSET", "{u}a", "1", "{u}b", "2", "x", "3"]).err(),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    let Reply::Array(slots) = c.cmd(&["CLUSTER", "SLOTS"]) else {
        panic!("CLUSTER SLOTS");
    };
    assert_eq!(slots.len(), 3);
    let Reply::Array(first) = &slots[0] else {
        panic!("entry")
    };
    assert_eq!(first[0], Reply::Int(0));
    assert_eq!(first[1], Reply::Int(5460));
    let Reply::Array(shards) = c.cmd(&["CLUSTER", "SHARDS"]) else {
        panic!("CLUSTER SHARDS");
    };
    assert_eq!(shards.len(), 3);
    let Reply::Array(info) = c.cmd(&["HELLO", "2"]) else {
        panic!("HELLO")
    };
    assert!(info.contains(&Reply::bulk("cluster")));
    for mut s in servers {
        assert_eq!(s.stop(), Ok(()));
    }
}

#[test]
fn cluster_commands_without_a_map() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = TestServer::start(dir.path(), Config::default());
    let mut c = s.client();
    assert_eq!(
        c.cmd(&["CLUSTER", "SLOTS"]).err(),
        "ERR This instance has cluster support disabled"
    );
    assert_eq!(
        c.cmd(&["CLUSTER", "KEYSLOT", "{user1000}.following"]),
        c.cmd(&["CLUSTER", "KEYSLOT", "user1000"])
    );
}
