//! GIN convolution: `out = MLP((1 + eps) h_i + sum_{j -> i} h_j)`, with HalfGNN's half-safe
//! variant `MLP((1 + eps) h_i + lambda * mean_{j -> i} h_j)` (no overflow on hub rows in f16).
//!
//! In mixed f16 the sum runs in f32: a hub row's sum passes f16's largest value (65,504) long
//! before f32's, so a half-precision sum would turn to infinity where f32 trains; the MLP's
//! products stay in half precision. The half-safe variant (a mean, which cannot overflow) and
//! mixed bf16 (f32's range) aggregate in the half type.
//!
//! On a graph with edge weights ([`Graph::weights`]) the sum is weighted, as DGL's
//! `GINConv(edge_weight=...)`: `MLP((1 + eps) h_i + sum_j w_ij h_j)`, and the half-safe variant
//! takes `lambda * sum_j w_ij h_j / deg(i)` (divided by the number of the row's edges). Zero,
//! tiny and negative weights are accepted as they are.

use crate::activation::relu_rows;
use crate::aggregate::aggregate;
use crate::hidden::Hidden;
use crate::linear::add_bias;
use crate::precision::Precision;
use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{Graph, Reduce, SparseGnnBackend};
use super::options::ConvOptions;
use super::spec::{ConvSpec, EstimateLayer, LayerShape, SavedBytes};

/// Configuration of [`GinConv`].
#[derive(Config, Debug)]
pub struct GinConvConfig {
    /// Input width.
    pub d_in: usize,
    /// Output width.
    pub d_out: usize,
    /// Learn `eps` (else it stays at its initial value).
    #[config(default = true)]
    pub learn_eps: bool,
    /// Initial `eps`.
    #[config(default = 0.0)]
    pub eps: f64,
    /// Half-safe aggregation `lambda * mean` instead of the sum (HalfGNN uses 0.1).
    #[config(default = "None")]
    pub half_safe_lambda: Option<f64>,
    /// Width of the MLP's hidden layer (default: `d_out`).
    #[config(default = "None")]
    pub d_mlp: Option<usize>,
}

/// A GIN layer with a two-layer MLP.
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
/// use gnn_models::{GinConvConfig, Hidden, Precision};
///
/// type B = NdArray;
/// let dev = Default::default();
/// let adj = Csr::from_edges(3, &[0, 1], &[1, 2], None, BuildOptions::undirected()).unwrap();
/// let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
/// let conv = GinConvConfig::new(4, 2).init::<B>(&dev);
/// let y = conv.forward(&g, &Hidden::Dense(Tensor::ones([3, 4], &dev)), Precision::F32);
/// assert_eq!(y.dims(), [3, 2]);
/// ```
#[derive(Module, Debug)]
pub struct GinConv<B: Backend> {
    pub mlp_in: Linear<B>,
    pub mlp_out: Linear<B>,
    pub eps: Param<Tensor<B, 1>>,
    pub lambda: Option<f64>,
    /// `eps` where it is not learned: the forward pass scales `h_i` by the constant (no scaling
    /// at all for GIN-0's 0) instead of reading the parameter (two launches fewer).
    pub eps_fixed: Option<f64>,
}

impl GinConvConfig {
    /// Initialises the layer.
    pub fn init<B: Backend>(&self, device: &B::Device) -> GinConv<B> {
        let eps = Param::from_tensor(Tensor::from_data(burn::tensor::TensorData::new(vec![self.eps], [1]), device))
            .set_require_grad(self.learn_eps);
        GinConv {
            mlp_in: LinearConfig::new(self.d_in, self.d_mlp.unwrap_or(self.d_out)).init(device),
            mlp_out: LinearConfig::new(self.d_mlp.unwrap_or(self.d_out), self.d_out).init(device),
            eps,
            lambda: self.half_safe_lambda,
            eps_fixed: (!self.learn_eps).then_some(self.eps),
        }
    }
}

