//! PNG plots of results: per benchmark (and sweep point), the throughput over time (one
//! line per engine) and the latency CDF (logarithmic latency axis, one line per engine and
//! operation kind).
//!
//! Drawn with `plotters`' bitmap backend; labels need a TrueType font, read at run time from
//! `MEZZ_PLOT_FONT` or Debian's `fonts-dejavu-core` (`DejaVuSans.ttf`). The plots use only
//! data kept in the JSON results (`timeline_ops_per_sec`, `latency_cdf`), so they can be
//! redrawn from a results file. Thread-safety: the font is registered once per process
//! (guarded); drawing is independent per call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::error::{BenchError, Result};
use crate::report::BenchResult;

/// Where the label font is looked for when `MEZZ_PLOT_FONT` is not set.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
];

const SIZE: (u32, u32) = (900, 560);
const FONT: &str = "sans-serif";

/// Registers the label font once; the error message says how to get one.
fn ensure_font() -> Result<()> {
    static FONT_STATE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    FONT_STATE
        .get_or_init(|| {
            let candidates: Vec<PathBuf> = std::env::var_os("MEZZ_PLOT_FONT")
                .map(PathBuf::from)
                .into_iter()
                .chain(FONT_PATHS.iter().map(PathBuf::from))
                .collect();
            let bytes = candidates
                .iter()
                .find_map(|p| std::fs::read(p).ok())
                .ok_or_else(|| {
                    "no TrueType font for plot labels: install Debian's fonts-dejavu-core \
                     or set MEZZ_PLOT_FONT to a .ttf file"
                        .to_string()
                })?;
            // plotters keeps registered fonts for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font(FONT, FontStyle::Normal, bytes)
                .map_err(|_| "the plot label font could not be parsed".to_string())
        })
        .clone()
        .map_err(BenchError::InvalidArgument)
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> BenchError {
    BenchError::InvalidArgument(format!("plot {}: {e}", path.display()))
}

/// A file-name-safe form of `s`.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes two PNGs per (benchmark, sweep point) of `results` into `dir` (created if
/// missing): `<benchmark>[-<point>]-throughput.png` and `...-latency-cdf.png`. Returns the
/// files written.
///
/// # Errors
/// No font, an unwritable directory, or a drawing error.
pub fn write_plots(results: &[BenchResult], dir: &Path) -> Result<Vec<PathBuf>> {
    ensure_font()?;
    std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
    let mut groups: BTreeMap<(String, String), Vec<&BenchResult>> = BTreeMap::new();
    for r in results {
        groups
            .entry((r.benchmark.clone(), r.point.clone().unwrap_or_default()))
            .or_default()
            .push(r);
    }
    let mut files = Vec::new();
    for ((bench, point), rs) in groups {
        let stem = if point.is_empty() {
            slug(&bench)
        } else {
            format!("{}-{}", slug(&bench), slug(&point))
        };
        let title = if point.is_empty() {
            bench.clone()
        } else {
            format!("{bench} ({point})")
        };
        let tp = dir.join(format!("{stem}-throughput.png"));
        throughput_plot(&tp, &title, &rs)?;
        files.push(tp);
        let cdf = dir.join(format!("{stem}-latency-cdf.png"));
        if cdf_plot(&cdf, &title, &rs)? {
            files.push(cdf);
        }
    }
    Ok(files)
}

fn throughput_plot(path: &Path, title: &str, rs: &[&BenchResult]) -> Result<()> {
    let err = |e| plot_err(path, e);
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let secs = rs
        .iter()
        .map(|r| r.timeline_ops_per_sec.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let top = rs
        .iter()
        .flat_map(|r| r.timeline_ops_per_sec.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title}: throughput"), (FONT, 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..secs as f64, 0f64..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds since start")
        .y_desc("operations / s")
        .label_style((FONT, 13))
        .draw()
        .map_err(err)?;
    for (i, r) in rs.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        // Each second's count is drawn at the second's middle.
        let pts: Vec<(f64, f64)> = r
            .timeline_ops_per_sec
            .iter()
            .enumerate()
            .map(|(s, &c)| (s as f64 + 0.5, c as f64))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?
            .label(r.engine.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Returns false (and draws nothing) when no result has latency data.
fn cdf_plot(path: &Path, title: &str, rs: &[&BenchResult]) -> Result<bool> {
    let err = |e| plot_err(path, e);
    let several_engines = rs.len() > 1;
    let lines: Vec<(String, Vec<(f64, f64)>)> = rs
        .iter()
        .flat_map(|r| {
            r.latency_cdf.iter().map(move |(kind, pts)| {
                let label = if several_engines {
                    format!("{} {kind}", r.engine)
                } else {
                    kind.clone()
                };
                let pts = pts.iter().map(|p| (p[0].max(0.01), p[1])).collect();
                (label, pts)
            })
        })
        .filter(|(_, pts): &(String, Vec<(f64, f64)>)| !pts.is_empty())
        .collect();
    if lines.is_empty() {
        return Ok(false);
    }
    let lo = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(f64::INFINITY, f64::min);
    let hi = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(0f64, f64::max);
    let (lo, hi) = (lo * 0.8, (hi * 1.25).max(lo * 2.0));
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title}: latency CDF"), (FONT, 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency (µs, log scale)")
        .y_desc("fraction of operations")
        .label_style((FONT, 13))
        .draw()
        .map_err(err)?;
    for (i, (label, pts)) in lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_name_safe() {
        assert_eq!(slug("ycsb-a"), "ycsb-a");
        assert_eq!(slug("value_size=256,num=1000"), "value_size_256_num_1000");
        assert_eq!(slug("a/b"), "a_b");
    }
}
