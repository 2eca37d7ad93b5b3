//! `nvm_profile`: the emulated cost of the NVM tier reaches every structure of the pool
//! (NoveLSM's NVM memtable and its WAL on NVM, MatrixKV's rows), is counted in the
//! statistics, and changes no data. Counters only, no timing: the machine is shared.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{check, nvm_dir, small_matrixkv_options, workload};
use mezzanine::options::{NvmMemtable, NvmProfile};
use mezzanine::{Db, Options, Preset};

fn novelsm(nvm: &Path, profile: NvmProfile) -> Options {
    let mut o = Options::preset(Preset::Novelsm);
    o.write_buffer_size = 64 << 10;
    o.nvm_memtable = NvmMemtable::Mutable;
    o.nvm_memtable_size = 1 << 20;
    o.nvm_capacity = 8 << 20;
    o.target_file_size = 64 << 10;
    o.max_bytes_for_level_base = 256 << 10;
    o.nvm_prefault = false;
    o.wal_on_nvm = true;
    o.nvm_dir = Some(nvm.to_path_buf());
    o.nvm_profile = profile;
    o
}

#[test]
fn optane_profile_charges_the_nvm_memtable_and_keeps_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let o = novelsm(nvm.path(), NvmProfile::Optane);
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        assert!(
            db.property("mezz.options")
                .unwrap()
                .contains("nvm_profile=optane")
        );
        workload(&db, &mut model, 3000, 0);
        let after_writes = db.stats();
        assert!(
            after_writes.nvm_emulated_write_accesses > 0,
            "NVM memtable inserts and WAL syncs are charged: {after_writes:?}"
        );
        check(&db, &model);
        let after_reads = db.stats();
        assert!(
            after_reads.nvm_emulated_read_accesses > after_writes.nvm_emulated_read_accesses,
            "gets and scans of the NVM memtable are charged"
        );
        // Every read access costs 224 ns more than DRAM: the delay counter grows with them.
        assert!(
            after_reads.nvm_emulated_delay_micros
                >= after_reads.nvm_emulated_read_accesses * 224 / 1000,
            "{after_reads:?}"
        );
        assert!(after_reads.nvm_emulated_delay_micros > after_writes.nvm_emulated_delay_micros);
        assert!(after_reads.to_string().contains("emulated NVM cost"));
        db.close().unwrap();
    }
    // Reopen (recovery reads the pool, charged too) and find the same data.
    let db = Db::open(dir.path(), o).unwrap();
    check(&db, &model);
    assert!(db.stats().nvm_emulated_read_accesses > 0);
    db.close().unwrap();
}

#[test]
fn dram_profile_charges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let db = Db::open(dir.path(), novelsm(nvm.path(), NvmProfile::Dram)).unwrap();
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 1000, 0);
    check(&db, &model);
    let s = db.stats();
    assert_eq!(
        (
            s.nvm_emulated_delay_micros,
            s.nvm_emulated_read_accesses,
            s.nvm_emulated_write_accesses
        ),
        (0, 0, 0)
    );
    assert!(!s.to_string().contains("emulated NVM cost"));
}

#[test]
fn cxl_profile_charges_matrix_rows() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = small_matrixkv_options(nvm.path());
    o.nvm_profile = NvmProfile::Cxl;
    let db = Db::open(dir.path(), o).unwrap();
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 4000, 0);
    db.flush().unwrap();
    check(&db, &model);
    let s = db.stats();
    assert!(
        s.matrix.rows_searched > 0 || s.matrix.row_bytes_written > 0,
        "{s:?}"
    );
    assert!(
        s.nvm_emulated_write_accesses > 0,
        "rows are persisted: {s:?}"
    );
    assert!(s.nvm_emulated_read_accesses > 0, "rows are read: {s:?}");
    // CXL charges 80 ns per access, reads and writes alike.
    let accesses = s.nvm_emulated_read_accesses + s.nvm_emulated_write_accesses;
    assert!(s.nvm_emulated_delay_micros >= accesses * 80 / 1000, "{s:?}");
}
