//! Tests of the option table and its text form. The files under `testdata/` are the
//! OPTIONS text of the default options, of each preset and of `changed()`, as written before
//! the options were declared in one table; the text form must not drift from them.

use std::path::PathBuf;
use std::sync::Arc;

use mezz_env::PosixFs;

use super::*;

/// A logger that drops every line.
#[derive(Debug)]
struct NoLog;

impl crate::info_log::Logger for NoLog {
    fn log(&self, _line: &str) {}
}

/// Options with every field (internal ones included) changed from its default.
fn changed() -> Options {
    Options {
        preset: Preset::Novelsm,
        fs: Arc::new(PosixFs::new()),
        info_log: Some(Arc::new(NoLog)),
        comparator: Some(Arc::new(mezz_format::order::ReverseBytewise)),
        create_if_missing: false,
        error_if_exists: true,
        paranoid_checks: true,
        recovery_mode: RecoveryMode::AbsoluteConsistency,
        write_buffer_size: 1_000_003,
        max_write_buffer_number: 3,
        use_wal: false,
        wal_mmap: false,
        mmap_reads: true,
        use_direct_reads: true,
        use_direct_io_for_flush_and_compaction: true,
        block_size: 8192,
        block_format: BlockFormat::Prefix,
        block_restart_interval: 8,
        bloom_bits_per_key: 12,
        compression: LevelCompression::per_level(vec![
            Compression::None,
            Compression::Lz4,
            Compression::Zstd,
        ]),
        zstd_level: 9,
        block_cache_capacity: 0,
        max_open_files: 500,
        target_file_size: 32 << 20,
        ssd_paths: vec![PathBuf::from("/mnt/ssd1/db"), PathBuf::from("/mnt/ssd2/db")],
        placement: PlacementPolicy::Striped,
        placement_wide_paths: 1,
        placement_write_pace: 1 << 20,
        num_levels: 5,
        level0_compaction_trigger: 3,
        level0_slowdown_trigger: 10,
        level0_stop_trigger: 12,
        max_bytes_for_level_base: 128 << 20,
        max_bytes_for_level_multiplier: 7.5,
        compaction_pri: CompactionPri::RoundRobin,
        seek_compaction: false,
        soft_pending_compaction_bytes: 1 << 30,
        hard_pending_compaction_bytes: 2 << 30,
        delayed_write_rate: 1 << 20,
        max_background_jobs: 4,
        background_nice: 7,
        nvm_dir: Some(PathBuf::from("/mnt/pmem/db")),
        nvm_capacity: 2 << 30,
        nvm_persistence: PersistMode::Adr,
        nvm_emulate_adr: true,
        nvm_profile: NvmProfile::Optane,
        nvm_read_latency_ns: 100,
        nvm_write_latency_ns: 300,
        nvm_persist_bandwidth: 1 << 30,
        nvm_prefault: false,
        nvm_sim: Some(SimNvm::new()),
        manual_background: true,
        wal_on_nvm: true,
        nvm_memtable: NvmMemtable::Immutable,
        nvm_memtable_size: 64 << 20,
        nvm_memtable_large_entry: 8 << 10,
        parallel_reads: true,
        nvm_tiering: NvmTiering::Leveled(2),
        nvm_table_method: NvmTableMethod::Ps,
        nvm_gc_live_ratio: 0.25,
        nvm_gc_pool_share: 0.75,
        matrix_bytes: 64 << 20,
        matrix_page_size: 64 << 10,
        matrix_switch_fraction: 0.5,
        matrix_hints: false,
        column_threads: 3,
    }
}

/// Every serialised field of `a` and `b` is equal.
fn assert_same_fields(a: &Options, b: &Options) {
    for f in Options::FIELDS {
        assert_eq!(a.get(f), b.get(f), "field {f}");
    }
}

/// With `MEZZ_BLESS` set, rewrites the golden files from the current option table (then
/// review the diff).
fn bless() {
    if std::env::var_os("MEZZ_BLESS").is_none() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/options/testdata");
    let write = |name: &str, o: &Options| std::fs::write(dir.join(name), o.to_text()).unwrap();
    write("default.txt", &Options::default());
    for p in Preset::ALL {
        write(&format!("{p}.txt"), &Options::preset(*p));
    }
    write("changed.txt", &changed());
}

