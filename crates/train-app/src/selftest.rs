//! `selftest`: the conformance suite on the chosen device, as a pass / fail table.

use crate::backend::Job;
use crate::bench::host;
use crate::error::{AppError, Result};
use burn::module::Param;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::conformance::{
    add_rows_checks, cross_entropy_checks, from_host_checks, half_rows_checks, inv_degree_checks, normwise_error,
    relu_dropout_checks, run, ConformanceConfig,
};
use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
use burn_sparse_gnn::{
    Choice, Graph, GraphOptions, KernelConfig, KernelPolicy, SparseGnnAutodiffBackend, SspmmStrategy,
};
use gnn_models::{Nonlinearity, Precision, SageConv, SageConvConfig};

/// Tolerance of [`layer_checks`] (the device in f32 against the CPU in f64, from the same f32
/// inputs). The layer's dense products run in exact f32 through cuBLAS on CUDA; where
/// libcublas is missing they fall back to Burn's matmul, which uses TF32 on CUDA (normwise
/// 2.3e-4 to 2.9e-4 from f64 in this check on the H200), so the bound sits above that; a wiring
/// or kernel error shows as an error of order 1.
pub const LAYER_TOLERANCE: f64 = 1e-3;

/// Bound of the normwise difference between a model on a partitioned graph and on the whole
/// graph (f32): the parts sum the same terms in another order (the loss over parts, the edge
/// groups of smaller graphs), so the difference is rounding, ~1e-7 relative; a wrong halo row
/// or degree shows as order 1e-2 or more.
pub const PARTITION_TOLERANCE: f64 = 1e-4;

/// Prints checks that must give a difference of exactly 0 (`None`: skipped, the dtype is not
/// supported here) and returns how many failed and how many ran.
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

/// Normwise error bound of each dense product arithmetic against f64 in [`product_checks`]
/// (sums of 300 products of values in [-1, 1]): f32 rounds at 2^-24, TF32 inputs at 2^-11, f16
/// at 2^-11 and bf16 at 2^-8, with f32 accumulation.
pub fn product_tolerance(name: &str) -> f64 {
    match name {
        "f32" => 1e-5,
        "tf32" | "f16" => 5e-3,
        _ => 3e-2,
    }
}

