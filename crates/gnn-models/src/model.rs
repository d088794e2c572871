//! The model of MaxK-GNN (Table 3): `lin_in -> [nonlinearity -> dropout -> conv (-> norm)] x L
//! -> lin_out`, with the convolution, depth, width, nonlinearity, dropout, normalisation and
//! precision configurable.

use crate::activation::Nonlinearity;
use crate::conv::{Conv, ConvKind, ConvOptions, GcnNorm, LayerShape, SageAggr};
use crate::hidden::Hidden;
use crate::linear::linear;
use crate::precision::Precision;
use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burn_sparse_gnn::dropout::{relu_dropout, DropoutSeed};
use burn_sparse_gnn::{Graph, SparseGnnBackend};
use serde::{Deserialize, Serialize};

/// Normalisation after each convolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NormKind {
    #[default]
    None,
    LayerNorm,
}

/// A model configuration error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid model configuration: {0}")]
pub struct ModelError(pub String);

/// Configuration of [`GnnModel`].
#[derive(Config, Debug)]
pub struct GnnModelConfig {
    /// Convolution.
    pub conv: ConvKind,
    /// Input feature width.
    pub d_in: usize,
    /// Hidden width.
    pub hidden: usize,
    /// Number of classes.
    pub classes: usize,
    /// Number of convolution layers.
    #[config(default = 2)]
    pub layers: usize,
    /// Nonlinearity before each convolution.
    #[config(default = "Nonlinearity::Relu")]
    pub nonlin: Nonlinearity,
    /// Dropout before each convolution.
    #[config(default = 0.5)]
    pub dropout: f64,
    /// Normalisation after each convolution.
    #[config(default = "NormKind::None")]
    pub norm: NormKind,
    /// Storage precision of the sparse aggregations.
    #[config(default = "Precision::F32")]
    pub precision: Precision,
    /// GCN normalisation.
    #[config(default = "GcnNorm::Symmetric")]
    pub gcn_norm: GcnNorm,
    /// SAGE aggregation.
    #[config(default = "SageAggr::Mean")]
    pub sage_aggr: SageAggr,
    /// GAT heads (the hidden width is split over them).
    #[config(default = 4)]
    pub gat_heads: usize,
    /// GAT attention dropout.
    #[config(default = 0.0)]
    pub gat_attention_dropout: f64,
    /// GIN half-safe aggregation (`lambda * mean`).
    #[config(default = "None")]
    pub gin_half_safe_lambda: Option<f64>,
    /// MaxK-GNN's input and output linear layers (`lin_in`, `lin_out`) around hidden-to-hidden
    /// convolutions. Without them the convolutions map `d_in -> hidden -> ... -> classes`
    /// (the classic PyG / Kipf architecture; a GAT's last layer then has one head).
    #[config(default = true)]
    pub linear_io: bool,
    /// Dropout on the input features.
    #[config(default = 0.0)]
    pub input_dropout: f64,
}

/// A GNN for node classification.
#[derive(Module, Debug)]
pub struct GnnModel<B: Backend> {
    lin_in: Option<Linear<B>>,
    convs: Vec<Conv<B>>,
    norms: Vec<LayerNorm<B>>,
    lin_out: Option<Linear<B>>,
    dropout: Dropout,
    input_dropout: Dropout,
    #[module(skip)]
    nonlin: Nonlinearity,
    #[module(skip)]
    precision: Precision,
    /// Whether every convolution allows the split halo layout ([`ConvKind::supports_split_halo`]).
    #[module(skip)]
    split_halo: bool,
}

/// The checks every stack shares: positive widths `(d_in, hidden, classes)`, at least one
/// convolution, each named dropout probability in `[0, 1)`.
pub(crate) fn check_stack(
    (d_in, hidden, classes, layers): (usize, usize, usize, usize),
    dropouts: &[(&str, f64)],
) -> Result<(), ModelError> {
    let e = |m: String| Err(ModelError(m));
    if d_in == 0 || hidden == 0 || classes == 0 {
        return e(format!("widths must be positive (d_in {d_in}, hidden {hidden}, classes {classes})"));
    }
    if layers == 0 {
        return e("at least one convolution layer is needed".into());
    }
    for &(what, p) in dropouts {
        if !(0.0..1.0).contains(&p) {
            return e(format!("{what} must be in [0, 1), got {p}"));
        }
    }
    Ok(())
}