#[test]
fn text_matches_the_golden_files() {
    bless();
    assert_eq!(
        Options::default().to_text(),
        include_str!("testdata/default.txt")
    );
    for p in Preset::ALL {
        let golden = match p {
            Preset::Leveldb => include_str!("testdata/leveldb.txt"),
            Preset::Novelsm => include_str!("testdata/novelsm.txt"),
            Preset::Tlsm => include_str!("testdata/tlsm.txt"),
            Preset::Matrixkv => include_str!("testdata/matrixkv.txt"),
            Preset::Mezzanine => include_str!("testdata/mezzanine.txt"),
        };
        assert_eq!(Options::preset(*p).to_text(), golden, "preset {p}");
    }
    assert_eq!(changed().to_text(), include_str!("testdata/changed.txt"));
}

#[test]
fn golden_files_parse_back() {
    for (text, want) in [
        (include_str!("testdata/default.txt"), Options::default()),
        (
            include_str!("testdata/leveldb.txt"),
            Options::preset(Preset::Leveldb),
        ),
        (
            include_str!("testdata/novelsm.txt"),
            Options::preset(Preset::Novelsm),
        ),
        (
            include_str!("testdata/tlsm.txt"),
            Options::preset(Preset::Tlsm),
        ),
        (
            include_str!("testdata/matrixkv.txt"),
            Options::preset(Preset::Matrixkv),
        ),
        (
            include_str!("testdata/mezzanine.txt"),
            Options::preset(Preset::Mezzanine),
        ),
        (include_str!("testdata/changed.txt"), changed()),
    ] {
        assert_same_fields(&Options::from_text(text).unwrap(), &want);
    }
}

#[test]
fn text_round_trips_default_presets_and_every_field_changed() {
    let mut all = vec![Options::default(), changed()];
    all.extend(Preset::ALL.iter().map(|p| Options::preset(*p)));
    for o in all {
        let t = o.to_text();
        let back = Options::from_text(&t).unwrap();
        assert_same_fields(&back, &o);
        assert_eq!(back.to_text(), t);
    }
}

#[test]
fn changed_differs_from_the_default_in_every_field() {
    let (d, c) = (Options::default(), changed());
    for f in Options::FIELDS {
        assert_ne!(d.get(f), c.get(f), "field {f}");
    }
    assert!(c.nvm_sim.is_some() && c.manual_background);
}

#[test]
fn every_name_round_trips_through_get_and_set() {
    let src = changed();
    for f in Options::FIELDS {
        let text = src.get(f).unwrap();
        let mut o = Options::default();
        o.set(f, &text).unwrap();
        assert_eq!(o.get(f).as_deref(), Some(text.as_str()), "field {f}");
        // Spaces around the value are ignored.
        let mut o = Options::default();
        o.set(f, &format!(" {text} ")).unwrap();
        assert_eq!(o.get(f).as_deref(), Some(text.as_str()), "field {f}");
    }
}

#[test]
fn fields_are_the_text_form_in_order() {
    let text = Options::default().to_text();
    let names: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert_eq!(names, Options::FIELDS);
    for internal in ["fs", "nvm_sim", "manual_background"] {
        assert!(!Options::FIELDS.contains(&internal), "{internal}");
        assert_eq!(Options::default().get(internal), None, "{internal}");
    }
}

/// The OPTIONS file of a database made before `nvm_profile` existed (no such line, the
/// per-line knobs set) still parses: the profile is `dram` and the knobs keep their values.
#[test]
fn options_files_without_nvm_profile_still_parse() {
    let old: String = include_str!("testdata/changed.txt")
        .lines()
        .filter(|l| !l.starts_with("nvm_profile="))
        .map(|l| format!("{l}\n"))
        .collect();
    let o = Options::from_text(&old).unwrap();
    assert_eq!(o.nvm_profile, NvmProfile::Dram);
    assert_eq!(o.nvm_read_latency_ns, 100);
    assert_eq!(o.nvm_write_latency_ns, 300);
    assert_eq!(o.nvm_persist_bandwidth, 1 << 30);
    let mut o = Options::default();
    o.set("nvm_profile", "OPTANE-6").unwrap();
    assert_eq!(o.get("nvm_profile").as_deref(), Some("optane-6"));
    let e = o.set("nvm_profile", "pcm").unwrap_err().to_string();
    assert!(e.contains("dram") && e.contains("cxl"), "{e}");
}

#[test]
fn unknown_and_internal_names_are_refused() {
    for name in ["no_such_option", "", "fs", "nvm_sim", "manual_background"] {
        let mut o = Options::default();
        match o.set(name, "1") {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains(&format!("{name:?}")), "{m}");
            }
            other => panic!("set({name:?}) gave {other:?}"),
        }
        assert!(o.get(name).is_none());
    }
    assert!(Options::from_text("no_such_option=1\n").is_err());
    assert!(Options::from_text("write_buffer_size\n").is_err());
}