/// The dense products ([`burn_sparse_gnn::SparseGnnBackend::dense_product`],
/// `dense_product_half` on half inputs, and `dense_product_bias` untransposed) in every
/// arithmetic and orientation against f64 on the host: `(what, error, tolerance)`, `None`
/// where the device lacks the half type. Shapes are odd (a wiring error in the leading
/// dimensions or transposes shows as an error of order 1).
pub fn product_checks<B: burn_sparse_gnn::SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>, f64)> {
    use burn::tensor::FloatDType;
    use burn_sparse_gnn::dense::ProductMath;
    let (m, k, n) = (1_031usize, 300usize, 37usize);
    let f = |len: usize, seed: u64| random_values(len, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>();
    let mut out = Vec::new();
    for (name, math, half) in [
        ("f32", ProductMath::F32, None),
        ("tf32", ProductMath::Tf32, None),
        ("f16", ProductMath::F32, Some(FloatDType::F16)),
        ("bf16", ProductMath::F32, Some(FloatDType::BF16)),
    ] {
        for (ta, tb) in [(false, false), (false, true), (true, false)] {
            let what = format!(
                "dense product {name}{}{}",
                if ta { ", a transposed" } else { "" },
                if tb { ", b transposed" } else { "" }
            );
            if let Some(h) = half {
                if !B::supports_dtype(device, h.into()) {
                    out.push((what, None, product_tolerance(name)));
                    continue;
                }
            }
            let (ar, ac) = if ta { (k, m) } else { (m, k) };
            let (br, bc) = if tb { (n, k) } else { (k, n) };
            let round = |v: Vec<f32>| -> Vec<f32> {
                match half {
                    Some(FloatDType::F16) => v.into_iter().map(|x| half::f16::from_f32(x).to_f32()).collect(),
                    Some(_) => v.into_iter().map(|x| half::bf16::from_f32(x).to_f32()).collect(),
                    None => v,
                }
            };
            let (av, bv) = (round(f(ar * ac, 31)), round(f(br * bc, 32)));
            let t = |v: &[f32], r: usize, c: usize| {
                let t = Tensor::<B, 2>::from_data(TensorData::new(v.to_vec(), [r, c]), device);
                match half {
                    Some(h) => t.cast(h),
                    None => t,
                }
            };
            let y = B::dense_product(
                t(&av, ar, ac).into_primitive().tensor(),
                t(&bv, br, bc).into_primitive().tensor(),
                ta,
                tb,
                math,
            );
            let y = host(Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(y)));
            let a_at = |i: usize, t2: usize| if ta { av[t2 * m + i] } else { av[i * k + t2] } as f64;
            let b_at = |t2: usize, j: usize| if tb { bv[j * k + t2] } else { bv[t2 * n + j] } as f64;
            let want: Vec<f64> = (0..m)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| (0..k).map(|t2| a_at(i, t2) * b_at(t2, j)).sum())
                .collect();
            out.push((what.clone(), Some(normwise_error(&y, &want)), product_tolerance(name)));
            if half.is_some() {
                // the product in the half type (f32 accumulation, one rounding)
                let y = B::dense_product_half(
                    t(&av, ar, ac).into_primitive().tensor(),
                    t(&bv, br, bc).into_primitive().tensor(),
                    ta,
                    tb,
                );
                let y = Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(y));
                let err = if y.dtype() == burn::tensor::DType::from(half.expect("half")) {
                    normwise_error(&host(y.cast(FloatDType::F32)), &want)
                } else {
                    f64::INFINITY
                };
                out.push((format!("{what}, half output"), Some(err), product_tolerance(name)));
            }
            if !ta && !tb {
                // the same product with a bias added to every row (cuBLASLt's epilogue on CUDA)
                let bias_v = f(n, 33);
                let bias = Tensor::<B, 1>::from_data(TensorData::new(bias_v.clone(), [n]), device);
                let y = B::dense_product_bias(
                    t(&av, ar, ac).into_primitive().tensor(),
                    t(&bv, br, bc).into_primitive().tensor(),
                    bias.into_primitive().tensor(),
                    math,
                );
                let y = host(Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(y)));
                let want_b: Vec<f64> = want.iter().enumerate().map(|(i, w)| w + bias_v[i % n] as f64).collect();
                out.push((format!("{what} + bias"), Some(normwise_error(&y, &want_b)), product_tolerance(name)));
            }
        }
    }
    out
}

/// Results of one layer check: what was compared, its normwise error against the CPU and the
/// bound it must stay within.
pub type LayerCheck = (String, f64, f64);

/// Bound of [`layer_checks`] for the layer in mixed f16 (half-precision storage and products,
/// rounding at 2^-11) against the CPU in f64.
pub const LAYER_TOLERANCE_HALF: f64 = 5e-3;

struct LayerRun {
    y: Vec<f64>,
    dx: Vec<f64>,
    dw_neigh: Vec<f64>,
    db_neigh: Vec<f64>,
    dw_root: Vec<f64>,
}

