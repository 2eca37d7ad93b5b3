//! Regression tests: shrunken op logs that once failed, named after the seed (or the
//! behaviour) that found them. Each replays under every option set via `check_log`. Add a
//! new one by pasting the code a failing model or metamorphic run prints.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use mezz_testkit::check_log;
use mezz_testkit::op::*;

/// Every kind of op on an empty database and on the empty key, with a value larger than a
/// block: the smallest log that touches every code path of the runner.
#[test]
fn every_op_kind_on_edge_keys() {
    let ops = vec![
        Op::Get { key: b"".to_vec() },
        Op::Put {
            key: b"".to_vec(),
            value: b"".to_vec(),
        },
        Op::Put {
            key: b"k1".to_vec(),
            value: make_value(1, 10_240),
        },
        Op::TakeSnapshot,
        Op::Delete { key: b"".to_vec() },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k1\x00".to_vec(),
                value: b"x".to_vec(),
            },
            BatchOp::Delete {
                key: b"k1".to_vec(),
            },
        ]),
        Op::Flush,
        Op::ReadAtSnapshot {
            snapshot: 0,
            key: b"".to_vec(),
            lower: None,
            upper: None,
            reverse: false,
            limit: 10,
        },
        Op::Walk {
            lower: None,
            upper: Some(b"k2".to_vec()),
            start: SeekStart::SeekForPrev(b"k1".to_vec()),
            steps: vec![Step::Next, Step::Prev, Step::Prev],
        },
        Op::CompactRange {
            begin: None,
            end: None,
        },
        Op::ReadAtSnapshot {
            snapshot: 0,
            key: b"k1".to_vec(),
            lower: None,
            upper: None,
            reverse: true,
            limit: 10,
        },
        Op::ReleaseSnapshot { snapshot: 0 },
        Op::Reopen,
        Op::Iterate {
            lower: Some(b"".to_vec()),
            upper: None,
            reverse: true,
            limit: 5,
        },
        Op::Get {
            key: b"k1".to_vec(),
        },
    ];
    check_log(&ops);
}
