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

/// An iterator held across a merge of a flushed memtable into the NVM receiver (run inline by
/// a stalled writer under manual_background): entries appearing under its positioned cursor
/// made it yield a key past its end after changing direction. Found by the metamorphic runner
/// in manual mode (seed 10014, leveldb/nvm-immutable-memtable+manual); fails every time
/// without the fix.
#[test]
fn seed_10014() {
    let ops = vec![
        Op::Delete {
            key: b"k72".to_vec(),
        },
        Op::Reopen,
        Op::Batch(vec![
            BatchOp::Put {
                key: b"".to_vec(),
                value: b"6".to_vec(),
            },
            BatchOp::Put {
                key: b"k139".to_vec(),
                value: b"64.n}=9r%g/?r%c".to_vec(),
            },
            BatchOp::Put {
                key: b"k3".to_vec(),
                value: make_value(101, 968),
            },
            BatchOp::Put {
                key: b"k190\x00".to_vec(),
                value: make_value(102, 226),
            },
            BatchOp::Put {
                key: b"k33/suffix-of-medium-length".to_vec(),
                value: make_value(103, 1017),
            },
            BatchOp::Delete {
                key: make_value(1000007, 459),
            },
        ]),
        Op::Batch(vec![
            BatchOp::Delete {
                key: b"k56\xff\xff".to_vec(),
            },
            BatchOp::Put {
                key: b"k10\x00".to_vec(),
                value: make_value(116, 11271),
            },
            BatchOp::Put {
                key: b"k126\xff\xff".to_vec(),
                value: make_value(117, 177),
            },
            BatchOp::Put {
                key: b"k131".to_vec(),
                value: b"76.EkQL*(']G_@;D1IBEZcos0{n;1-y".to_vec(),
            },
            BatchOp::Delete {
                key: b"k190\x00".to_vec(),
            },
            BatchOp::Put {
                key: b"k4".to_vec(),
                value: make_value(119, 10769),
            },
            BatchOp::Put {
                key: b"k169".to_vec(),
                value: b"78.i2\\~WvF*oo".to_vec(),
            },
            BatchOp::Delete {
                key: b"k2".to_vec(),
            },
        ]),
        Op::Delete {
            key: b"k33/suffix-of-medium-length".to_vec(),
        },
        Op::Put {
            key: b"k4".to_vec(),
            value: b"79.I2l)IaWSj.".to_vec(),
        },
        Op::Put {
            key: b"k14\xff\xff".to_vec(),
            value: make_value(122, 1928),
        },
        Op::Put {
            key: b"k44/suffix-of-medium-length".to_vec(),
            value: b"7b.r34".to_vec(),
        },
        Op::Put {
            key: b"k104".to_vec(),
            value: b"7c..dt?x4(G^9H|msN<)>yQ}fM|KyS".to_vec(),
        },
        Op::Put {
            key: b"k31".to_vec(),
            value: make_value(125, 398),
        },
        Op::Put {
            key: b"k38".to_vec(),
            value: make_value(126, 118),
        },
        Op::Put {
            key: b"k163".to_vec(),
            value: make_value(127, 1553),
        },
        Op::Put {
            key: b"k114".to_vec(),
            value: make_value(128, 191),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k12".to_vec(),
                value: make_value(129, 214),
            },
            BatchOp::Put {
                key: b"k96".to_vec(),
                value: b"82.!9ip\\T2U".to_vec(),
            },
            BatchOp::Delete {
                key: b"k12".to_vec(),
            },
            BatchOp::Put {
                key: b"k183".to_vec(),
                value: make_value(131, 171),
            },
            BatchOp::Put {
                key: b"k165\x00/suffix-of-medium-length".to_vec(),
                value: b"84.EYc+;pp&TazZ19%f1kb++beIJ!H~IS=u{7Bnd=|>Sr`[{/Xh#B++B$ZXD&o".to_vec(),
            },
        ]),
        Op::Put {
            key: b"k26".to_vec(),
            value: make_value(133, 165),
        },
        Op::Put {
            key: b"k74".to_vec(),
            value: b"86.SJS|;Y,z9c3-Fu26J8Nl(Je|FG".to_vec(),
        },
        Op::Put {
            key: b"k40\x00".to_vec(),
            value: make_value(135, 1916),
        },
        Op::Put {
            key: b"k9".to_vec(),
            value: make_value(136, 561),
        },
        Op::Put {
            key: b"k113".to_vec(),
            value: make_value(137, 152),
        },
        Op::Delete {
            key: b"k4".to_vec(),
        },
        Op::Put {
            key: b"k120\x00".to_vec(),
            value: b"8a.X~H]V@;?hh?+)t>guC".to_vec(),
        },
        Op::Delete {
            key: b"k3".to_vec(),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: make_value(1000094, 975),
                value: make_value(139, 139),
            },
            BatchOp::Delete {
                key: b"k34".to_vec(),
            },
        ]),
        Op::Put {
            key: b"k131".to_vec(),
            value: make_value(140, 209),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k162".to_vec(),
                value: b"93.B*SIFa8E@6BD,\"\"iOvpC%BFvj6hv~dOOK-+f&".to_vec(),
            },
            BatchOp::Put {
                key: b"k112\xff\xff".to_vec(),
                value: make_value(148, 348),
            },
            BatchOp::Delete {
                key: b"k33/suffix-of-medium-length".to_vec(),
            },
            BatchOp::Put {
                key: b"k4".to_vec(),
                value: make_value(149, 200),
            },
            BatchOp::Put {
                key: b"k10\x00".to_vec(),
                value: make_value(150, 114),
            },
            BatchOp::Put {
                key: b"k3".to_vec(),
                value: make_value(151, 78),
            },
            BatchOp::Delete { key: b"".to_vec() },
        ]),
        Op::IterOpen {
            lower: None,
            upper: Some(b"k".to_vec()),
            start: SeekStart::Last,
        },
        Op::Delete {
            key: make_value(1000065, 803),
        },
        Op::Put {
            key: b"k21\xff\xff".to_vec(),
            value: make_value(154, 1284),
        },
        Op::Put {
            key: b"k165\x00/suffix-of-medium-length".to_vec(),
            value: make_value(155, 1232),
        },
        Op::Put {
            key: b"k151".to_vec(),
            value: b"9d.uT&4i&8K4BM6S?024-F?N6sg5KR9/[M3Bv*w%6ZUJa2KsUIotIJR=`K%>ooUm".to_vec(),
        },
        Op::Put {
            key: b"k3".to_vec(),
            value: make_value(158, 220),
        },
        Op::IterStep {
            iter: 30,
            steps: vec![
                Step::Next,
                Step::Next,
                Step::Prev,
                Step::Next,
                Step::Next,
                Step::Prev,
                Step::Prev,
            ],
        },
    ];
    check_log(&ops);
}