/// A GraphSAGE layer (mean, root weight) on the output of `nonlin` (MaxK: CBSR input; ReLU:
/// dense input, both maps in one product pair): forward in `precision`, then the gradients of
/// `sum(y * r)` with respect to the input and the weights, with the given weights.
#[allow(clippy::too_many_arguments)]
fn sage_run<B: SparseGnnAutodiffBackend>(
    device: &B::Device,
    adj: &burn_sparse_gnn::Csr,
    (n, d, d_out): (usize, usize, usize),
    xv: &[f32],
    rv: &[f32],
    weights: &[Vec<f32>; 3],
    group_width: usize,
    (nonlin, precision): (Nonlinearity, Precision),
) -> LayerRun {
    let g = Graph::<B>::new(adj, device, GraphOptions::default().with_group_width(group_width));
    let t = |v: &[f32], shape: [usize; 2]| Tensor::<B, 2>::from_data(TensorData::new(v.to_vec(), shape), device);
    let mut conv: SageConv<B> = SageConvConfig::new(d, d_out).init(device);
    conv.lin_neigh.weight = Param::from_tensor(t(&weights[0], [d, d_out]));
    conv.lin_neigh.bias =
        Some(Param::from_tensor(Tensor::from_data(TensorData::new(weights[1].clone(), [d_out]), device)));
    if let Some(r) = conv.lin_root.as_mut() {
        r.weight = Param::from_tensor(t(&weights[2], [d, d_out]));
    }
    let x = t(xv, [n, d]).require_grad();
    let h = nonlin.forward(x.clone(), g.kernel_config());
    let y = conv.forward(&g, &h, precision);
    let grads = (y.clone() * t(rv, [n, d_out])).sum().backward();
    let grad2 = |p: &Tensor<B, 2>| p.grad(&grads).map(host).unwrap_or_default();
    LayerRun {
        y: host(y),
        dx: grad2(&x),
        dw_neigh: grad2(&conv.lin_neigh.weight.val()),
        db_neigh: conv.lin_neigh.bias.as_ref().and_then(|b| b.val().grad(&grads)).map(host).unwrap_or_default(),
        dw_root: conv.lin_root.as_ref().map(|r| grad2(&r.weight.val())).unwrap_or_default(),
    }
}