#[test]
fn bad_values_name_the_option_and_the_value() {
    for (name, value) in [
        ("create_if_missing", "maybe"),
        ("write_buffer_size", "lots"),
        ("bloom_bits_per_key", "5000000000"),
        ("max_bytes_for_level_multiplier", "ten"),
        ("recovery_mode", "sloppy"),
        ("block_format", "columnar"),
        ("nvm_persistence", "tape"),
        ("nvm_profile", "pcm"),
        ("nvm_memtable", "sideways"),
        ("compression", "snappy"),
        ("compression", "lz4,,zstd"),
        ("zstd_level", "high"),
    ] {
        let mut o = Options::default();
        match o.set(name, value) {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains(name) && m.contains(value), "{m}");
            }
            other => panic!("set({name}, {value}) gave {other:?}"),
        }
    }
}

#[test]
fn preset_resets_serialised_fields_and_keeps_internal_ones() {
    let mut o = changed();
    let fs = Arc::clone(&o.fs);
    o.set("preset", "leveldb").unwrap();
    assert_same_fields(&o, &Options::preset(Preset::Leveldb));
    assert!(Arc::ptr_eq(&o.fs, &fs));
    assert!(o.nvm_sim.is_some());
    assert!(o.manual_background);
}

#[test]
fn table_checks_name_their_field() {
    for (name, value, want) in [
        ("write_buffer_size", "10", "write_buffer_size 10 < 4096"),
        (
            "max_write_buffer_number",
            "1",
            "max_write_buffer_number must be >= 2",
        ),
        ("block_size", "100", "block_size 100 not in 256..=64MiB"),
        ("num_levels", "40", "num_levels 40 not in 2..=32"),
        (
            "max_bytes_for_level_multiplier",
            "1.5",
            "max_bytes_for_level_multiplier 1.5 not in 2..=1000",
        ),
        (
            "max_bytes_for_level_multiplier",
            "NaN",
            "max_bytes_for_level_multiplier NaN not in 2..=1000",
        ),
        ("delayed_write_rate", "0", "delayed_write_rate must be > 0"),
        ("zstd_level", "0", "zstd_level 0 not in 1..=22"),
        ("zstd_level", "23", "zstd_level 23 not in 1..=22"),
    ] {
        let mut o = Options::default();
        o.set(name, value).unwrap();
        match o.validate() {
            Err(Error::InvalidArgument(m)) => assert_eq!(m, want),
            other => panic!("{name}={value}: {other:?}"),
        }
    }
}

#[test]
fn options_and_read_options_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Options>();
    send_sync::<ReadOptions>();
    send_sync::<WriteOptions>();
    send_sync::<Snapshot>();
}

#[test]
fn default_validates_and_roundtrips() {
    let o = Options::default();
    o.validate().unwrap();
    let t = o.to_text();
    let o2 = Options::from_text(&t).unwrap();
    assert_eq!(o2.to_text(), t);
}

#[test]
fn set_parses_sizes_and_rejects_junk() {
    let mut o = Options::default();
    o.set("write_buffer_size", "4M").unwrap();
    assert_eq!(o.write_buffer_size, 4 << 20);
    o.set("block_format", "prefix").unwrap();
    assert_eq!(o.block_format, BlockFormat::Prefix);
    assert!(o.set("write_buffer_size", "lots").is_err());
    assert!(o.set("no_such_option", "1").is_err());
    assert!(o.set("preset", "nope").is_err());
}

#[test]
fn compression_is_per_level_with_the_last_entry_repeating() {
    let mut o = Options::default();
    assert_eq!(o.compression, LevelCompression::none());
    assert_eq!(o.get("compression").as_deref(), Some("none"));
    for level in 0..MAX_NUM_LEVELS {
        assert_eq!(o.compression.for_level(level), Compression::None);
    }
    o.set("compression", "lz4").unwrap();
    assert_eq!(o.compression.for_level(0), Compression::Lz4);
    assert_eq!(o.compression.for_level(6), Compression::Lz4);
    o.set("compression", " none, none ,lz4,lz4,zstd ").unwrap();
    assert_eq!(
        o.get("compression").as_deref(),
        Some("none,none,lz4,lz4,zstd")
    );
    let want = [
        Compression::None,
        Compression::None,
        Compression::Lz4,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Zstd,
        Compression::Zstd,
    ];
    for (level, c) in want.iter().enumerate() {
        assert_eq!(o.compression.for_level(level), *c, "level {level}");
    }
    assert_eq!(o.compression.for_level(100), Compression::Zstd);
    o.validate().unwrap();
    // More entries than levels is a mistake.
    o.set("compression", "none,lz4,lz4,lz4,lz4,lz4,lz4,zstd")
        .unwrap();
    let e = o.validate().unwrap_err();
    assert!(e.to_string().contains("compression lists 8 levels"), "{e}");
    o.set("num_levels", "8").unwrap();
    o.validate().unwrap();
    assert!(o.set("compression", "").is_err());
}