impl<B: Backend> GinConv<B> {
    /// The layer with `eps` fixed at `eps` and no longer learned (GIN-0: 0).
    pub fn with_fixed_eps(mut self, eps: f64) -> Self {
        let device = self.eps.val().device();
        let value = Tensor::from_data(burn::tensor::TensorData::new(vec![eps], [1]), &device);
        self.eps = Param::from_tensor(value).set_require_grad(false);
        self.eps_fixed = Some(eps);
        self
    }

    /// `(1 + eps) own + agg`.
    fn combine(&self, own: Tensor<B, 2>, agg: Tensor<B, 2>) -> Tensor<B, 2> {
        match self.eps_fixed {
            Some(e) if e == 0.0 => own + agg,
            Some(e) => own.mul_scalar(1.0 + e) + agg,
            None => own * self.eps.val().add_scalar(1.0).unsqueeze_dim::<2>(0) + agg,
        }
    }
}

impl<B: SparseGnnBackend> GinConv<B> {
    /// `[n, d_in]` -> `[n, d_out]`.
    pub fn forward(&self, g: &Graph<B>, h: &Hidden<B>, precision: Precision) -> Tensor<B, 2> {
        // the sum in f32 where the half type's range is f16's (see the module docs)
        let sum_precision = if precision == Precision::MixedF16 { Precision::F32 } else { precision };
        // the MLP's first linear map commutes with the aggregation: transform first when that
        // narrows dense input
        let [_, d_in] = h.dims();
        let d_mid = self.mlp_in.weight.dims()[1];
        if let (Hidden::Dense(x), true) = (h, d_mid < d_in) {
            let w = precision.matmul_nodes(x.clone(), self.mlp_in.weight.val());
            let wh = Hidden::Dense(w.clone());
            let agg = match self.lambda {
                Some(l) => aggregate(g, &wh, Reduce::Mean, precision) * l,
                None => aggregate(g, &wh, Reduce::Sum, sum_precision),
            };
            let own = if w.dims()[0] == g.n_rows() { w } else { w.slice(0..g.n_rows()) };
            let mut z = self.combine(own, agg);
            if let Some(b) = &self.mlp_in.bias {
                z = add_bias(z, b.val());
            }
            return precision.linear(&self.mlp_out, relu_rows(z));
        }
        let agg = match self.lambda {
            Some(l) => aggregate(g, h, Reduce::Mean, precision) * l,
            None => aggregate(g, h, Reduce::Sum, sum_precision),
        };
        let z = self.combine(h.head(g.n_rows()).dense(), agg);
        precision.linear(&self.mlp_out, relu_rows(precision.linear(&self.mlp_in, z)))
    }
}

impl ConvSpec for GinConvConfig {
    type Layer<B: Backend> = GinConv<B>;

    fn layer<B: Backend>(opts: &ConvOptions, shape: LayerShape, device: &B::Device) -> GinConv<B> {
        GinConvConfig::new(shape.d_in, shape.d_out)
            .with_half_safe_lambda(opts.gin_half_safe_lambda)
            .with_d_mlp(Some(shape.d_out.max(opts.hidden)))
            .init(device)
    }

    fn supports_boundary_sampling(_opts: &ConvOptions) -> bool {
        true
    }

    fn sums_neighbours(opts: &ConvOptions) -> bool {
        opts.gin_half_safe_lambda.is_none()
    }

    fn parameter_count(opts: &ConvOptions, d_in: u64, d_out: u64) -> u64 {
        let inner = d_out.max(opts.hidden as u64);
        (d_in * inner + inner) + (inner * d_out + d_out) + 1
    }

    /// The MLP: its input, the inner ReLU mask and the inner activations.
    fn saved_bytes(_opts: &ConvOptions, l: &EstimateLayer) -> SavedBytes {
        SavedBytes { per_node: l.saved * l.width_in + l.hidden + l.saved * l.hidden, per_edge: 0 }
    }
}
