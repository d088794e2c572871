//! GAT convolution (Velickovic et al.): multi-head attention over each node's in-neighbours.
//! Edge scores `e_ij = LeakyReLU(a_dst . W h_i + a_src . W h_j)` come from one SDDMM
//! (`<[s_dst_i, 1], [1, s_src_j]>` per head), the edge softmax subtracts the row maximum (so
//! `exp` never overflows, also in half precision), and the weighted multi-head SpMM aggregates.
//! The graph should contain self-loops (as in PyG, where `GATConv` adds them).
//!
//! On a graph with edge weights ([`Graph::weights`]) each attention coefficient is multiplied
//! by its edge's weight after the softmax (and the attention dropout), as DGL's
//! `GATConv(edge_weight=...)`: `out_i = sum_j w_ij alpha_ij W h_j`. The coefficients of a row
//! then no longer sum to 1 (unless its weights are 1). Zero, tiny and negative weights are
//! accepted as they are; self-loops added by `train-app` have weight 1.

use crate::hidden::Hidden;
use crate::linear::add_bias;
use crate::precision::Precision;
use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Dropout, DropoutConfig, Initializer, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{ops, Graph, Reduce, SparseGnnBackend};
use super::options::ConvOptions;
use super::spec::{ConvSpec, EstimateLayer, LayerShape, SavedBytes};

/// Configuration of [`GatConv`].
#[derive(Config, Debug)]
pub struct GatConvConfig {
    /// Input width.
    pub d_in: usize,
    /// Output width per head.
    pub d_head: usize,
    /// Number of heads.
    #[config(default = 1)]
    pub heads: usize,
    /// Concatenate the heads (`[n, heads * d_head]`) instead of averaging them (`[n, d_head]`).
    #[config(default = true)]
    pub concat: bool,
    /// Slope of the LeakyReLU on the scores.
    #[config(default = 0.2)]
    pub negative_slope: f64,
    /// Dropout on the attention coefficients.
    #[config(default = 0.0)]
    pub attention_dropout: f64,
}

/// A GAT layer.
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
/// use gnn_models::{GatConvConfig, Hidden, Precision};
///
/// type B = NdArray;
/// let dev = Default::default();
/// let opts = BuildOptions { symmetrize: true, add_self_loops: true, dedup: true };
/// let adj = Csr::from_edges(3, &[0, 1], &[1, 2], None, opts).unwrap();
/// let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
/// let conv = GatConvConfig::new(4, 2).with_heads(3).init::<B>(&dev);
/// let y = conv.forward(&g, &Hidden::Dense(Tensor::ones([3, 4], &dev)), Precision::F32);
/// assert_eq!(y.dims(), [3, 6]);
/// ```
#[derive(Module, Debug)]
pub struct GatConv<B: Backend> {
    pub lin: Linear<B>,
    pub att_src: Param<Tensor<B, 2>>,
    pub att_dst: Param<Tensor<B, 2>>,
    pub bias: Param<Tensor<B, 1>>,
    pub dropout: Dropout,
    pub heads: usize,
    pub d_head: usize,
    pub concat: bool,
    pub negative_slope: f64,
}

impl GatConvConfig {
    /// Width of the output.
    pub fn d_out(&self) -> usize {
        if self.concat {
            self.heads * self.d_head
        } else {
            self.d_head
        }
    }

    /// Initialises the layer.
    pub fn init<B: Backend>(&self, device: &B::Device) -> GatConv<B> {
        let glorot = Initializer::XavierUniform { gain: 1.0 };
        GatConv {
            lin: LinearConfig::new(self.d_in, self.heads * self.d_head)
                .with_bias(false)
                .with_initializer(glorot.clone())
                .init(device),
            att_src: glorot.init_with([self.heads, self.d_head], Some(self.d_head), Some(1), device),
            att_dst: glorot.init_with([self.heads, self.d_head], Some(self.d_head), Some(1), device),
            bias: Param::from_tensor(Tensor::zeros([self.d_out()], device)),
            dropout: DropoutConfig::new(self.attention_dropout).init(),
            heads: self.heads,
            d_head: self.d_head,
            concat: self.concat,
            negative_slope: self.negative_slope,
        }
    }
}

