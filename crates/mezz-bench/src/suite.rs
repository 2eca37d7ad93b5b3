//! Several engines and sweep points in one command: the benchmark list runs once per
//! (engine, point), each time on a fresh database, then one comparison table is printed and,
//! if asked, the plots are drawn.
//!
//! Directories: without `--db`, each (engine, point) gets a temporary directory. With
//! `--db D`, it runs in `D`, `D/<engine>` when several engines run, and `.../<point>` when
//! several sweep points run (each prepared by the same rules as a single run: absent, empty
//! or the engine's own database, which is destroyed). With an NVM directory `N` and several
//! engines or points, each (engine, point) gets a new temporary directory under
//! `N/<engine>`, removed after its run, so that no run sees another's NVM files; a single
//! run uses `N` itself (so `--use-existing` finds its data).
//!
//! Thread-safety: called from one thread; each run is [`crate::runner::run`].

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::engine::EngineFactory;
use crate::engines::EngineSetup;
use crate::error::{BenchError, Result};
use crate::report::BenchResult;
use crate::runner::{BenchConfig, run};

/// Builds an engine's factory for a run whose NVM directory is the argument.
pub type MakeFactory<'a> = Box<dyn Fn(Option<&Path>) -> Result<Box<dyn EngineFactory>> + 'a>;

/// How to build one engine's factory, given the NVM directory its run should use.
pub struct EngineSpec<'a> {
    /// The engine's name (used for its subdirectories and in the table).
    pub name: String,
    /// Builds the factory for a run whose NVM directory is the argument.
    pub make: MakeFactory<'a>,
}

impl std::fmt::Debug for EngineSpec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EngineSpec({})", self.name)
    }
}

/// The sweep: value sizes and key counts to run at (empty = the configuration's own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Value sizes (`--value-size-sweep`); also the YCSB record size at each point.
    pub value_sizes: Vec<usize>,
    /// Key counts (`--num-sweep`).
    pub nums: Vec<u64>,
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPoint {
    /// Value size (`None`: the configuration's).
    pub value_size: Option<usize>,
    /// Key count (`None`: the configuration's).
    pub num: Option<u64>,
}

impl SweepPoint {
    /// The label of the point, e.g. `value_size=256,num=1000000` (`None` when nothing is
    /// swept).
    #[must_use]
    pub fn label(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(v) = self.value_size {
            parts.push(format!("value_size={v}"));
        }
        if let Some(n) = self.num {
            parts.push(format!("num={n}"));
        }
        (!parts.is_empty()).then(|| parts.join(","))
    }

    /// The point as a directory name.
    #[must_use]
    pub fn dir_name(&self) -> String {
        self.label()
            .unwrap_or_else(|| "run".into())
            .replace('=', "-")
            .replace(',', "_")
    }
}

impl Sweep {
    /// Every point: the cross product of the value sizes and the key counts.
    #[must_use]
    pub fn points(&self) -> Vec<SweepPoint> {
        let vs: Vec<Option<usize>> = if self.value_sizes.is_empty() {
            vec![None]
        } else {
            self.value_sizes.iter().copied().map(Some).collect()
        };
        let ns: Vec<Option<u64>> = if self.nums.is_empty() {
            vec![None]
        } else {
            self.nums.iter().copied().map(Some).collect()
        };
        vs.iter()
            .flat_map(|&value_size| ns.iter().map(move |&num| SweepPoint { value_size, num }))
            .collect()
    }
}

/// The knobs of `setup` as JSON (embedded in every result's configuration).
#[must_use]
pub fn setup_json(setup: &EngineSetup) -> serde_json::Value {
    serde_json::json!({
        "write_buffer_size": setup.write_buffer_size,
        "block_cache_bytes": setup.block_cache_bytes,
        "bloom_bits": setup.bloom_bits,
        "nvm_dir": setup.nvm_dir.as_ref().map(|p| p.display().to_string()),
        "sync": setup.sync,
        "compress": setup.compress,
        "direct_io": setup.direct_io,
        "nvm_budget_bytes": setup.nvm_bytes,
    })
}