impl GnnModelConfig {
    /// Checks the configuration (widths, k, heads, dropout).
    pub fn check(&self) -> Result<(), ModelError> {
        check_stack(
            (self.d_in, self.hidden, self.classes, self.layers),
            &[
                ("dropout", self.dropout),
                ("attention dropout", self.gat_attention_dropout),
                ("input dropout", self.input_dropout),
            ],
        )?;
        self.conv.check(&self.conv_options()).map_err(ModelError)?;
        self.nonlin.check(self.hidden).map_err(ModelError)
    }

    /// The options the convolutions read ([`ConvOptions`]).
    pub fn conv_options(&self) -> ConvOptions {
        ConvOptions {
            hidden: self.hidden,
            gcn_norm: self.gcn_norm,
            sage_aggr: self.sage_aggr,
            gat_heads: self.gat_heads,
            gat_attention_dropout: self.gat_attention_dropout,
            gin_half_safe_lambda: self.gin_half_safe_lambda,
        }
    }

    /// Whether the convolutions sum their neighbours' rows ([`ConvKind::sums_neighbours`]): a
    /// sampled block then weighs each edge `degree / sampled` (see
    /// [`GnnModel::forward_blocks`]).
    pub fn sums_neighbours(&self) -> bool {
        self.conv.sums_neighbours(&self.conv_options())
    }

    /// Whether the model's layers run the CBSR kernels (a MaxK or k-max-pooling nonlinearity
    /// between convolutions), which read the graph's CBSR edge groups.
    pub fn runs_cbsr(&self) -> bool {
        !matches!(self.nonlin, crate::activation::Nonlinearity::Relu)
    }

    /// Whether the graph must contain self-loops for this model (GAT attends to itself).
    pub fn needs_self_loops(&self) -> bool {
        self.conv.needs_self_loops()
    }

    /// Initialises the model (after [`GnnModelConfig::check`]).
    pub fn init<B: Backend>(&self, device: &B::Device) -> Result<GnnModel<B>, ModelError> {
        self.check()?;
        let h = self.hidden;
        // widths of each convolution
        let dims: Vec<(usize, usize)> = (0..self.layers)
            .map(|l| {
                if self.linear_io {
                    (h, h)
                } else {
                    let a = if l == 0 { self.d_in } else { h };
                    let b = if l + 1 == self.layers { self.classes } else { h };
                    (a, b)
                }
            })
            .collect();
        let opts = self.conv_options();
        let convs = dims
            .iter()
            .enumerate()
            .map(|(l, &(d_in, d_out))| {
                let logits = !self.linear_io && l + 1 == self.layers;
                Conv::new(self.conv, &opts, LayerShape { d_in, d_out, logits }, device)
            })
            .collect();
        let n_norms = if self.linear_io { self.layers } else { self.layers.saturating_sub(1) };
        let norms = match self.norm {
            NormKind::None => Vec::new(),
            NormKind::LayerNorm => (0..n_norms).map(|_| LayerNormConfig::new(h).init(device)).collect(),
        };
        Ok(GnnModel {
            lin_in: self.linear_io.then(|| LinearConfig::new(self.d_in, h).init(device)),
            convs,
            norms,
            lin_out: self.linear_io.then(|| LinearConfig::new(h, self.classes).init(device)),
            dropout: DropoutConfig::new(self.dropout).init(),
            input_dropout: DropoutConfig::new(self.input_dropout).init(),
            nonlin: self.nonlin,
            precision: self.precision,
            split_halo: self.conv.supports_split_halo(&opts),
        })
    }
}

