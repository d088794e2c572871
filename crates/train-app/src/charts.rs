//! PNG charts of a training run's curves (`plotters`): loss and accuracy per epoch, train and
//! validation, side by side.
//!
//! Text is rendered with `ab_glyph` (pure Rust, no fontconfig: the binary must start on machines
//! without it) from a TrueType font found at run time: the one named by [`prefer_font`] (the
//! command line passes `SGNN_CHART_FONT`), else common system paths. Without one the curves
//! are drawn without text.

use crate::training::report::EpochMetrics;
use plotters::prelude::*;
use std::path::Path;

type Series = Vec<(f64, f64)>;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

static PREFERRED_FONT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// A TrueType font to try before the system paths (call before the first chart; later calls,
/// and calls after a chart was drawn, change nothing).
pub fn prefer_font(path: impl Into<std::path::PathBuf>) {
    let _ = PREFERRED_FONT.set(path.into());
}

/// Registers a system font as "sans-serif" once; whether one is available.
fn font_ready() -> bool {
    static READY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *READY.get_or_init(|| {
        let preferred = PREFERRED_FONT.get().map(|p| p.as_path());
        let candidates = preferred.into_iter().chain(FONT_PATHS.iter().map(Path::new));
        for path in candidates {
            if let Ok(bytes) = std::fs::read(path) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

fn series(epochs: &[EpochMetrics], f: impl Fn(&EpochMetrics) -> Option<f64>) -> Series {
    epochs.iter().filter_map(|e| f(e).filter(|v| v.is_finite()).map(|v| (e.epoch as f64, v))).collect()
}

/// Draws one panel; `labels: false` draws the curves only (no text), for machines without fonts.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    curves: &[(&str, &Series, RGBColor)],
    labels: bool,
) -> Result<(), String> {
    let all: Vec<&(f64, f64)> = curves.iter().flat_map(|(_, s, _)| s.iter()).collect();
    if all.is_empty() {
        return Ok(());
    }
    let x_max = all.iter().map(|p| p.0).fold(1.0f64, f64::max);
    let y_min = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min).min(0.0);
    let y_max = all.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let y_max = if y_max > y_min { y_max * 1.05 } else { y_min + 1.0 };
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut builder = ChartBuilder::on(area);
    builder.margin(12);
    if labels {
        builder.caption(title, ("sans-serif", 20)).x_label_area_size(35).y_label_area_size(50);
    }
    let mut chart = builder.build_cartesian_2d(0.0..x_max, y_min..y_max).map_err(err)?;
    if labels {
        chart.configure_mesh().x_desc("epoch").draw().map_err(err)?;
    } else {
        chart.configure_mesh().disable_x_mesh().disable_y_mesh().x_labels(0).y_labels(0).draw().map_err(err)?;
    }
    for (name, s, color) in curves {
        let drawn = chart.draw_series(LineSeries::new(s.iter().copied(), color.stroke_width(2))).map_err(err)?;
        if labels {
            let c = *color;
            drawn.label(*name).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        }
    }
    if labels {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
    }
    Ok(())
}

fn draw(path: &Path, epochs: &[EpochMetrics], labels: bool) -> Result<(), String> {
    let root = BitMapBackend::new(path, (1100, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (left, right) = root.split_horizontally(550);
    let tl = series(epochs, |e| e.train_loss);
    let vl = series(epochs, |e| e.valid_loss);
    let ta = series(epochs, |e| e.train_accuracy);
    let va = series(epochs, |e| e.valid_accuracy);
    panel(&left, "loss", &[("train", &tl, BLUE), ("valid", &vl, RED)], labels)?;
    panel(&right, "accuracy", &[("train", &ta, BLUE), ("valid", &va, RED)], labels)?;
    root.present().map_err(|e| e.to_string())
}

/// Writes `path` (PNG) with the loss and accuracy curves. Without a usable system font the
/// chart is drawn without text; an error is returned only when the image cannot be written.
pub fn write_curves(path: &Path, epochs: &[EpochMetrics]) -> Result<(), String> {
    if epochs.is_empty() {
        return Err("no epochs to chart".into());
    }
    if font_ready() {
        if let Ok(Ok(())) = std::panic::catch_unwind(|| draw(path, epochs, true)) {
            return Ok(());
        }
    }
    draw(path, epochs, false)
}