impl<B: SparseGnnBackend> GatConv<B> {
    /// `[n, d_in]` -> `[n, heads * d_head]` (concat) or `[n, d_head]` (mean of the heads).
    pub fn forward(&self, g: &Graph<B>, h: &Hidden<B>, precision: Precision) -> Tensor<B, 2> {
        let x = precision.linear(&self.lin, h.dense());
        // on a part of a partitioned graph `x` holds the part's rows then its halo rows
        let [n_cols, _] = x.dims();
        let n = g.n_rows();
        let hd = self.heads;
        // the projected rows in the storage precision: the aggregation and the scores read (and
        // keep) this one copy; in mixed precision the f32 rows are dropped after the cast
        let xs = precision.down(x);
        // both scores of every head in one product, `[n_cols, 2 heads]`: `s_dst` then `s_src`
        let s = precision.matmul_nodes(xs.clone(), self.score_weights());
        let s_dst = s.clone().slice([0..n, 0..hd]);
        let s_src = s.slice([0..n_cols, hd..2 * hd]);
        // In mixed precision the coefficients are stored in half precision: the `[edges, heads]`
        // tensors are most of the layer's memory. The fused op computes the scores and their
        // softmax in f32 and keeps only the coefficients for its backward.
        let alpha = ops::gat_attention(g, precision.down(s_dst), precision.down(s_src), self.negative_slope);
        let alpha = crate::activation::dropout(&self.dropout, alpha);
        let alpha = match g.weights() {
            Some(w) => alpha * precision.down(w.clone()).unsqueeze_dim::<2>(1),
            None => alpha,
        };
        let out = precision.up(ops::spmm_heads(g, alpha, xs, Reduce::Sum));
        let dd = self.d_head;
        let out = if self.concat { out } else { out.reshape([n, hd, dd]).mean_dim(1).reshape([n, dd]) };
        add_bias(out, self.bias.val())
    }
}

impl<B: Backend> GatConv<B> {
    /// `[heads * d_head, 2 heads]`: the attention vectors as block-diagonal columns, `a_dst`'s
    /// heads then `a_src`'s, so that `x @ A` gives every node's two scores per head
    /// (`s[i, h] = sum_j x[i, h * d_head + j] a[h, j]`).
    fn score_weights(&self) -> Tensor<B, 2> {
        let (hd, dd) = (self.heads, self.d_head);
        let device = self.att_dst.val().device();
        let blocks: Vec<f32> = (0..hd * dd).flat_map(|r| (0..hd).map(move |h| f32::from(u8::from(r / dd == h)))).collect();
        let blocks = Tensor::<B, 2>::from_data(burn::tensor::TensorData::new(blocks, [hd * dd, hd]), &device);
        let column = |a: Tensor<B, 2>| a.reshape([hd * dd, 1]) * blocks.clone();
        Tensor::cat(vec![column(self.att_dst.val()), column(self.att_src.val())], 1)
    }
}

impl ConvSpec for GatConvConfig {
    type Layer<B: Backend> = GatConv<B>;

    /// The heads split the hidden width and are concatenated; the classic stack's last layer
    /// (the logits) has one head.
    fn layer<B: Backend>(opts: &ConvOptions, shape: LayerShape, device: &B::Device) -> GatConv<B> {
        let (heads, d_head, concat) = if shape.logits {
            (1, shape.d_out, false)
        } else {
            (opts.gat_heads, shape.d_out / opts.gat_heads, true)
        };
        GatConvConfig::new(shape.d_in, d_head)
            .with_heads(heads)
            .with_concat(concat)
            .with_attention_dropout(opts.gat_attention_dropout)
            .init(device)
    }

    fn check(opts: &ConvOptions) -> Result<(), String> {
        if opts.gat_heads == 0 || opts.hidden % opts.gat_heads != 0 {
            return Err(format!("{} GAT heads must divide the hidden width {}", opts.gat_heads, opts.hidden));
        }
        Ok(())
    }

    /// A node attends to itself.
    fn needs_self_loops() -> bool {
        true
    }

    fn parameter_count(_opts: &ConvOptions, d_in: u64, d_out: u64) -> u64 {
        d_in * d_out + d_out + 2 * d_out
    }

    /// The projected rows in the storage precision (read by the scores' product and the
    /// aggregation), the two scores per head, and per edge and head the coefficients in the
    /// storage precision (with attention dropout also the dropped coefficients and their mask).
    fn saved_bytes(opts: &ConvOptions, l: &EstimateLayer) -> SavedBytes {
        let heads = opts.gat_heads as u64;
        let dropped = if opts.gat_attention_dropout > 0.0 { l.saved + 1 } else { 0 };
        SavedBytes {
            per_node: l.saved * l.hidden + l.saved * 2 * heads,
            per_edge: (l.saved + dropped) * heads,
        }
    }
}