/// `sum_{j -> i} w_ij x_j` over the edges of `g` with its edge weights (rounded to `x`'s type),
/// or the plain sum on a graph without weights.
fn weighted_sum<B: SparseGnnBackend>(g: &Graph<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
    use burn_sparse_gnn::{ops, Reduce};
    match g.weights() {
        Some(w) => {
            let w = if w.dtype() == x.dtype() { w.clone() } else { w.clone().cast(x.dtype()) };
            ops::spmm_weighted(g, w, x, Reduce::Sum)
        }
        None => ops::spmm(g, x, Reduce::Sum),
    }
}

impl<B: SparseGnnBackend> GnnModel<B> {
    /// Logits `[n, classes]` of every node of `g` from its features `x` (`[n, d_in]`).
    pub fn forward(&self, g: &Graph<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let device = x.device();
        let x = self.drop_input(x, self.input_dropout_seed(&device).as_ref(), None);
        let mut h = self.input(x);
        for l in 0..self.convs.len() {
            let seed = self.dropout_seed(l, &device);
            let a = self.activate(l, h, g.kernel_config(), seed.as_ref(), None);
            h = self.convolve(l, g, &a);
        }
        self.output(h)
    }

    /// Logits `[seeds, classes]` of a sampled mini-batch (DGL's message-flow graphs):
    /// `blocks[l]` is convolution `l`'s block, rectangular, its rows the destinations and its
    /// columns the sources with the destinations first; block `l`'s rows are block `l + 1`'s
    /// columns in order, and the last block's rows are the seeds. `x` holds the features of the
    /// first block's columns. The same kernels as on a whole graph; a block built with every
    /// neighbour and the whole graph's degrees gives the rows of [`GnnModel::forward`].
    ///
    /// Errors when the blocks do not chain or their count is not the number of convolutions.
    pub fn forward_blocks(&self, blocks: &[Graph<B>], x: Tensor<B, 2>) -> Result<Tensor<B, 2>, ModelError> {
        if blocks.len() != self.convs.len() {
            return Err(ModelError(format!(
                "{} blocks for a model of {} convolutions",
                blocks.len(),
                self.convs.len()
            )));
        }
        if x.dims()[0] != blocks[0].n_cols() {
            return Err(ModelError(format!(
                "{} feature rows for a first block of {} sources",
                x.dims()[0],
                blocks[0].n_cols()
            )));
        }
        if let Some(l) = (1..blocks.len()).find(|&l| blocks[l].n_cols() != blocks[l - 1].n_rows()) {
            return Err(ModelError(format!(
                "block {l} has {} sources where block {} has {} destinations",
                blocks[l].n_cols(),
                l - 1,
                blocks[l - 1].n_rows()
            )));
        }
        let device = x.device();
        let x = self.drop_input(x, self.input_dropout_seed(&device).as_ref(), None);
        let mut h = self.input(x);
        for (l, g) in blocks.iter().enumerate() {
            let seed = self.dropout_seed(l, &device);
            let a = self.activate(l, h, g.kernel_config(), seed.as_ref(), None);
            h = self.convolve(l, g, &a);
        }
        Ok(self.output(h))
    }

    /// The seed of the input features' dropout mask for one forward pass: drawn on `device`
    /// when autodiff is on there and the input dropout is positive, else `None`.
    pub fn input_dropout_seed(&self, device: &B::Device) -> Option<DropoutSeed<B>> {
        (B::ad_enabled(device) && self.input_dropout.prob > 0.0).then(|| DropoutSeed::draw(device))
    }

    /// The seed of convolution `l`'s dropout mask for one forward pass (see
    /// [`GnnModel::input_dropout_seed`]; `None` for a convolution that reads the input).
    pub fn dropout_seed(&self, l: usize, device: &B::Device) -> Option<DropoutSeed<B>> {
        (B::ad_enabled(device) && self.dropout.prob > 0.0 && !self.reads_input(l)).then(|| DropoutSeed::draw(device))
    }

    /// The input dropout of `x` with the mask of `seed` (the identity without a seed); `rows`:
    /// the global node ids of `x`'s rows (see [`burn_sparse_gnn::dropout`]).
    pub fn drop_input(
        &self,
        x: Tensor<B, 2>,
        seed: Option<&DropoutSeed<B>>,
        rows: Option<&Tensor<B, 1, Int>>,
    ) -> Tensor<B, 2> {
        relu_dropout(x, false, self.input_dropout.prob, seed, rows)
            .unwrap_or_else(|e| panic!("checked at construction: {e}"))
    }

