//! GCN convolution (Kipf & Welling): `out = D_l (A + I) D_r h W + b`.
//!
//! On a graph with edge weights ([`Graph::weights`]) `A` holds them and the degrees are
//! weighted, as PyG's `GCNConv(edge_weight=...)` (`gcn_norm`): `d_i = 1 + sum_j w_ij` (the
//! self-loop's weight is 1), `out_i = sum_j w_ij d_i^-1/2 d_j^-1/2 h_j + d_i^-1 h_i`. The left
//! factor takes the row's weight sum (weighted in-degree), the right one the column's (weighted
//! out-degree), as the unweighted layer takes the in- and out-degrees: on a symmetric weighted
//! graph both are PyG's degree. A factor is 0 where its weighted degree is not positive or its
//! power is not a finite float (PyG gives NaN for a negative degree): zero, tiny and negative
//! weights are accepted as they are.

use crate::aggregate::{aggregate, aggregate_weighted, per_edge_products};
use crate::hidden::Hidden;
use crate::linear::add_bias;
use crate::precision::Precision;
use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{Graph, Reduce, SparseGnnBackend};
use super::options::ConvOptions;
use super::spec::{ConvSpec, EstimateLayer, LayerShape, SavedBytes};

pub use super::options::GcnNorm;

/// Configuration of [`GcnConv`].
#[derive(Config, Debug)]
pub struct GcnConvConfig {
    /// Input width.
    pub d_in: usize,
    /// Output width.
    pub d_out: usize,
    /// Degree normalisation.
    #[config(default = "GcnNorm::Symmetric")]
    pub norm: GcnNorm,
    /// Add a self-loop to every node (computed in the layer; the graph is not changed).
    #[config(default = true)]
    pub self_loops: bool,
    /// Compute the normalisation once per graph and reuse it (it only depends on the graph).
    #[config(default = true)]
    pub cached: bool,
    /// Learnable bias.
    #[config(default = true)]
    pub bias: bool,
}

/// A GCN layer (edge weights: see the module docs).
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
/// use gnn_models::{GcnConvConfig, Hidden, Precision};
///
/// type B = NdArray;
/// let dev = Default::default();
/// let adj = Csr::from_edges(3, &[0, 1], &[1, 2], None, BuildOptions::undirected()).unwrap();
/// let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
/// let conv = GcnConvConfig::new(4, 2).init::<B>(&dev);
/// let x = Tensor::<B, 2>::ones([3, 4], &dev);
/// let y = conv.forward(&g, &Hidden::Dense(x), Precision::F32);
/// assert_eq!(y.dims(), [3, 2]);
/// ```
#[derive(Module, Debug)]
pub struct GcnConv<B: Backend> {
    pub linear: Linear<B>,
    pub bias: Option<Param<Tensor<B, 1>>>,
    pub d_in: usize,
    pub d_out: usize,
    pub self_loops: bool,
    pub cached: bool,
    #[module(skip)]
    pub norm: GcnNorm,
}

impl GcnConvConfig {
    /// Initialises the layer.
    pub fn init<B: Backend>(&self, device: &B::Device) -> GcnConv<B> {
        GcnConv {
            linear: LinearConfig::new(self.d_in, self.d_out)
                .with_bias(false)
                // Glorot, as PyG's GCNConv (Burn's default bound 1/sqrt(d_in) is 2.4x smaller for
                // 767 -> 64 and trained Amazon Computers 2.9 points worse in 200 epochs)
                .with_initializer(Initializer::XavierUniform { gain: 1.0 })
                .init(device),
            bias: self.bias.then(|| Param::from_tensor(Tensor::zeros([self.d_out], device))),
            d_in: self.d_in,
            d_out: self.d_out,
            self_loops: self.self_loops,
            cached: self.cached,
            norm: self.norm,
        }
    }
}

/// `(d + loop)^p`, 0 where the degree is 0.
fn degree_power<B: Backend>(deg: Tensor<B, 1>, self_loop: bool, p: f64) -> Tensor<B, 1> {
    let d = if self_loop { deg + 1.0 } else { deg };
    let zero = d.clone().lower_equal_elem(0.0);
    d.clamp_min(1.0).powf_scalar(p).mask_fill(zero, 0.0)
}

/// `d^p` where `d > 0` and the power is a finite float, else 0 (weighted degrees).
fn weighted_degree_power<B: Backend>(d: Tensor<B, 1>, self_loop: bool, p: f64) -> Tensor<B, 1> {
    let d = if self_loop { d + 1.0 } else { d };
    let off = d.clone().lower_equal_elem(0.0);
    let v = d.powf_scalar(p).mask_fill(off, 0.0);
    let bad = v.clone().is_finite().bool_not();
    v.mask_fill(bad, 0.0)
}

