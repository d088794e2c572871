//! GAT's fused attention coefficients ([`crate::ops::try_gat_attention`]) on a backend, through
//! its autodiff, against the CPU reference of the kernels crate: the coefficients and both
//! inputs' gradients, on random graphs with a hub row, empty rows, duplicates and a rectangular
//! shape (a part with halo columns), in f32 and half precision.

use super::measure::normwise_error;
use crate::backend::SparseGnnAutodiffBackend;
use crate::graph::{Graph, GraphOptions};
use crate::random::{random_csr, random_values, RandomGraphSpec};
use burn::tensor::{DType, FloatDType, Tensor, TensorData};
use sparse_gnn_kernels::attention::reference;

/// Normwise error bound of [`gat_attention_checks`] in f32.
pub const GAT_ATTENTION_BOUND_F32: f64 = 1e-5;
/// Normwise error bound of [`gat_attention_checks`] in f16 storage: the output and the gradients
/// are rounded to f16 once (f32 arithmetic inside), 4 units in the last place at 1 (lavapipe:
/// at most 3.5e-4).
pub const GAT_ATTENTION_BOUND_F16: f64 = 2e-3;
/// The same for bf16 storage (8 bits of mantissa against f16's 11).
pub const GAT_ATTENTION_BOUND_BF16: f64 = 1.6e-2;

/// The bound of [`gat_attention_checks`] for `dtype`.
pub fn gat_attention_bound(dtype: FloatDType) -> f64 {
    match dtype {
        FloatDType::F16 => GAT_ATTENTION_BOUND_F16,
        FloatDType::BF16 => GAT_ATTENTION_BOUND_BF16,
        _ => GAT_ATTENTION_BOUND_F32,
    }
}

/// `(case, dtype, normwise error)` of the coefficients, `d_s_dst` and `d_s_src` for each graph,
/// head count (1, 3, 4 and 40: a cube's lanes hold several edges of every head, or one) and dtype
/// of `dtypes`; the error is `None` where `B` lacks the dtype. The gradient flowing into the
/// coefficients is random, and the reference reads the inputs after their rounding to `dtype`, so
/// only the op's own arithmetic is measured.
pub fn gat_attention_checks<B: SparseGnnAutodiffBackend>(
    device: &B::Device,
    dtypes: &[FloatDType],
) -> Vec<(String, FloatDType, Option<f64>)> {
    let square = RandomGraphSpec { n_rows: 301, n_cols: 301, hub_degree: 3_000, seed: 5, ..Default::default() };
    let specs = [
        ("301 x 301, hub 3,000", square),
        (
            "257 x 1,031 (halo columns), hub 2,000",
            RandomGraphSpec {
                n_rows: 257,
                n_cols: 1_031,
                hub_degree: 2_000,
                empty_fraction: 0.2,
                self_loops: false,
                seed: 6,
                ..square
            },
        ),
        (
            "3 x 5",
            RandomGraphSpec {
                n_rows: 3,
                n_cols: 5,
                avg_degree: 2,
                hub_degree: 0,
                self_loops: false,
                seed: 7,
                ..square
            },
        ),
    ];
    let slope = 0.2;
    let mut out = Vec::new();
    for (name, spec) in specs {
        let csr = random_csr(&spec);
        let g = Graph::<B>::new(&csr, device, GraphOptions::default());
        let h = csr.as_ref();
        for heads in [1usize, 3, 4, 40] {
            for &dtype in dtypes {
                let case = format!("gat attention, {name}, {} edges, {heads} heads", h.nnz());
                if !B::supports_dtype(device, DType::from(dtype)) {
                    for what in ["coefficients", "d_s_dst", "d_s_src"] {
                        out.push((format!("{case}: {what}"), dtype, None));
                    }
                    continue;
                }
                let seed = 100 * spec.seed + heads as u64;
                let make = |n: usize, seed: u64, scale: f64| -> Tensor<B, 2> {
                    let v: Vec<f32> = random_values(n * heads, seed).into_iter().map(|v| (v * scale) as f32).collect();
                    Tensor::<B, 2>::from_data(TensorData::new(v, [n, heads]), device).cast(dtype)
                };
                let values = |t: Tensor<B::InnerBackend, 2>| -> Vec<f64> {
                    t.cast(FloatDType::F32).into_data().convert::<f64>().into_vec().unwrap_or_default()
                };
                let s_dst = make(spec.n_rows, seed, 3.0);
                let s_src = make(spec.n_cols, seed + 1, 3.0);
                let d_alpha = make(h.nnz(), seed + 2, 1.0);
                let (sd, ss, da) =
                    (values(s_dst.clone().inner()), values(s_src.clone().inner()), values(d_alpha.clone().inner()));
                let (s_dst, s_src) = (s_dst.require_grad(), s_src.require_grad());
                let alpha = match crate::ops::try_gat_attention(&g, s_dst.clone(), s_src.clone(), slope) {
                    Ok(a) => a,
                    Err(e) => {
                        out.push((format!("{case}: {e}"), dtype, Some(f64::INFINITY)));
                        continue;
                    }
                };
                let grads = (alpha.clone() * d_alpha).sum().backward();
                let want = reference::gat_attention(&h, &sd, &ss, heads, slope);
                let (want_dst, want_src) = reference::gat_attention_backward(&h, &sd, &ss, &want, &da, heads, slope);
                let got = values(alpha.inner());
                let got_dst = s_dst.grad(&grads).map(values).unwrap_or_default();
                let got_src = s_src.grad(&grads).map(values).unwrap_or_default();
                for (what, got, want) in
                    [("coefficients", got, want), ("d_s_dst", got_dst, want_dst), ("d_s_src", got_src, want_src)]
                {
                    out.push((format!("{case}: {what}"), dtype, Some(normwise_error(&got, &want))));
                }
            }
        }
    }
    out
}
