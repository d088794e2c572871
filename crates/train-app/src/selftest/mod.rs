//! `selftest`: the conformance suite on the chosen device, as a pass / fail table.
//!
//! The checks beyond the conformance suite of `burn_sparse_gnn`: [`products`] (the dense
//! products against f64) and [`layers`] (a GraphSAGE layer against the CPU); the partition
//! checks are `crate::partitioned::devices::equality_checks`.

pub mod layers;
pub mod minibatch;
pub mod products;

pub use layers::{layer_checks, LayerCheck, LAYER_TOLERANCE, LAYER_TOLERANCE_HALF};
pub use products::{product_checks, product_tolerance};

use crate::backend::Job;
use crate::error::{AppError, Result};
use burn_sparse_gnn::conformance::{
    adam_checks, add_rows_checks, binary_cross_entropy_checks, block_checks, block_norm_checks, block_structure_checks,
    cross_entropy_checks, from_host_checks, fused_adam_checks, gat_attention_bound, gat_attention_checks,
    half_rows_checks, inv_degree_checks, link_checks, mixed_rows_checks, neighbor_checks, neighbor_uniformity,
    norm_checks, packed_graph_checks, pair_rows_checks, relu_dropout_checks, run, ConformanceConfig,
    NEIGHBOR_CHI_SQUARE_BOUND,
};
use burn_sparse_gnn::{Choice, KernelConfig, KernelPolicy, SparseGnnAutodiffBackend, SspmmStrategy};

/// Bound of the normwise difference between a model on a partitioned graph and on the whole
/// graph (f32): the parts sum the same terms in another order (the loss over parts, the edge
/// groups of smaller graphs), so the difference is rounding, ~1e-7 relative; a wrong halo row
/// or degree shows as order 1e-2 or more.
pub const PARTITION_TOLERANCE: f64 = 1e-4;

/// Bound of batch normalisation's normwise error against the f64 reference: f32 rounding,
/// with the input gradient's cancellations (1e-6 on wgpu).
pub const NORM_TOLERANCE: f64 = 5e-5;

/// Prints checks that must give a difference of exactly 0 (`None`: skipped, the dtype is not
/// supported here) and returns how many failed and how many ran.
/// Bound of the normwise error of one fused Adam step against the CPU reference: the same f32
/// arithmetic, its multiply-adds contracted on CUDA (1.1e-7 on an H200).
const ADAM_TOLERANCE: f64 = 1e-5;

/// Bound of the normwise difference after ten steps of `FusedAdam` against Burn's Adam. Adam
/// divides each update by the gradient's scale, so the last-bit differences of contracted
/// multiply-adds grow over the steps: 3.8e-7 on the CPU and wgpu, 5.2e-5 on an H200. A lost or
/// misplaced state (moments, step count) changes each update by a sizeable part of the learning
/// rate (0.01 there), far above the bound.
const ADAM_STEPS_TOLERANCE: f64 = 1e-3;

fn print_exact_checks(checks: &[(String, Option<f64>)]) -> (usize, usize) {
    let mut failed = 0;
    for (what, diff) in checks {
        let ok = *diff == Some(0.0);
        match diff {
            Some(d) => println!("{} {what}: largest difference {d:.2e}", if ok { "ok  " } else { "FAIL" }),
            None => println!("skip {what}: the dtype is not supported here"),
        }
        failed += usize::from(!ok && diff.is_some());
    }
    (failed, checks.iter().filter(|(_, d)| d.is_some()).count())
}

/// Normwise error bound of the weighted cross-entropy in f32 against f64 (logits up to 1e3:
/// their rounding decides).
pub const CROSS_ENTROPY_TOLERANCE: f64 = 5e-5;

/// [`PARTITION_TOLERANCE`] for mixed precision: half-precision rounding of the aggregated rows
/// can differ where the summation order differs.
pub const PARTITION_TOLERANCE_HALF: f64 = 5e-3;

/// [`PARTITION_TOLERANCE_HALF`] for the split halo layout: each aggregate is the sum of two
/// partial sums (own and halo columns), each rounded to the half type, and the mean is taken
/// there, where the whole graph rounds the mean once.
pub const PARTITION_TOLERANCE_HALF_SPLIT: f64 = 1e-2;

/// What `selftest` runs.
pub struct SelfTest {
    pub quick: bool,
    pub filter: Option<String>,
}