/// MaxK-GNN's GraphSAGE layer (MaxK k = 8 of 64 -> CBSR SpGEMM forward, SSpMM backward) and
/// the GraphSAGE layer on ReLU output through `Autodiff<B>` on `device`, against the same layer
/// with the same weights on the CPU backend (in f64), on a random graph with a hub, empty rows,
/// self-loops and duplicate edges (and once with rows split across edge groups). The ReLU layer
/// runs in its three forms: narrowing (64 -> 24: the neighbour map before the aggregation),
/// square (24 -> 24: the aggregation then both maps, the backward from `A^T dy` without the
/// aggregate) and widening (24 -> 40: the aggregate kept for the backward); the square one once
/// more in mixed f16 where the device has f16. Normwise errors of the output and of every
/// gradient, with their bounds.
pub fn layer_checks<B: SparseGnnAutodiffBackend>(device: &B::Device) -> Vec<LayerCheck> {
    let spec = RandomGraphSpec { n_rows: 301, n_cols: 301, hub_degree: 3_000, ..Default::default() };
    let adj = random_csr(&spec);
    let (n, k) = (301usize, 8usize);
    let f = |len: usize, seed: u64| random_values(len, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>();
    // per shape (d, d_out): the input, the output's weights in the loss and the layer's weights
    let data = |(d, d_out): (usize, usize)| {
        let salt = (d * 100 + d_out) as u64;
        (
            f(n * d, 11 + salt),
            f(n * d_out, 12 + salt),
            [f(d * d_out, 13 + salt), f(d_out, 14 + salt), f(d * d_out, 15 + salt)],
        )
    };
    let maxk = Nonlinearity::Maxk { k };
    let (narrow, square, widen) = ((64usize, 24usize), (24usize, 24usize), (24usize, 40usize));
    // the CPU side runs on the conformance suite's f64 reference backend: Burn keys a device's
    // default dtypes by the device type, which NdArray<f32> and NdArray<f64> share, so in a
    // process where the suite has run, an NdArray<f32> layer would mix f64 tensors created with
    // the device default into its f32 ones. The edge-group width does not change its result.
    let cpu = |nonlin: Nonlinearity, shape: (usize, usize)| {
        let (xv, rv, weights) = data(shape);
        sage_run::<burn_sparse_gnn::conformance::RefBackend>(
            &Default::default(),
            &adj,
            (n, shape.0, shape.1),
            &xv,
            &rv,
            &weights,
            256,
            (nonlin, Precision::F32),
        )
    };
    let half = B::supports_dtype(device, burn::tensor::DType::F16);
    let mut runs = vec![];
    for gw in [256usize, 7] {
        runs.push((format!("SAGE + MaxK k={k} (group width {gw})"), gw, maxk, narrow, Precision::F32, LAYER_TOLERANCE));
        runs.push((
            format!("SAGE + ReLU (group width {gw})"),
            gw,
            Nonlinearity::Relu,
            narrow,
            Precision::F32,
            LAYER_TOLERANCE,
        ));
    }
    runs.push(("SAGE + ReLU, square".to_string(), 256, Nonlinearity::Relu, square, Precision::F32, LAYER_TOLERANCE));
    runs.push(("SAGE + ReLU, widening".to_string(), 256, Nonlinearity::Relu, widen, Precision::F32, LAYER_TOLERANCE));
    if half {
        runs.push((
            "SAGE + ReLU, square, mixed f16".to_string(),
            256,
            Nonlinearity::Relu,
            square,
            Precision::MixedF16,
            LAYER_TOLERANCE_HALF,
        ));
    }
    let mut refs: Vec<((Nonlinearity, (usize, usize)), LayerRun)> = Vec::new();
    let mut out = Vec::new();
    for (name, gw, nonlin, shape, precision, bound) in runs {
        let (xv, rv, weights) = data(shape);
        let dev = sage_run::<B>(device, &adj, (n, shape.0, shape.1), &xv, &rv, &weights, gw, (nonlin, precision));
        if !refs.iter().any(|(key, _)| *key == (nonlin, shape)) {
            refs.push(((nonlin, shape), cpu(nonlin, shape)));
        }
        let cpu = &refs.iter().find(|(key, _)| *key == (nonlin, shape)).expect("computed above").1;
        for (what, a, b) in [
            ("output", &dev.y, &cpu.y),
            ("grad input", &dev.dx, &cpu.dx),
            ("grad W_neigh", &dev.dw_neigh, &cpu.dw_neigh),
            ("grad b_neigh", &dev.db_neigh, &cpu.db_neigh),
            ("grad W_root", &dev.dw_root, &cpu.dw_root),
        ] {
            let err = if a.is_empty() || b.is_empty() { f64::INFINITY } else { normwise_error(a, b) };
            out.push((format!("{name}: {what}"), err, bound));
        }
    }
    out
}

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
            println!(
                "== {backend}: one-pass half rows and 1 / degree rows against the composed ops ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
            let (bad, ran) = print_exact_checks(&checks);
            failed += bad;
            total += ran;
        }
        if self.filter.is_none() {
            let start = std::time::Instant::now();
            let dtypes = [burn::tensor::FloatDType::F32, burn::tensor::FloatDType::F16, burn::tensor::FloatDType::BF16];
            let checks = add_rows_checks::<B::InnerBackend>(&device, &dtypes, &[1, 7, 256, 602]);
            let uploads = from_host_checks::<B::InnerBackend>(&device, &dtypes, &[1, 7, 256]);
            println!(
                "== {backend}: halo gradients added in place against the CPU reference, received rows uploaded \
                 from host bytes ({:.1} s)",
                start.elapsed().as_secs_f64()
            );
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
            for (what, e) in cross_entropy_checks::<B>(&device, &[7, 47], &shared_memory) {
                checks.push((format!("{what} (shared-memory fallback)"), e));
            }
            println!(
                "== {backend}: weighted cross-entropy against the CPU reference ({:.1} s)",
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
            use burn::tensor::backend::Device as _;
            let count = B::device_count(device.to_id().type_id).max(1);
            for parts in [2, 4] {
                // one part per device where there are enough, else parts in turn over them
                let indices: Vec<usize> = (0..count.min(parts)).collect();
                let devices = crate::partitioned::devices_of::<B>(&device, &indices);
                let start = std::time::Instant::now();
                let checks = crate::partitioned::equality_checks::<B>(&devices, parts)?;
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