impl<B: SparseGnnBackend> GcnConv<B> {
    /// The normalised edge weights `w_ij l_i r_j` (`[nnz]`) and, with self-loops, the self-loop
    /// coefficients `l_i r_i` of the rows (`[n_rows]`), from the graph's weights and weighted
    /// degrees (remembered per graph when the layer is cached).
    fn weighted_norms(&self, g: &Graph<B>, w: &Tensor<B, 1>) -> (Tensor<B, 1>, Option<Tensor<B, 1>>) {
        let sl = self.self_loops;
        let norm = self.norm;
        let n = g.n_rows();
        let factors = |g: &Graph<B>| {
            let (rows, cols) = match g.weight_sums() {
                Some(s) => (s.rows.clone(), s.cols.clone()),
                // a graph with weights always has its weighted degrees; unweighted degrees else
                None => (g.norms().in_degree.clone(), g.norms().out_degree.clone()),
            };
            let side = |d: Tensor<B, 1>, p: f64| weighted_degree_power(d, sl, p);
            match norm {
                GcnNorm::Symmetric => (Some(side(rows, -0.5)), Some(side(cols, -0.5))),
                GcnNorm::Left => (Some(side(rows, -1.0)), None),
                GcnNorm::Right => (None, Some(side(cols, -1.0))),
                GcnNorm::None => (None, None),
            }
        };
        let edges = |g: &Graph<B>| {
            let device = w.device();
            match factors(g) {
                (None, None) => w.clone(),
                (l, r) => {
                    let l = l.unwrap_or_else(|| Tensor::ones([n], &device));
                    let r = r.unwrap_or_else(|| Tensor::ones([g.n_cols()], &device));
                    w.clone() * per_edge_products(g, l, r)
                }
            }
        };
        let loops = |g: &Graph<B>| {
            let device = w.device();
            match factors(g) {
                (None, None) => Tensor::ones([n], &device),
                (l, r) => {
                    let l = l.unwrap_or_else(|| Tensor::ones([n], &device));
                    // a part's columns start with its own rows
                    let r = r.map(|r| if r.dims()[0] == n { r } else { r.slice(0..n) });
                    r.map_or(l.clone(), |r| l * r)
                }
            }
        };
        let key = format!("gcn:weighted:{norm:?}:{sl}");
        let (e, s) = if self.cached {
            let e = g.memoized(&format!("{key}:edges"), edges);
            (e, sl.then(|| g.memoized(&format!("{key}:loops"), loops)))
        } else {
            (edges(g), sl.then(|| loops(g)))
        };
        (e, s)
    }

    fn norms(&self, g: &Graph<B>) -> (Option<Tensor<B, 1>>, Option<Tensor<B, 1>>) {
        let sl = self.self_loops;
        let compute = |side: &'static str, p: f64| {
            let key = format!("gcn:{side}:{sl}:{p}");
            let f = |g: &Graph<B>| {
                let deg = if side == "in" { g.norms().in_degree.clone() } else { g.norms().out_degree.clone() };
                degree_power(deg, sl, p)
            };
            if self.cached {
                g.memoized(&key, f)
            } else {
                f(g)
            }
        };
        match self.norm {
            GcnNorm::Symmetric => (Some(compute("in", -0.5)), Some(compute("out", -0.5))),
            GcnNorm::Left => (Some(compute("in", -1.0)), None),
            GcnNorm::Right => (None, Some(compute("out", -1.0))),
            GcnNorm::None => (None, None),
        }
    }

    /// `[n, d_in]` -> `[n, d_out]`. Dense input is transformed before the aggregation when that
    /// narrows it; CBSR input is aggregated by the CBSR SpGEMM first.
    pub fn forward(&self, g: &Graph<B>, h: &Hidden<B>, precision: Precision) -> Tensor<B, 2> {
        if let Some(w) = g.weights() {
            return self.forward_weighted(g, w, h, precision);
        }
        let (left, right) = self.norms(g);
        let transform_first = matches!(h, Hidden::Dense(_)) && self.d_out < self.d_in;
        let h = if transform_first { Hidden::Dense(precision.linear(&self.linear, h.dense())) } else { h.clone() };
        let s = match right {
            Some(r) => h.scale_rows(r),
            None => h,
        };
        let mut agg = aggregate(g, &s, Reduce::Sum, precision);
        if self.self_loops {
            agg = agg + s.head(g.n_rows()).dense();
        }
        if let Some(l) = left {
            agg = agg * l.unsqueeze_dim::<2>(1);
        }
        let out = if transform_first { agg } else { precision.linear(&self.linear, agg) };
        match &self.bias {
            Some(b) => add_bias(out, b.val()),
            None => out,
        }
    }

    /// [`GcnConv::forward`] on a graph with edge weights `w`: the weighted SpMM (or CBSR
    /// SpGEMM) with the normalised edge weights, plus the self-loop term.
    fn forward_weighted(&self, g: &Graph<B>, w: &Tensor<B, 1>, h: &Hidden<B>, precision: Precision) -> Tensor<B, 2> {
        let (edges, loops) = self.weighted_norms(g, w);
        let transform_first = matches!(h, Hidden::Dense(_)) && self.d_out < self.d_in;
        let h = if transform_first { Hidden::Dense(precision.linear(&self.linear, h.dense())) } else { h.clone() };
        let mut agg = aggregate_weighted(g, &h, Some(&edges), Reduce::Sum, precision);
        if let Some(c) = loops {
            agg = agg + h.head(g.n_rows()).dense() * c.unsqueeze_dim::<2>(1);
        }
        let out = if transform_first { agg } else { precision.linear(&self.linear, agg) };
        match &self.bias {
            Some(b) => add_bias(out, b.val()),
            None => out,
        }
    }
}

impl ConvSpec for GcnConvConfig {
    type Layer<B: Backend> = GcnConv<B>;

    fn layer<B: Backend>(opts: &ConvOptions, shape: LayerShape, device: &B::Device) -> GcnConv<B> {
        GcnConvConfig::new(shape.d_in, shape.d_out).with_norm(opts.gcn_norm).init(device)
    }

    fn supports_boundary_sampling(_opts: &ConvOptions) -> bool {
        true
    }

    fn sums_neighbours(_opts: &ConvOptions) -> bool {
        true
    }

    fn parameter_count(_opts: &ConvOptions, d_in: u64, d_out: u64) -> u64 {
        d_in * d_out + d_out
    }

    /// The aggregated rows the linear map reads.
    fn saved_bytes(_opts: &ConvOptions, l: &EstimateLayer) -> SavedBytes {
        SavedBytes { per_node: l.saved * l.width_in.max(l.hidden), per_edge: 0 }
    }
}