impl Job for SelfTest {
    type Output = ();

    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<()> {
        let base = ConformanceConfig {
            hub_degree: if self.quick { 2_000 } else { 10_000 },
            filter: self.filter.clone(),
            ..Default::default()
        };
        let mut runs = vec![("default kernels", base.clone())];
        runs.push((
            "split rows (group width 7)",
            ConformanceConfig { group_width: 7, widths: vec![7, 64], ..base.clone() },
        ));
        let atomic = ConformanceConfig {
            filter: Some(self.filter.clone().unwrap_or_else(|| "cbsr".into())),
            group_width: 16,
            policy: KernelPolicy { sspmm: SspmmStrategy::OuterAtomic, spgemm_atomic: true },
            ..base.clone()
        };
        runs.push(("atomic CBSR variants", atomic.clone()));
        runs.push((
            "atomic CBSR variants, f16 storage",
            ConformanceConfig {
                dtype: Some(burn::tensor::FloatDType::F16),
                tolerance: 2e-2,
                hub_degree: 4_000,
                widths: vec![7, 64],
                ..atomic
            },
        ));
        for (name, dtype) in
            [("f16 storage", burn::tensor::FloatDType::F16), ("bf16 storage", burn::tensor::FloatDType::BF16)]
        {
            runs.push((
                name,
                ConformanceConfig {
                    dtype: Some(dtype),
                    tolerance: 2e-2,
                    hub_degree: 4_000,
                    widths: vec![7, 64],
                    ..base.clone()
                },
            ));
        }
        let shared_memory = KernelConfig::default().shared_memory_only();
        runs.push((
            "shared-memory fallbacks of the plane operations",
            ConformanceConfig { widths: vec![7, 64], kernels: shared_memory, ..base.clone() },
        ));
        // the hot-column split of the f32 SpMM sum / mean (cold pass + shared-memory pass), with
        // few and with many hot columns, split cold rows and the static schedule
        let spmm_only = Some(self.filter.clone().unwrap_or_else(|| "spmm".into()));
        let hot = ConformanceConfig { filter: spmm_only, widths: vec![1, 7, 64], hot_cols: Some(16), ..base.clone() };
        let mut staged = KernelConfig::default();
        staged.spmm.stage_vectors = Choice::Forced(1);
        runs.push((
            "staging in passes (group width 7, one vector per slot)",
            ConformanceConfig {
                filter: Some(self.filter.clone().unwrap_or_else(|| "spmm".into())),
                group_width: 7,
                widths: vec![7, 64],
                kernels: staged,
                ..base.clone()
            },
        ));
        runs.push(("hot-column split (16 columns)", hot.clone()));
        runs.push((
            "hot-column split (16 columns, group width 7)",
            ConformanceConfig { group_width: 7, ..hot.clone() },
        ));
        runs.push(("hot-column split (1792 columns)", ConformanceConfig { hot_cols: Some(1792), ..hot.clone() }));
        runs.push((
            "hot-column split, static schedule (no plane operations)",
            ConformanceConfig { kernels: shared_memory, ..hot },
        ));
        let mut failed = 0;
        let mut total = 0;
        for (name, cfg) in runs {
            let start = std::time::Instant::now();
            let hot_before = burn_sparse_gnn::kernels::spmm::hot::hot_launches();
            let report = run::<B>(&device, &cfg);
            let hot_runs = burn_sparse_gnn::kernels::spmm::hot::hot_launches() - hot_before;
            println!(
                "== {backend}: {name} ({:.1} s, {hot_runs} hot-column SpMM launches)",
                start.elapsed().as_secs_f64()
            );
            // the hot-column pass serves the SpMM sum and mean: a filter that leaves them out
            // leaves it nothing to run
            let sums_ran =
                report.results.iter().any(|r| r.skipped.is_none() && (r.op == "spmm_sum" || r.op == "spmm_mean"));
            if cfg.hot_cols.is_some() && backend != "cpu" && sums_ran {
                println!("{} the hot-column pass ran", if hot_runs > 0 { "ok  " } else { "FAIL" });
                failed += usize::from(hot_runs == 0);
                total += 1;
            }
            println!("{}", report.table());
            failed += report.failures().len();
            total += report.results.len();
        }
        if self.filter.is_none() && backend == "cpu" {
            // the layer check compares a device with the CPU backend (and its f64 side cannot
            // share the NdArray device with the f32 backend under test, see `layer_checks`)
            println!("== {backend}: layer check skipped (it compares a device with the CPU backend)");
        } else if self.filter.is_none() {
            let start = std::time::Instant::now();
            let checks = layer_checks::<B>(&device);
            println!("== {backend}: layers against the CPU backend ({:.1} s)", start.elapsed().as_secs_f64());
            for (what, err, bound) in &checks {
                let ok = *err <= *bound;
                println!("{} {what}: error {err:.2e} (bound {bound:.0e})", if ok { "ok  " } else { "FAIL" });
                failed += usize::from(!ok);
            }
            total += checks.len();
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let before = burn_sparse_gnn::dense::cublas_products();
            let checks = product_checks::<B::InnerBackend>(&device);
            let through_cublas = burn_sparse_gnn::dense::cublas_products() - before;
            println!(
                "== {backend}: dense products against f64 ({:.1} s, {through_cublas} through cuBLAS)",
                start.elapsed().as_secs_f64()
            );
            for (what, err, tol) in &checks {
                match err {
                    Some(e) => {
                        let ok = *e <= *tol;
                        println!("{} {what}: error {e:.2e} (bound {tol:.0e})", if ok { "ok  " } else { "FAIL" });
                        failed += usize::from(!ok);
                    }
                    None => println!("skip {what}: the dtype is not supported here"),
                }
            }
            total += checks.iter().filter(|(_, e, _)| e.is_some()).count();
            if backend == "cuda" {
                let ok = through_cublas > 0;
                println!("{} the products ran through cuBLAS", if ok { "ok  " } else { "FAIL" });
                failed += usize::from(!ok);
                total += 1;
            }
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let halves = [burn::tensor::FloatDType::F16, burn::tensor::FloatDType::BF16];
            let mut checks =
                half_rows_checks::<B::InnerBackend>(&device, &halves, &[7, 256, 602], &KernelConfig::default());
            for (what, d) in half_rows_checks::<B::InnerBackend>(&device, &halves, &[7, 256], &shared_memory) {
                checks.push((format!("{what} (shared-memory fallback)"), d));
            }
            checks.extend(inv_degree_checks::<B::InnerBackend>(&device, &halves, &[1, 7, 256, 602]));
            checks.extend(link_checks::<B::InnerBackend>(&device));
            checks.extend(pair_rows_checks::<B::InnerBackend>(
                &device,
                &[burn::tensor::FloatDType::F32, burn::tensor::FloatDType::F16],
            ));
            checks.extend(neighbor_checks::<B::InnerBackend>(&device));
            checks.extend(block_checks::<B::InnerBackend>(&device));
            checks.extend(block_structure_checks::<B::InnerBackend>(&device));
            checks.extend(block_norm_checks::<B::InnerBackend>(&device));
            let chi2 = neighbor_uniformity::<B::InnerBackend>(&device);
            println!(
                "== {backend}: one-pass half rows and 1 / degree rows against the composed ops, link prediction's \
                 negatives and pair rows' gradients, neighbour samples, sampled blocks and their device structure against the CPU reference ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            let (bad, ran) = print_exact_checks(&checks);
            failed += bad;
            total += ran;
            let ok = chi2 < NEIGHBOR_CHI_SQUARE_BOUND;
            println!(
                "{} neighbour sampling uniformity: chi-square {chi2:.2} (bound {NEIGHBOR_CHI_SQUARE_BOUND})",
                if ok { "ok  " } else { "FAIL" }
            );
            failed += usize::from(!ok);
            total += 1;
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let mut checks = minibatch::minibatch_checks::<B::InnerBackend>(&device);
            checks.extend(minibatch::minibatch_gradient_checks::<B>(&device));
            println!(
                "== {backend}: mini-batch blocks (logits and feature gradients) and layer-wise inference against the whole graph ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            for (what, diff) in &checks {
                let ok = *diff <= minibatch::MINIBATCH_TOLERANCE;
                println!(
                    "{} {what}: largest difference {diff:.2e} (bound {:.0e})",
                    if ok { "ok  " } else { "FAIL" },
                    minibatch::MINIBATCH_TOLERANCE
                );
                failed += usize::from(!ok);
            }
            total += checks.len();
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let checks = norm_checks::<B::InnerBackend>(&device);
            println!(
                "== {backend}: batch normalisation against the CPU reference ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            for (what, err) in &checks {
                let ok = err.is_some_and(|e| e <= NORM_TOLERANCE);
                println!(
                    "{} {what}: error {:.2e} (bound {NORM_TOLERANCE:.0e})",
                    if ok { "ok  " } else { "FAIL" },
                    err.unwrap_or(f64::NAN)
                );
                failed += usize::from(!ok);
            }
            total += checks.len();
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let dtypes = [burn::tensor::FloatDType::F32, burn::tensor::FloatDType::F16, burn::tensor::FloatDType::BF16];
            let mut checks = add_rows_checks::<B::InnerBackend>(&device, &dtypes, &[1, 7, 256, 602]);
            checks.extend(mixed_rows_checks::<B::InnerBackend>(&device, &dtypes[1..], &[1, 7, 256, 602]));
            let uploads = from_host_checks::<B::InnerBackend>(&device, &dtypes, &[1, 7, 256]);
            let packed = packed_graph_checks::<B::InnerBackend>(&device);
            println!(
                "== {backend}: halo rows gathered (f32, f16, bf16) and gradients added in place against the CPU \
                 reference, host rows and vectors \
                 uploaded and read back, small graphs uploaded in one buffer ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            let (bad, ran) = print_exact_checks(&packed);
            failed += bad;
            total += ran;
            let (bad, ran) = print_exact_checks(&checks);
            failed += bad;
            total += ran;
            for (what, differ) in &uploads {
                match differ {
                    Some(d) => println!("{} {what}: {d} bytes differ", if *d == 0.0 { "ok  " } else { "FAIL" }),
                    None => println!("skip {what}: the dtype is not supported here"),
                }
                failed += usize::from(differ.is_some_and(|d| d != 0.0));
                total += usize::from(differ.is_some());
            }
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let mut checks = cross_entropy_checks::<B>(&device, &[1, 7, 47, 300], &KernelConfig::default());
            checks.extend(binary_cross_entropy_checks::<B>(&device));
            for (what, e) in cross_entropy_checks::<B>(&device, &[7, 47], &shared_memory) {
                checks.push((format!("{what} (shared-memory fallback)"), e));
            }
            println!(
                "== {backend}: weighted and binary cross-entropy against the CPU reference ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            for (what, err) in &checks {
                let ok = *err <= CROSS_ENTROPY_TOLERANCE;
                println!(
                    "{} {what}: error {err:.2e} (bound {CROSS_ENTROPY_TOLERANCE:.0e})",
                    if ok { "ok  " } else { "FAIL" }
                );
                failed += usize::from(!ok);
            }
            total += checks.len();
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let checks = relu_dropout_checks::<B>(&device, &[1, 33, 256, 602]);
            println!("== {backend}: ReLU + dropout against the CPU reference ({:.1} s)", start.elapsed().as_secs_f64());
            for (what, diff) in &checks {
                let ok = *diff == 0.0;
                println!("{} {what}: largest difference {diff:.2e}", if ok { "ok  " } else { "FAIL" });
                failed += usize::from(!ok);
            }
            total += checks.len();
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let checks: Vec<_> = adam_checks::<B::InnerBackend>(&device)
                .into_iter()
                .map(|(what, e)| (what, e, ADAM_TOLERANCE))
                .chain(fused_adam_checks::<B>(&device).into_iter().map(|(what, e)| (what, e, ADAM_STEPS_TOLERANCE)))
                .collect();
            println!(
                "== {backend}: the fused Adam step against the CPU reference and Burn's Adam ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            for (what, err, bound) in &checks {
                let ok = err.is_some_and(|e| e <= *bound);
                println!(
                    "{} {what}: error {:.2e} (bound {bound:.0e})",
                    if ok { "ok  " } else { "FAIL" },
                    err.unwrap_or(f64::NAN)
                );
                failed += usize::from(!ok);
            }
            total += checks.len();
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let dtypes = [burn::tensor::FloatDType::F32, burn::tensor::FloatDType::F16, burn::tensor::FloatDType::BF16];
            let checks = gat_attention_checks::<B>(&device, &dtypes);
            println!(
                "== {backend}: GAT's fused attention coefficients and their gradients against the CPU reference \
                 ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            for (what, dtype, err) in &checks {
                let bound = gat_attention_bound(*dtype);
                match err {
                    Some(e) => {
                        let ok = *e <= bound;
                        println!(
                            "{} {what} ({dtype:?}): error {e:.2e} (bound {bound:.0e})",
                            if ok { "ok  " } else { "FAIL" }
                        );
                        failed += usize::from(!ok);
                        total += 1;
                    }
                    None => println!("skip {what} ({dtype:?}): the dtype is not supported here"),
                }
            }
        }
        if self.filter.is_none() {
            use burn::tensor::backend::Device as _;
            let count = B::device_count(device.to_id().type_id).max(1);
            for parts in [2, 4] {
                // one part per device where there are enough, else parts in turn over them
                let indices: Vec<usize> = (0..count.min(parts)).collect();
                let devices = crate::partitioned::devices_of::<B>(&device, &indices);
                let start = std::time::Instant::now();
                let checks = crate::partitioned::devices::equality_checks::<B>(&devices, parts)?;
                println!(
                    "== {backend}: {parts} parts on {} device(s) against the whole graph ({:.1} s)",
                    devices.len(),
                    start.elapsed().as_secs_f64()
                );
                for (what, err) in &checks {
                    let tol = match (what.contains("mixed"), what.contains("split halo")) {
                        (true, true) => PARTITION_TOLERANCE_HALF_SPLIT,
                        (true, false) => PARTITION_TOLERANCE_HALF,
                        _ => PARTITION_TOLERANCE,
                    };
                    let ok = *err <= tol;
                    println!("{} {what}: difference {err:.2e} (bound {tol:.0e})", if ok { "ok  " } else { "FAIL" });
                    failed += usize::from(!ok);
                }
                total += checks.len();
            }
        }
        if failed > 0 {
            return Err(AppError::SelfTest(format!("{failed} of {total} checks failed on {backend}")));
        }
        println!("selftest {backend}: all {total} checks passed");
        Ok(())
    }
}