    /// The input map (`lin_in`, or the features themselves in the classic stack), after the
    /// input dropout.
    pub fn input(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        match &self.lin_in {
            Some(lin) => linear(lin, x, self.precision.product_math()),
            None => x,
        }
    }

    /// Whether convolution `l` reads the input map directly (no nonlinearity, no dropout): the
    /// first convolution of the classic stack.
    pub fn reads_input(&self, l: usize) -> bool {
        self.lin_in.is_none() && l == 0
    }

    /// The state convolution `l` reads: the nonlinearity of `h` (MaxK-GNN: every convolution
    /// follows one) and the dropout with the mask of `seed` ([`GnnModel::dropout_seed`]; for
    /// ReLU both in one pass, for MaxK and max-pooling on the kept values), or `h` itself for the
    /// classic stack's first convolution. `rows`: the global node ids of `h`'s rows.
    pub fn activate(
        &self,
        l: usize,
        h: Tensor<B, 2>,
        kernels: &burn_sparse_gnn::KernelConfig,
        seed: Option<&DropoutSeed<B>>,
        rows: Option<&Tensor<B, 1, Int>>,
    ) -> Hidden<B> {
        if self.reads_input(l) {
            return Hidden::Dense(h);
        }
        let p = self.dropout.prob;
        let checked = |r: Result<Tensor<B, 2>, burn_sparse_gnn::OpError>| {
            r.unwrap_or_else(|e| panic!("checked at construction: {e}"))
        };
        match self.nonlin {
            Nonlinearity::Relu => Hidden::Dense(checked(relu_dropout(h, true, p, seed, rows))),
            other => other.forward(h, kernels).map_values(|v| checked(relu_dropout(v, false, p, seed, rows))),
        }
    }

    /// Whether every convolution can aggregate a part's own columns and its halo columns
    /// separately (dense ReLU states into GraphSAGE mean / sum layers): what the split halo
    /// layout of a partitioned graph needs ([`crate::partitioned::devices::HaloLayout::Split`]).
    pub fn splits_halo(&self) -> bool {
        matches!(self.nonlin, Nonlinearity::Relu) && self.split_halo
    }

    /// The type a split-layout exchange moves the rows in: the aggregations' half type in
    /// mixed precision (they read the rows there anyway), the states' type otherwise.
    pub(crate) fn split_send(&self) -> Option<burn::tensor::FloatDType> {
        self.precision.half()
    }

    /// First half of convolution `l` on a part in the split layout: the sum over the part's own
    /// columns (`own_g`, rows and columns the part's own nodes; weighted by its edge weights
    /// where it has them) of `own`, in the aggregations'
    /// storage type, and `own` in that type where it differs (the half copy the root product
    /// multiplies).
    pub(crate) fn convolve_own(&self, own_g: &Graph<B>, own: &Tensor<B, 2>) -> (Tensor<B, 2>, Option<Tensor<B, 2>>) {
        let half = self.precision.half().map(|h| own.clone().cast(h));
        let x = half.clone().unwrap_or_else(|| own.clone());
        (weighted_sum(own_g, x), half)
    }

