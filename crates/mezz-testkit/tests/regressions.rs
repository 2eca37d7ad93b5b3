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

/// Regression (CI, metamorphic seed 1 under matrixkv/nvm-immutable-memtable+manual): after a
/// reopen left an SST beside the rows in L0, writers stopped on the container's bytes
/// although no column could run, and a write failed with "no flush or compaction is due".
#[test]
fn matrixkv_stop_with_an_sst_in_l0() {
    let ops = vec![
        Op::Put {
            key: b"k68".to_vec(),
            value: make_value(560, 149),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k76".to_vec(),
                value: make_value(561, 11498),
            },
            BatchOp::Put {
                key: b"k107".to_vec(),
                value: b"232.B0M\\Zwl/".to_vec(),
            },
            BatchOp::Put {
                key: b"k182\xff\xff".to_vec(),
                value: make_value(563, 188),
            },
        ]),
        Op::Reopen,
        Op::Put {
            key: b"k14\xff\xff".to_vec(),
            value: make_value(564, 137),
        },
        Op::Put {
            key: b"k124".to_vec(),
            value: b"235.\\G`QanfalJhwrIMO>;O<w8);@Of\"TUW9I]_)UhTsR!w8ute".to_vec(),
        },
        Op::Get {
            key: b"k37".to_vec(),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k18".to_vec(),
                value: b"".to_vec(),
            },
            BatchOp::Put {
                key: b"k50\x00".to_vec(),
                value: make_value(567, 129),
            },
            BatchOp::Put {
                key: b"k178".to_vec(),
                value: make_value(568, 2012),
            },
            BatchOp::Put {
                key: b"k24".to_vec(),
                value: make_value(569, 1834),
            },
            BatchOp::Put {
                key: b"k14\xff\xff".to_vec(),
                value: make_value(570, 11280),
            },
            BatchOp::Put {
                key: b"k190\x00".to_vec(),
                value: make_value(571, 1004),
            },
            BatchOp::Delete {
                key: b"k102".to_vec(),
            },
            BatchOp::Put {
                key: b"k106".to_vec(),
                value: make_value(572, 1548),
            },
        ]),
        Op::Delete {
            key: b"k175\x00\xff\xff".to_vec(),
        },
        Op::Put {
            key: b"k4".to_vec(),
            value: b"".to_vec(),
        },
        Op::Delete {
            key: b"k14\xff\xff".to_vec(),
        },
        Op::ReadAtSnapshot {
            snapshot: 4,
            key: b"k190\x00".to_vec(),
            lower: Some(b"k34X".to_vec()),
            upper: None,
            reverse: false,
            limit: 1,
        },
        Op::Put {
            key: b"k95\x00".to_vec(),
            value: b"23e.N".to_vec(),
        },
        Op::Delete {
            key: b"k37".to_vec(),
        },
        Op::Walk {
            lower: Some(b"k120\x00".to_vec()),
            upper: Some(b"k162".to_vec()),
            start: SeekStart::Seek(b"k145\x00".to_vec()),
            steps: vec![Step::Next, Step::Next, Step::Prev, Step::Prev, Step::Next],
        },
        Op::Put {
            key: b"k199".to_vec(),
            value: make_value(598, 836),
        },
        Op::Put {
            key: b"k151".to_vec(),
            value: make_value(599, 144),
        },
        Op::Get {
            key: b"k57".to_vec(),
        },
        Op::Delete {
            key: b"k150\x00".to_vec(),
        },
        Op::Put {
            key: b"k8".to_vec(),
            value: make_value(600, 956),
        },
        Op::Put {
            key: b"k12".to_vec(),
            value: make_value(601, 249),
        },
        Op::Put {
            key: b"k13".to_vec(),
            value: make_value(602, 1065),
        },
        Op::Delete {
            key: b"k104".to_vec(),
        },
        Op::Delete {
            key: b"k39".to_vec(),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k57".to_vec(),
                value: b"25b.<:".to_vec(),
            },
            BatchOp::Put {
                key: b"k68".to_vec(),
                value: make_value(604, 151),
            },
            BatchOp::Put {
                key: b"k13".to_vec(),
                value: b"25d.!v1nk+tn9QlROzc`vy%`4:1_8Gpi@w@Z0s57#3P;[RQ:erV;s`Z~G(".to_vec(),
            },
            BatchOp::Delete {
                key: b"k161\xff\xff".to_vec(),
            },
            BatchOp::Put {
                key: b"k173".to_vec(),
                value: b"25e.[{Y84#".to_vec(),
            },
            BatchOp::Put {
                key: b"k5\x00".to_vec(),
                value: make_value(607, 72),
            },
        ]),
        Op::Put {
            key: b"k48".to_vec(),
            value: b"260.s4JH_Q.".to_vec(),
        },
        Op::Put {
            key: b"k52".to_vec(),
            value: make_value(609, 252),
        },
        Op::Put {
            key: b"k54".to_vec(),
            value: b"262".to_vec(),
        },
        Op::Put {
            key: b"k37".to_vec(),
            value: make_value(611, 11307),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k148".to_vec(),
                value: make_value(612, 236),
            },
            BatchOp::Put {
                key: b"k157".to_vec(),
                value: b"265.jVRWy".to_vec(),
            },
            BatchOp::Put {
                key: b"k59".to_vec(),
                value: b"266.ni[Cb]".to_vec(),
            },
            BatchOp::Delete {
                key: b"k4".to_vec(),
            },
        ]),
        Op::Walk {
            lower: None,
            upper: Some(b"k93".to_vec()),
            start: SeekStart::Last,
            steps: vec![
                Step::Prev,
                Step::Next,
                Step::Next,
                Step::Prev,
                Step::Next,
                Step::Next,
            ],
        },
        Op::Delete {
            key: b"k169".to_vec(),
        },
        Op::Delete {
            key: b"k15\x00".to_vec(),
        },
        Op::Put {
            key: b"k30\x00".to_vec(),
            value: make_value(615, 971),
        },
        Op::Put {
            key: b"k155\x00".to_vec(),
            value: b"268.!T".to_vec(),
        },
        Op::Delete {
            key: make_value(1000181, 590),
        },
        Op::Put {
            key: b"k166".to_vec(),
            value: b"269.gNw*S?ve.]hl=+be'+V".to_vec(),
        },
        Op::Put {
            key: b"k14\xff\xff".to_vec(),
            value: make_value(618, 183),
        },
        Op::Get {
            key: b"k187/suffix-of-medium-length".to_vec(),
        },
        Op::Put {
            key: b"k116".to_vec(),
            value: make_value(619, 206),
        },
        Op::Put {
            key: b"k84\xff\xff".to_vec(),
            value: b"".to_vec(),
        },
        Op::IterOpen {
            lower: None,
            upper: Some(b"\xff".to_vec()),
            start: SeekStart::Seek(b"k147\xff\xff".to_vec()),
        },
        Op::Put {
            key: b"k11/suffix-of-medium-length".to_vec(),
            value: make_value(621, 226),
        },
        Op::Put {
            key: b"k32".to_vec(),
            value: make_value(622, 77),
        },
        Op::Batch(vec![BatchOp::Put {
            key: b"k110\x00/suffix-of-medium-length".to_vec(),
            value: make_value(623, 114),
        }]),
        Op::ReleaseSnapshot { snapshot: 35 },
        Op::Put {
            key: b"k116".to_vec(),
            value: make_value(624, 235),
        },
        Op::Put {
            key: b"k196\xff\xff".to_vec(),
            value: make_value(625, 1170),
        },
        Op::Get {
            key: b"k98\xff\xff".to_vec(),
        },
        Op::Delete {
            key: b"k8".to_vec(),
        },
        Op::Delete {
            key: b"k11/suffix-of-medium-length".to_vec(),
        },
        Op::Background { jobs: 4 },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k8".to_vec(),
                value: make_value(626, 96),
            },
            BatchOp::Put {
                key: b"k66/suffix-of-medium-length".to_vec(),
                value: b"273.t,".to_vec(),
            },
            BatchOp::Put {
                key: b"k86".to_vec(),
                value: make_value(628, 170),
            },
            BatchOp::Put {
                key: b"k4".to_vec(),
                value: b"275.[y$c$>0;\"']9M~:F!OCJzZS_^m.qy>Hs\\ojKA(>wc\\em".to_vec(),
            },
        ]),
        Op::Put {
            key: make_value(1000007, 459),
            value: make_value(630, 566),
        },
        Op::Walk {
            lower: Some(b"k113".to_vec()),
            upper: Some(b"\xff\xff".to_vec()),
            start: SeekStart::Last,
            steps: vec![
                Step::Next,
                Step::Next,
                Step::Next,
                Step::Prev,
                Step::Prev,
                Step::Prev,
                Step::Next,
                Step::Next,
                Step::Prev,
                Step::Prev,
                Step::Next,
            ],
        },
        Op::Get {
            key: b"k4".to_vec(),
        },
        Op::Put {
            key: b"k6".to_vec(),
            value: b"277._d2KolJ*z\\6/EOd+(-W}-*K|5NEW&SO[%[PtKKJZ%|+Enm82oT)+".to_vec(),
        },
        Op::Put {
            key: b"k3".to_vec(),
            value: make_value(632, 844),
        },
        Op::Get {
            key: b"k10\x00".to_vec(),
        },
        Op::IterStep {
            iter: 46,
            steps: vec![Step::Next, Step::Next, Step::Next, Step::Prev, Step::Next],
        },
        Op::Put {
            key: b"k194".to_vec(),
            value: make_value(633, 1607),
        },
        Op::Get {
            key: b"k191".to_vec(),
        },
        Op::Put {
            key: b"k1".to_vec(),
            value: make_value(634, 198),
        },
        Op::Batch(vec![BatchOp::Put {
            key: b"k86".to_vec(),
            value: make_value(635, 95),
        }]),
        Op::Put {
            key: b"k17".to_vec(),
            value: b"27c.x!S=%+0*\\C1KmP*?>08eT*\"q}ZdgPZXaI+>>Q)H9IdPn{eU|BDm'Fy[".to_vec(),
        },
        Op::Put {
            key: b"k106".to_vec(),
            value: b"27d.&".to_vec(),
        },
        Op::Put {
            key: b"k11/suffix-of-medium-length".to_vec(),
            value: make_value(638, 169),
        },
        Op::Get {
            key: b"k43".to_vec(),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k159".to_vec(),
                value: make_value(639, 238),
            },
            BatchOp::Delete {
                key: b"k46".to_vec(),
            },
            BatchOp::Put {
                key: b"k10\x00".to_vec(),
                value: make_value(640, 147),
            },
        ]),
        Op::Get {
            key: b"k13".to_vec(),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k9".to_vec(),
                value: make_value(641, 175),
            },
            BatchOp::Delete {
                key: b"k30\x00".to_vec(),
            },
            BatchOp::Put {
                key: b"k145\x00".to_vec(),
                value: make_value(642, 238),
            },
            BatchOp::Delete { key: b"".to_vec() },
            BatchOp::Put {
                key: b"k56\xff\xff".to_vec(),
                value: make_value(643, 170),
            },
        ]),
        Op::Get {
            key: b"k66/suffix-of-medium-length".to_vec(),
        },
        Op::Put {
            key: b"k188".to_vec(),
            value: b"284.I&fnrVFO)TS".to_vec(),
        },
        Op::Get {
            key: b"k186".to_vec(),
        },
        Op::Put {
            key: b"k151".to_vec(),
            value: b"285".to_vec(),
        },
        Op::Put {
            key: b"k4".to_vec(),
            value: b"286.#9$}".to_vec(),
        },
        Op::Get {
            key: b"k11/suffix-of-medium-length".to_vec(),
        },
        Op::Get {
            key: b"k5\x00".to_vec(),
        },
        Op::Put {
            key: b"k193".to_vec(),
            value: b"287.J+#:OA{ta".to_vec(),
        },
        Op::Put {
            key: b"k71".to_vec(),
            value: make_value(648, 589),
        },
        Op::Get {
            key: b"k150\x00".to_vec(),
        },
        Op::Put {
            key: b"k14\xff\xff".to_vec(),
            value: make_value(649, 12163),
        },
        Op::Put {
            key: b"k151".to_vec(),
            value: make_value(650, 250),
        },
        Op::Delete {
            key: b"k3".to_vec(),
        },
        Op::IterStep {
            iter: 38,
            steps: vec![
                Step::Prev,
                Step::Next,
                Step::Prev,
                Step::Prev,
                Step::Next,
                Step::Next,
                Step::Next,
                Step::Next,
                Step::Next,
                Step::Prev,
            ],
        },
        Op::IterOpen {
            lower: None,
            upper: Some(b"k16".to_vec()),
            start: SeekStart::Seek(b"\xff\xff\xff".to_vec()),
        },
        Op::Batch(vec![
            BatchOp::Delete {
                key: b"k2".to_vec(),
            },
            BatchOp::Put {
                key: b"k98\xff\xff".to_vec(),
                value: make_value(651, 1575),
            },
            BatchOp::Put {
                key: b"k51".to_vec(),
                value: b"".to_vec(),
            },
        ]),
        Op::Put {
            key: b"k9".to_vec(),
            value: make_value(653, 190),
        },
        Op::Put {
            key: b"k163".to_vec(),
            value: make_value(654, 127),
        },
        Op::Delete {
            key: b"k6".to_vec(),
        },
        Op::Put {
            key: make_value(1000007, 459),
            value: make_value(655, 142),
        },
        Op::Put {
            key: make_value(1000123, 246),
            value: make_value(656, 191),
        },
        Op::Background { jobs: 4 },
        Op::IterOpen {
            lower: None,
            upper: None,
            start: SeekStart::SeekForPrev(b"k50\x00".to_vec()),
        },
        Op::Put {
            key: b"k1".to_vec(),
            value: b"291.[E=$+#`1=".to_vec(),
        },
        Op::Iterate {
            lower: None,
            upper: Some(b"k162R".to_vec()),
            reverse: false,
            limit: 34,
        },
        Op::Put {
            key: b"k11/suffix-of-medium-length".to_vec(),
            value: make_value(658, 1310),
        },
        Op::Walk {
            lower: None,
            upper: None,
            start: SeekStart::Seek(b"k154\xff\xff/suffix-of-medium-length8".to_vec()),
            steps: vec![Step::Prev, Step::Next, Step::Prev],
        },
        Op::Put {
            key: b"k1".to_vec(),
            value: make_value(659, 69),
        },
        Op::Get { key: b"".to_vec() },
        Op::Put {
            key: b"k22/suffix-of-medium-length".to_vec(),
            value: b"294.TAq=Essw".to_vec(),
        },
        Op::Put {
            key: b"k141".to_vec(),
            value: b"".to_vec(),
        },
        Op::Put {
            key: b"k9".to_vec(),
            value: make_value(662, 182),
        },
        Op::Put {
            key: b"k80\x00".to_vec(),
            value: b"297.D2".to_vec(),
        },
        Op::Walk {
            lower: None,
            upper: Some(b"k66/suffix-of-medium-length".to_vec()),
            start: SeekStart::SeekForPrev(b"k8".to_vec()),
            steps: vec![Step::Next],
        },
        Op::Get {
            key: b"k23".to_vec(),
        },
        Op::Put {
            key: b"k194".to_vec(),
            value: b"299.".to_vec(),
        },
        Op::Put {
            key: make_value(1000181, 590),
            value: make_value(666, 240),
        },
        Op::Get {
            key: b"k8".to_vec(),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k8".to_vec(),
                value: make_value(667, 125),
            },
            BatchOp::Delete {
                key: b"k159".to_vec(),
            },
            BatchOp::Delete {
                key: b"k119\xff\xff".to_vec(),
            },
            BatchOp::Delete {
                key: make_value(1000094, 975),
            },
            BatchOp::Put {
                key: b"k6".to_vec(),
                value: make_value(668, 1601),
            },
            BatchOp::Put {
                key: b"k1".to_vec(),
                value: make_value(669, 221),
            },
        ]),
        Op::Get {
            key: make_value(1000007, 459),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k8".to_vec(),
                value: make_value(670, 168),
            },
            BatchOp::Put {
                key: b"k199".to_vec(),
                value: make_value(671, 231),
            },
            BatchOp::Put {
                key: b"k2".to_vec(),
                value: b"2a0.>ZnI(l*q<lT".to_vec(),
            },
            BatchOp::Put {
                key: b"k3".to_vec(),
                value: b"2a1.bpXK}PDVjuanj'ab-tn+~ewAl/nHc`".to_vec(),
            },
            BatchOp::Delete {
                key: b"k43".to_vec(),
            },
            BatchOp::Put {
                key: b"k25\x00".to_vec(),
                value: make_value(674, 1829),
            },
            BatchOp::Delete {
                key: b"k187/suffix-of-medium-length".to_vec(),
            },
        ]),
        Op::Put {
            key: b"k11/suffix-of-medium-length".to_vec(),
            value: make_value(675, 1429),
        },
        Op::Put {
            key: b"k2".to_vec(),
            value: b"2a4.@,+|Y".to_vec(),
        },
        Op::Put {
            key: b"k136".to_vec(),
            value: b"".to_vec(),
        },
        Op::Put {
            key: b"k5\x00".to_vec(),
            value: b"2ac.bF0|dPlIM-==e?)ASj4e,hl3xjE".to_vec(),
        },
        Op::ReadAtSnapshot {
            snapshot: 50,
            key: b"k140\x00\xff\xff".to_vec(),
            lower: Some(b"k39".to_vec()),
            upper: None,
            reverse: true,
            limit: 19,
        },
        Op::Get {
            key: b"k28\xff\xff".to_vec(),
        },
        Op::Put {
            key: b"k2".to_vec(),
            value: make_value(685, 91),
        },
        Op::Get {
            key: b"k184".to_vec(),
        },
        Op::Put {
            key: b"k162".to_vec(),
            value: b"2ae.Xw".to_vec(),
        },
        Op::Put {
            key: b"k3".to_vec(),
            value: b"2af.R$RlTZ".to_vec(),
        },
        Op::Put {
            key: b"k98\xff\xff".to_vec(),
            value: make_value(688, 253),
        },
        Op::Put {
            key: b"k10\x00".to_vec(),
            value: b"2b1.5".to_vec(),
        },
        Op::IterStep {
            iter: 26,
            steps: vec![Step::Prev, Step::Prev, Step::Prev, Step::Next],
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k121/suffix-of-medium-length".to_vec(),
                value: b"2b2.9:.d~H'E5".to_vec(),
            },
            BatchOp::Put {
                key: b"k169".to_vec(),
                value: make_value(691, 168),
            },
            BatchOp::Put {
                key: b"k14\xff\xff".to_vec(),
                value: make_value(692, 153),
            },
            BatchOp::Put {
                key: b"k161\xff\xff".to_vec(),
                value: make_value(693, 100),
            },
            BatchOp::Put {
                key: b"k68".to_vec(),
                value: b"2b6.a$o1pU/".to_vec(),
            },
            BatchOp::Put {
                key: make_value(1000152, 418),
                value: b"".to_vec(),
            },
        ]),
        Op::Walk {
            lower: None,
            upper: Some(b"k131".to_vec()),
            start: SeekStart::Seek(b"k29".to_vec()),
            steps: vec![],
        },
        Op::TakeSnapshot,
        Op::Put {
            key: b"k12".to_vec(),
            value: b"2b8.@Ieia".to_vec(),
        },
        Op::Get {
            key: b"k6".to_vec(),
        },
        Op::Batch(vec![BatchOp::Put {
            key: b"k189\xff\xff".to_vec(),
            value: make_value(697, 1561),
        }]),
        Op::Put {
            key: b"k74".to_vec(),
            value: make_value(698, 223),
        },
        Op::Put {
            key: b"k4".to_vec(),
            value: make_value(699, 182),
        },
        Op::CompactRange {
            begin: Some(b"k113\xbb".to_vec()),
            end: Some(b"\xff".to_vec()),
        },
        Op::Iterate {
            lower: None,
            upper: None,
            reverse: false,
            limit: 19,
        },
        Op::Put {
            key: b"k57".to_vec(),
            value: make_value(700, 149),
        },
        Op::Reopen,
        Op::Get {
            key: b"k120\x00".to_vec(),
        },
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k5\x00".to_vec(),
                value: b"2c4.N4kp:<z^}013@b=/&fOO".to_vec(),
            },
            BatchOp::Put {
                key: make_value(1000181, 590),
                value: make_value(709, 125),
            },
            BatchOp::Put {
                key: b"k187/suffix-of-medium-length".to_vec(),
                value: make_value(710, 11901),
            },
            BatchOp::Put {
                key: b"k6".to_vec(),
                value: b"2".to_vec(),
            },
            BatchOp::Put {
                key: b"k107".to_vec(),
                value: make_value(712, 106),
            },
            BatchOp::Delete {
                key: b"k4".to_vec(),
            },
            BatchOp::Put {
                key: b"k128".to_vec(),
                value: make_value(713, 10685),
            },
        ]),
        Op::Batch(vec![
            BatchOp::Put {
                key: b"k4".to_vec(),
                value: make_value(714, 108),
            },
            BatchOp::Delete {
                key: b"k177".to_vec(),
            },
            BatchOp::Delete {
                key: b"k2".to_vec(),
            },
            BatchOp::Put {
                key: b"k11/suffix-of-medium-length".to_vec(),
                value: make_value(715, 94),
            },
            BatchOp::Put {
                key: b"k6".to_vec(),
                value: b"2cc.#B-dglxmFe4/'Fu,g$I1h;g,".to_vec(),
            },
            BatchOp::Delete {
                key: b"k6".to_vec(),
            },
            BatchOp::Put {
                key: b"k115\x00".to_vec(),
                value: make_value(717, 164),
            },
        ]),
        Op::Background { jobs: 2 },
        Op::Reopen,
        Op::Put {
            key: b"k8".to_vec(),
            value: make_value(718, 252),
        },
    ];
    check_log(&ops);
}