#[test]
fn validate_rejects_inconsistent_triggers() {
    let o = Options {
        level0_stop_trigger: 2,
        ..Options::default()
    };
    let e = o.validate().unwrap_err();
    assert!(e.to_string().contains("level0_stop_trigger"), "{e}");
}

#[test]
fn only_a_mutable_nvm_memtable_needs_a_wal() {
    let mut o = Options {
        use_wal: false,
        nvm_dir: Some("nvm".into()),
        ..Options::default()
    };
    o.set("nvm_memtable", "mutable").unwrap();
    let e = o.validate().unwrap_err();
    assert!(e.to_string().contains("use_wal"), "{e}");
    o.set("nvm_memtable", "immutable").unwrap();
    o.validate().unwrap();
}

/// A matrix container composes with NVM tables under it (`lru`, `leveled:K` with K >= 1,
/// `none`), and without them (`off`); `leveled:0` (NVM tables for L0 alone, which the
/// container is) is refused with a message that names both options.
#[test]
fn a_matrix_container_composes_with_nvm_tables_below_l0() {
    let container = |tiering: &str| {
        let mut o = Options::preset(Preset::Matrixkv);
        o.nvm_dir = Some("nvm".into());
        o.set("nvm_tiering", tiering).unwrap();
        assert!(o.matrix_bytes > 0);
        o
    };
    for tiering in ["off", "lru", "lru:64M", "leveled:1", "leveled:2", "none"] {
        container(tiering)
            .validate()
            .unwrap_or_else(|e| panic!("matrix_bytes with nvm_tiering={tiering}: {e}"));
    }
    let e = container("leveled:0").validate().unwrap_err().to_string();
    assert!(e.contains("matrix_bytes"), "{e}");
    assert!(e.contains("nvm_tiering=leveled:0"), "{e}");
    // The same refusal without a container is not one: leveled:0 alone is TLSM's L0.
    let mut plain = Options::preset(Preset::Tlsm);
    plain.nvm_dir = Some("nvm".into());
    plain.set("nvm_tiering", "leveled:0").unwrap();
    assert_eq!(plain.matrix_bytes, 0);
    plain.validate().unwrap();
    // The mezzanine preset validates with an NVM directory, with a container added over
    // its NVM tables too, and then refuses leveled:0 like any container.
    let mut m = Options::preset(Preset::Mezzanine);
    assert!(m.nvm_tiering.enabled() && m.nvm_memtable == NvmMemtable::Overflow);
    assert!(m.validate().unwrap_err().to_string().contains("nvm_dir"));
    m.nvm_dir = Some("nvm".into());
    m.validate().unwrap();
    m.set("matrix_bytes", "256M").unwrap();
    m.validate().unwrap();
    m.set("nvm_tiering", "leveled:0").unwrap();
    let e = m.validate().unwrap_err().to_string();
    assert!(
        e.contains("matrix_bytes") && e.contains("nvm_tiering"),
        "{e}"
    );
}

/// A container's pages follow the memtable size (about 256 pages per row, 4 KiB to
/// 256 KiB) unless `matrix_page_size` names them; 0 is accepted, a page size that is not a
/// power of two is not.
#[test]
fn matrix_pages_follow_the_memtable_size() {
    let pages = |wbs: usize| {
        Options {
            write_buffer_size: wbs,
            ..Options::default()
        }
        .matrix_page_bytes()
    };
    assert_eq!(pages(64 << 20), 256 << 10);
    assert_eq!(pages(1 << 30), 256 << 10);
    assert_eq!(pages(4 << 20), 16 << 10);
    assert_eq!(pages(3 << 20), 8 << 10);
    assert_eq!(pages(2 << 20), 8 << 10);
    assert_eq!(pages(1 << 20), 4 << 10);
    assert_eq!(pages(32 << 10), 4 << 10);
    let named = Options {
        write_buffer_size: 2 << 20,
        matrix_page_size: 64 << 10,
        ..Options::default()
    };
    assert_eq!(named.matrix_page_bytes(), 64 << 10);
    let mut o = Options::default();
    o.set("matrix_page_size", "0").unwrap();
    o.validate().unwrap();
    o.set("matrix_page_size", "3000").unwrap();
    assert!(o.validate().is_err());
    o.set("matrix_page_size", "8192").unwrap();
    o.validate().unwrap();
    assert_eq!(o.matrix_page_bytes(), 8192);
}