    /// Second half: adds the sum over the halo columns (`halo_g`, the part's rows, its halo
    /// nodes as columns; weighted as the first half) of `halo`, takes the mean by the rows' whole-graph degrees, and applies
    /// layer `l`'s maps (both products into one output) and its normalisation. In mixed
    /// precision the sums and the mean stay in the half type, and the root product multiplies
    /// the half copy of `own` (its gradient in `own`'s type). Equals [`GnnModel::convolve`] on the
    /// joined columns up to the order of the sums (and, in mixed precision, the rounding of the
    /// two partial sums). Only for [`GnnModel::splits_halo`] models.
    pub(crate) fn convolve_rest(
        &self,
        l: usize,
        own_g: &Graph<B>,
        halo_g: Option<&Graph<B>>,
        own: Tensor<B, 2>,
        (own_sum, own_half): (Tensor<B, 2>, Option<Tensor<B, 2>>),
        halo: Option<Tensor<B, 2>>,
    ) -> Tensor<B, 2> {
        use burn_sparse_gnn::ops::{linear, linear_pair, try_split_pair, LinearTerm};
        let Conv::Sage(c) = &self.convs[l] else { unreachable!("splits_halo: GraphSAGE layers only") };
        let unweighted = own_g.weights().is_none() && halo_g.is_none_or(|g| g.weights().is_none());
        if let (Some(r), true) = (&c.lin_root, unweighted) {
            // one op: the halo sum, the mean and both maps, with a backward pass of its own
            let inv = (c.aggr == SageAggr::Mean).then(|| own_g.norms().in_inv.clone());
            let mut h = try_split_pair(
                own_sum,
                halo_g.zip(halo),
                inv,
                own,
                own_half,
                c.lin_neigh.weight.val(),
                r.weight.val(),
                c.lin_neigh.bias.as_ref().map(|b| b.val()),
                self.precision.linear_precision(),
            )
            .unwrap_or_else(|e| panic!("the split layout's shapes: {e}"));
            if let Some(n) = self.norms.get(l) {
                h = n.forward(h);
            }
            return h;
        }
        let sum = match (halo_g, halo) {
            (Some(g), Some(h)) => own_sum + weighted_sum(g, h),
            _ => own_sum,
        };
        let agg = match c.aggr {
            SageAggr::Mean => {
                let inv = own_g.norms().in_inv.clone().cast(sum.dtype());
                sum * inv.unsqueeze_dim::<2>(1)
            }
            _ => sum,
        };
        let lp = self.precision.linear_precision();
        let bias = c.lin_neigh.bias.as_ref().map(|b| b.val());
        let mut h = match &c.lin_root {
            Some(r) => linear_pair(
                LinearTerm::new(agg, c.lin_neigh.weight.val()),
                match own_half {
                    Some(h) => LinearTerm::new(own, r.weight.val()).with_half(h),
                    None => LinearTerm::new(own, r.weight.val()),
                },
                bias,
                lp,
            ),
            None => linear(agg, c.lin_neigh.weight.val(), bias, lp),
        };
        if let Some(n) = self.norms.get(l) {
            h = n.forward(h);
        }
        h
    }

    /// Convolution `l` (and its normalisation) on `a`. On a part of a partitioned graph `a`
    /// holds the part's rows then its halo rows, and the result has the part's rows.
    pub fn convolve(&self, l: usize, g: &Graph<B>, a: &Hidden<B>) -> Tensor<B, 2> {
        let mut h = self.convs[l].forward(g, a, self.precision);
        if let Some(n) = self.norms.get(l) {
            h = n.forward(h);
        }
        h
    }

    /// The output map (`lin_out`, or the last convolution's output in the classic stack).
    pub fn output(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        match &self.lin_out {
            Some(lin) => self.precision.linear(lin, h),
            None => h,
        }
    }

    /// Draws every parameter now. Burn initialises parameters lazily, on first use, so the
    /// first forward pass of a fresh model draws them between its own random draws (dropout);
    /// and a clone of an uninitialised parameter initialises its own copy. Call this before
    /// comparing runs or cloning the model across devices.
    pub fn initialise_parameters(&self) {
        struct Draw;
        impl<B: Backend> burn::module::ModuleVisitor<B> for Draw {
            fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<B, D>>) {
                let _ = param.val();
            }
        }
        self.visit(&mut Draw);
    }

    /// Number of convolutions.
    pub fn num_layers(&self) -> usize {
        self.convs.len()
    }

    /// Dropout probability of the hidden states and of the input features.
    pub fn dropout_probs(&self) -> (f64, f64) {
        (self.dropout.prob, self.input_dropout.prob)
    }

    /// Storage precision of the sparse aggregations.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The nonlinearity before each convolution.
    pub fn nonlinearity(&self) -> Nonlinearity {
        self.nonlin
    }
}