/// Runs the benchmarks of `cfg` for every engine of `engines` at every point of `sweep`,
/// printing each run's report and, when more than one (engine, point) ran, a comparison
/// table; draws plots into `plot_dir` if given. Returns every result.
///
/// # Errors
/// No engine, `--use-existing` with several engines or points, or the first error of a run
/// or of the plots.
pub fn run_suite(
    cfg: &BenchConfig,
    engines: &[EngineSpec<'_>],
    sweep: &Sweep,
    plot_dir: Option<&Path>,
    out: &mut dyn Write,
) -> Result<Vec<BenchResult>> {
    let out_err = |e: std::io::Error| BenchError::io("<stdout>", e);
    if engines.is_empty() {
        return Err(BenchError::InvalidArgument("no engine given".into()));
    }
    let points = sweep.points();
    let several_engines = engines.len() > 1;
    let several_points = points.len() > 1;
    if cfg.use_existing && (several_engines || several_points) {
        return Err(BenchError::InvalidArgument(
            "--use-existing benchmarks one existing database: it cannot be combined with \
             several engines or sweep points"
                .into(),
        ));
    }
    if sweep.value_sizes.contains(&0) || sweep.nums.contains(&0) {
        return Err(BenchError::InvalidArgument(
            "sweep values must be positive".into(),
        ));
    }
    let mut results = Vec::new();
    for e in engines {
        for p in &points {
            let mut c = cfg.clone();
            if let Some(v) = p.value_size {
                c.value_size = v;
                c.ycsb.record_size = v;
            }
            if let Some(n) = p.num {
                c.num = n;
            }
            c.point = p.label();
            c.engine_label = Some(e.name.clone());
            c.db = cfg
                .db
                .as_deref()
                .map(|d| run_dir(d, &e.name, p, engines.len(), points.len()));
            let mut nvm_temp = None;
            if let Some(n) = &cfg.nvm_dir
                && (several_engines || several_points)
            {
                let base = n.join(&e.name);
                std::fs::create_dir_all(&base).map_err(|err| BenchError::io(&base, err))?;
                let t = tempfile::Builder::new()
                    .prefix(&format!("{}-", p.dir_name()))
                    .tempdir_in(&base)
                    .map_err(|err| BenchError::io(&base, err))?;
                c.nvm_dir = Some(t.path().to_path_buf());
                nvm_temp = Some(t);
            }
            let factory = (e.make)(c.nvm_dir.as_deref())?;
            if several_engines || several_points {
                writeln!(
                    out,
                    "=== {}{}",
                    e.name,
                    c.point
                        .as_ref()
                        .map_or(String::new(), |l| format!(" at {l}"))
                )
                .map_err(out_err)?;
            }
            results.extend(run(&c, factory.as_ref(), out)?);
            drop(factory);
            if let Some(t) = nvm_temp {
                let p = t.path().to_path_buf();
                t.close().map_err(|err| BenchError::io(p, err))?;
            }
        }
    }
    if several_engines || several_points {
        writeln!(out, "\n{}", comparison_table(&results)).map_err(out_err)?;
    }
    if let Some(dir) = plot_dir {
        let files = crate::plot::write_plots(&results, dir)?;
        writeln!(out, "plots: {} files in {}", files.len(), dir.display()).map_err(out_err)?;
    }
    Ok(results)
}

/// The engine whose throughput the others are compared with: `rocksdb` if it ran, else the
/// first engine.
fn reference_engine(results: &[BenchResult]) -> Option<&str> {
    results
        .iter()
        .find(|r| r.engine == "rocksdb")
        .or_else(|| results.first())
        .map(|r| r.engine.as_str())
}

/// The comparison table: one row per result, with throughput relative to the reference
/// engine's at the same benchmark and point.
#[must_use]
pub fn comparison_table(results: &[BenchResult]) -> String {
    let reference = reference_engine(results).unwrap_or("");
    let mut s = format!(
        "{:<16} {:<26} {:<12} {:>11} {:>10} {:>7} {:>6} {:>6} {:>8}\n",
        "engine",
        "point",
        "benchmark",
        "ops/s",
        "p99 us",
        "stall s",
        "WA",
        "space",
        format!("vs {}", truncate(reference, 5))
    );
    for r in results {
        let p99 = r.latency.get(&r.primary_op).map_or(0.0, |l| l.p99_us);
        let wa = r
            .engine_interval
            .and_then(|e| e.write_amplification)
            .map_or("-".into(), |w| format!("{w:.2}"));
        let space = r
            .space
            .and_then(|x| x.space_amplification)
            .map_or("-".into(), |w| format!("{w:.2}"));
        let base = results
            .iter()
            .find(|b| b.engine == reference && b.benchmark == r.benchmark && b.point == r.point);
        let ratio = base
            .filter(|b| b.ops_per_sec > 0.0)
            .map_or("-".into(), |b| {
                format!("{:.2}x", r.ops_per_sec / b.ops_per_sec)
            });
        let _ = writeln!(
            s,
            "{:<16} {:<26} {:<12} {:>11.0} {:>10.1} {:>7} {:>6} {:>6} {:>8}",
            truncate(&r.engine, 16),
            truncate(r.point.as_deref().unwrap_or("-"), 26),
            r.benchmark,
            r.ops_per_sec,
            p99,
            r.stall_seconds,
            wa,
            space,
            ratio
        );
    }
    s
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The database directory of the run of `engine` at `point` under `--db` `db`, when
/// `engines` engines and `points` points run.
#[must_use]
pub fn run_dir(
    db: &Path,
    engine: &str,
    point: &SweepPoint,
    engines: usize,
    points: usize,
) -> PathBuf {
    let mut d = db.to_path_buf();
    if engines > 1 {
        d.push(engine);
    }
    if points > 1 {
        d.push(point.dir_name());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MezzFactory, Step, build_options};

    fn mezz_spec(name: &str, wbs: &'static str) -> EngineSpec<'static> {
        EngineSpec {
            name: name.into(),
            make: Box::new(move |_nvm| {
                let o = build_options(None, &[("write_buffer_size".into(), wbs.into())])?;
                Ok(Box::new(MezzFactory::new(o)) as Box<dyn EngineFactory>)
            }),
        }
    }

    #[test]
    fn several_engines_run_in_their_own_directories_and_are_compared() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let nvm = dir.path().join("nvm");
        let cfg = BenchConfig {
            benchmarks: Step::parse_list("fillseq,readrandom").unwrap(),
            num: 300,
            db: Some(db.clone()),
            nvm_dir: Some(nvm.clone()),
            progress: false,
            ..BenchConfig::default()
        };
        let engines = [mezz_spec("small", "64K"), mezz_spec("big", "1M")];
        let mut out = Vec::new();
        let rs = run_suite(&cfg, &engines, &Sweep::default(), None, &mut out).unwrap();
        assert_eq!(rs.len(), 4);
        let names: Vec<&str> = rs.iter().map(|r| r.engine.as_str()).collect();
        assert_eq!(names, ["small", "small", "big", "big"]);
        assert_eq!(rs[2].config["options"]["write_buffer_size"], "1048576");
        for e in ["small", "big"] {
            assert!(db.join(e).join("CURRENT").exists(), "{e}");
            // Each run's NVM directory was fresh and is gone.
            assert_eq!(std::fs::read_dir(nvm.join(e)).unwrap().count(), 0);
        }
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("=== small") && text.contains("=== big"),
            "{text}"
        );
        let table = comparison_table(&rs);
        assert_eq!(table.lines().count(), 5, "{table}");
        assert!(table.lines().nth(1).unwrap().ends_with("1.00x"), "{table}");
        assert!(table.contains("vs small"), "{table}");

        let again = BenchConfig {
            use_existing: true,
            ..cfg
        };
        assert!(run_suite(&again, &engines, &Sweep::default(), None, &mut Vec::new()).is_err());
    }

    #[test]
    fn sweep_points_are_the_cross_product_with_labels() {
        let s = Sweep {
            value_sizes: vec![64, 1024],
            nums: vec![10, 20],
        };
        let p = s.points();
        assert_eq!(p.len(), 4);
        assert_eq!(p[0].label().as_deref(), Some("value_size=64,num=10"));
        assert_eq!(p[3].label().as_deref(), Some("value_size=1024,num=20"));
        assert_eq!(p[1].dir_name(), "value_size-64_num-20");
        let none = Sweep::default().points();
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].label(), None);
        let d = run_dir(Path::new("d"), "rocksdb", &p[0], 2, 4);
        assert_eq!(d, Path::new("d/rocksdb/value_size-64_num-10"));
        assert_eq!(run_dir(Path::new("d"), "x", &none[0], 1, 1), Path::new("d"));
    }

    #[test]
    fn setup_json_lists_every_knob() {
        let j = setup_json(&EngineSetup::default());
        assert_eq!(j["write_buffer_size"], 64 << 20);
        assert_eq!(j["block_cache_bytes"], 8 << 20);
        assert_eq!(j["bloom_bits"], 10);
        assert_eq!(j["sync"], false);
        assert_eq!(j["compress"], false);
        assert_eq!(j["direct_io"], false);
        assert!(j["nvm_dir"].is_null());
    }
}
