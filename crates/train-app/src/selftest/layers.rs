//! A GraphSAGE layer (forward and gradients) on the chosen device against the CPU in f64.

use crate::bench::host;
use burn::module::Param;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::conformance::normwise_error;
use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
use burn_sparse_gnn::{Graph, GraphOptions, SparseGnnAutodiffBackend};
use gnn_models::{Nonlinearity, Precision, SageConv, SageConvConfig};

/// Tolerance of [`layer_checks`] (the device in f32 against the CPU in f64, from the same f32
/// inputs). The layer's dense products run in exact f32 through cuBLAS on CUDA; where
/// libcublas is missing they fall back to Burn's matmul, which uses TF32 on CUDA (normwise
/// 2.3e-4 to 2.9e-4 from f64 in this check on the H200), so the bound sits above that; a wiring
/// or kernel error shows as an error of order 1.
pub const LAYER_TOLERANCE: f64 = 1e-3;

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
