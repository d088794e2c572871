//! Linear layers over all nodes (`x @ w + b`, sums of two products) and the mean / sum
//! aggregation fused with a SAGE layer's two linear maps, as a backend trait and tensor-level
//! ops.

mod autodiff;
mod cube;
mod host;
pub(crate) mod pair;
pub(crate) mod split;
pub(crate) mod terms;

pub use split::SplitInputs;

use crate::error::OpError;
use crate::graph::Graph;
use crate::ops::aggregation::AggregationOps;
use crate::ops::args::expect_rows;
use crate::ops::args::float;
use crate::ops::args::wrap;
use crate::ops::dense::DenseOps;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
use crate::ops::rows::RowOps;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::Tensor;
use burn::tensor::TensorPrimitive;

/// Linear layers over all nodes and the fused mean / sum aggregation with two linear maps.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait LayerOps: AggregationOps + DenseOps + RowOps {
    /// Differentiable `x @ w + b` over all nodes with the arithmetic of `precision` (see
    /// [`crate::ops::dense::precision::LinearPrecision`]).
    fn ad_linear(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        precision: crate::ops::dense::precision::LinearPrecision,
    ) -> FloatTensor<Self> {
        crate::ops::layer::terms::linear_forward::<Self>(vec![crate::ops::layer::terms::Term::new(x, w)], b, precision)
            .0
    }

    /// Differentiable `y + b` with the `[d]` bias `b` added to every row of the `[n, d]` `y`
    /// (see [`crate::ops::add_bias`]).
    fn ad_add_bias(y: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        crate::ops::dense::add_row_bias::<Self>(y, b)
    }

    /// Differentiable `x1 @ w1 + x2 @ w2 + b` over all nodes (see [`crate::ops::linear_pair`]):
    /// one output buffer for both products where the backend accumulates in place.
    fn ad_linear_pair(
        first: crate::ops::layer::terms::Term<Self>,
        second: crate::ops::layer::terms::Term<Self>,
        b: Option<FloatTensor<Self>>,
        precision: crate::ops::dense::precision::LinearPrecision,
    ) -> FloatTensor<Self> {
        crate::ops::layer::terms::linear_forward::<Self>(vec![first, second], b, precision).0
    }

    /// Differentiable `aggr(x) @ w_neigh + x[..n] @ w_root + b` with a mean or sum
    /// aggregation over `g` (see [`crate::ops::aggregate_pair`]).
    #[allow(clippy::too_many_arguments)]
    fn ad_aggregate_pair(
        g: &GraphPrimitive<Self>,
        x: FloatTensor<Self>,
        w_neigh: FloatTensor<Self>,
        w_root: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        reduce: Reduce,
        precision: crate::ops::dense::precision::LinearPrecision,
    ) -> FloatTensor<Self> {
        crate::ops::layer::pair::pair_forward::<Self>(g, x, w_neigh, w_root, b, reduce, precision).0
    }

    /// Differentiable second half of a GraphSAGE mean / sum layer on one part in the split halo
    /// layout (see [`crate::ops::split_pair`]).
    fn ad_split_pair(inputs: SplitInputs<Self>) -> FloatTensor<Self> {
        crate::ops::layer::split::split_forward::<Self>(inputs).0
    }
}

/// `x @ w + b` over all nodes (`x`: `[n, d_in]`, `w`: `[d_in, d_out]`, `b`: `[d_out]`),
/// differentiable in all three, with the arithmetic of `precision` (exact f32, TF32, or a
/// half-precision forward; see [`crate::dense`]). On CUDA the products run through cuBLAS.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::dense::LinearPrecision;
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// let x = Tensor::<B, 2>::from_floats([[1.0, 2.0], [3.0, 4.0]], &dev);
/// let w = Tensor::<B, 2>::from_floats([[1.0], [1.0]], &dev).require_grad();
/// let b = Tensor::<B, 1>::from_floats([0.5], &dev).require_grad();
/// let y = burn_sparse_gnn::ops::linear(x, w.clone(), Some(b.clone()), LinearPrecision::F32);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![3.5, 7.5]);
/// let grads = y.sum().backward();
/// assert_eq!(w.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
/// assert_eq!(b.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![2.0]);
/// ```
pub fn linear<B: LayerOps>(
    x: Tensor<B, 2>,
    w: Tensor<B, 2>,
    b: Option<Tensor<B, 1>>,
    precision: crate::ops::dense::precision::LinearPrecision,
) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(B::ad_linear(
        x.into_primitive().tensor(),
        w.into_primitive().tensor(),
        b.map(|b| b.into_primitive().tensor()),
        precision,
    )))
}

/// `y + b` with the `[d]` bias `b` added to every row of the `[n, d]` node matrix `y`,
/// differentiable in both: `y`'s gradient is the output's, passed on as it is, and `b`'s is the
/// column sums of it, computed as the product `ones^T dy` (cuBLAS on CUDA, a chunked split-K
/// product elsewhere) instead of Burn's reduction of a broadcast along the strided axis (under
/// 10 GB/s on the H200). The backward pass keeps nothing from the forward pass.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// let y = Tensor::<B, 2>::from_floats([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], &dev).require_grad();
/// let b = Tensor::<B, 1>::from_floats([0.5, -1.0], &dev).require_grad();
/// let out = burn_sparse_gnn::ops::add_bias(y.clone(), b.clone());
/// assert_eq!(out.to_data().to_vec::<f32>().unwrap(), vec![1.5, 1.0, 3.5, 3.0, 5.5, 5.0]);
/// let grads = (out * Tensor::from_floats([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], &dev)).sum().backward();
/// assert_eq!(b.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![9.0, 12.0]);
/// assert_eq!(y.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// ```
pub fn add_bias<B: LayerOps>(y: Tensor<B, 2>, b: Tensor<B, 1>) -> Tensor<B, 2> {
    wrap(B::ad_add_bias(float(y), float(b)))
}

/// One product of [`linear_pair`]: `x @ w`, with an optional half copy of `x` (not
/// differentiated) that a half-precision forward multiplies instead of making a row-scaled
/// copy of its own (see [`crate::ops::layer::terms::Term`]).
#[derive(Clone, Debug)]
pub struct LinearTerm<B: Backend> {
    /// `[n, d_in]` input.
    pub x: Tensor<B, 2>,
    /// `[d_in, d_out]` weight.
    pub w: Tensor<B, 2>,
    /// A plain half copy of `x` for the half-precision forward.
    pub x_half: Option<Tensor<B, 2>>,
}

impl<B: Backend> LinearTerm<B> {
    /// `x @ w`.
    pub fn new(x: Tensor<B, 2>, w: Tensor<B, 2>) -> Self {
        Self { x, w, x_half: None }
    }

    /// Multiplies `x_half` in a half-precision forward.
    pub fn with_half(mut self, x_half: Tensor<B, 2>) -> Self {
        self.x_half = Some(x_half);
        self
    }

    fn prim(self) -> crate::ops::layer::terms::Term<B> {
        crate::ops::layer::terms::Term { x: float(self.x), w: float(self.w), x_half: self.x_half.map(float) }
    }
}

/// `x1 @ w1 + x2 @ w2 + b` over all nodes (a SAGE layer's neighbour and root maps), with the
/// arithmetic of `precision`, differentiable in every input. The second product adds to the
/// first one's output in place (cuBLAS with `beta = 1` on CUDA), so the sum costs no pass of its
/// own. In half precision an input that already has the half type is multiplied as it is (its
/// gradient has that type too).
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::dense::LinearPrecision;
/// use burn_sparse_gnn::ops::{linear_pair, LinearTerm};
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// let x = Tensor::<B, 2>::from_floats([[1.0, 2.0], [3.0, 4.0]], &dev);
/// let w1 = Tensor::<B, 2>::from_floats([[1.0], [1.0]], &dev).require_grad();
/// let w2 = Tensor::<B, 2>::from_floats([[2.0], [0.0]], &dev).require_grad();
/// let y = linear_pair(LinearTerm::new(x.clone(), w1), LinearTerm::new(x, w2.clone()), None, LinearPrecision::F32);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![5.0, 13.0]);
/// let grads = y.sum().backward();
/// assert_eq!(w2.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
/// ```
pub fn linear_pair<B: LayerOps>(
    first: LinearTerm<B>,
    second: LinearTerm<B>,
    b: Option<Tensor<B, 1>>,
    precision: crate::ops::dense::precision::LinearPrecision,
) -> Tensor<B, 2> {
    wrap(B::ad_linear_pair(first.prim(), second.prim(), b.map(float), precision))
}

/// `aggr(x) @ w_neigh + x[..n] @ w_root + b`: a mean or sum aggregation over `g` followed by a
/// GraphSAGE layer's neighbour and root maps, with the arithmetic of `precision`, differentiable
/// in every input. `x` has one row per column of `g` (on a part of a partitioned graph: its own
/// rows, then its halo); the root map takes its first `n = g.n_rows()` rows.
///
/// Where `x` needs a gradient and `d_out <= d_in`, the backward pass takes the neighbour map's
/// gradients from `A^T dy` and keeps no copy of the `n x d_in` aggregate (module docs of
/// `autodiff`); otherwise it runs as [`spmm`] then [`linear_pair`]. In half precision `x` is
/// rounded to the half type once for the aggregation and the root product.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::dense::LinearPrecision;
/// use burn_sparse_gnn::{ops, BuildOptions, Csr, Graph, GraphOptions, Reduce};
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// // 0 -> 1, 1 -> 2 and back: node 1 has two neighbours
/// let adj = Csr::from_edges(3, &[0, 1], &[1, 2], None, BuildOptions::undirected()).unwrap();
/// let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
/// let x = Tensor::<B, 2>::from_floats([[1.0], [2.0], [4.0]], &dev).require_grad();
/// let wn = Tensor::<B, 2>::from_floats([[1.0]], &dev).require_grad();
/// let wr = Tensor::<B, 2>::from_floats([[10.0]], &dev).require_grad();
/// let y = ops::aggregate_pair(&g, x.clone(), wn, wr, None, Reduce::Mean, LinearPrecision::F32);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![12.0, 22.5, 42.0]);
/// let grads = y.sum().backward();
/// // dy = 1: x_j gets 10 from its root map and 1 / deg(i) from each neighbour i
/// assert_eq!(x.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![10.5, 12.0, 10.5]);
/// ```
pub fn try_aggregate_pair<B: LayerOps>(
    g: &Graph<B>,
    x: Tensor<B, 2>,
    w_neigh: Tensor<B, 2>,
    w_root: Tensor<B, 2>,
    b: Option<Tensor<B, 1>>,
    reduce: Reduce,
    precision: crate::ops::dense::precision::LinearPrecision,
) -> Result<Tensor<B, 2>, OpError> {
    const OP: &str = "aggregate_pair";
    let dims = x.dims();
    expect_rows(OP, "x", &dims, g.n_cols())?;
    let d_in = dims[1];
    let wn = w_neigh.dims();
    if wn[0] != d_in {
        return Err(OpError::Shape { op: OP, what: "w_neigh", got: wn.to_vec(), expected: format!("[{d_in}, _]") });
    }
    let wr = w_root.dims();
    if wr != wn {
        return Err(OpError::Shape { op: OP, what: "w_root", got: wr.to_vec(), expected: format!("{wn:?}") });
    }
    if let Some(b) = &b {
        if b.dims() != [wn[1]] {
            return Err(OpError::Shape { op: OP, what: "b", got: b.dims().to_vec(), expected: format!("[{}]", wn[1]) });
        }
    }
    if !matches!(reduce, Reduce::Mean | Reduce::Sum) {
        return Err(OpError::Config { op: OP, msg: format!("the aggregation must be mean or sum, not {reduce:?}") });
    }
    Ok(wrap(B::ad_aggregate_pair(g.prim(), float(x), float(w_neigh), float(w_root), b.map(float), reduce, precision)))
}

/// [`try_aggregate_pair`], panicking on a shape mismatch or a max aggregation.
pub fn aggregate_pair<B: LayerOps>(
    g: &Graph<B>,
    x: Tensor<B, 2>,
    w_neigh: Tensor<B, 2>,
    w_root: Tensor<B, 2>,
    b: Option<Tensor<B, 1>>,
    reduce: Reduce,
    precision: crate::ops::dense::precision::LinearPrecision,
) -> Tensor<B, 2> {
    try_aggregate_pair(g, x, w_neigh, w_root, b, reduce, precision).unwrap_or_else(|e| panic!("{e}"))
}

/// The second half of a GraphSAGE mean / sum layer on one part of a partitioned graph whose
/// halo columns are held apart (`gnn_models`' split halo layout): with `own_sum` the sum over
/// the part's own columns (computed while the halo rows moved),
/// `y = ((own_sum + A_halo halo) / deg) @ w_neigh + own @ w_root + b`, `deg` the whole graph's
/// row degrees (`inv_degree` = `1 / deg`; `None`: a sum layer). Differentiable in `own_sum`,
/// `halo`, `own`, both weights and `b`; the backward pass computes the halo rows' gradient
/// first and gives `own_sum` the gradient of the sum, `(dy / deg) w_neigh^T`. In half
/// precision (`own_sum` and `halo` in the half type) the products take half inputs
/// (`own_half`, a half copy of `own`, where the caller has one). No edge weights.
///
/// Errors when the shapes disagree.
#[allow(clippy::too_many_arguments)]
pub fn try_split_pair<B: LayerOps>(
    own_sum: Tensor<B, 2>,
    halo: Option<(&Graph<B>, Tensor<B, 2>)>,
    inv_degree: Option<Tensor<B, 1>>,
    own: Tensor<B, 2>,
    own_half: Option<Tensor<B, 2>>,
    w_neigh: Tensor<B, 2>,
    w_root: Tensor<B, 2>,
    b: Option<Tensor<B, 1>>,
    precision: crate::ops::dense::precision::LinearPrecision,
) -> Result<Tensor<B, 2>, OpError> {
    const OP: &str = "split_pair";
    let [n, d_in] = own_sum.dims();
    expect_rows(OP, "own", &own.dims(), n)?;
    if own.dims()[1] != d_in {
        return Err(OpError::Shape {
            op: OP,
            what: "own",
            got: own.dims().to_vec(),
            expected: format!("[{n}, {d_in}]"),
        });
    }
    if let Some((g, rows)) = &halo {
        if g.n_rows() != n {
            return Err(OpError::Shape {
                op: OP,
                what: "halo graph",
                got: vec![g.n_rows()],
                expected: format!("{n} rows"),
            });
        }
        let want = [g.n_cols(), d_in];
        if rows.dims() != want {
            return Err(OpError::Shape {
                op: OP,
                what: "halo",
                got: rows.dims().to_vec(),
                expected: format!("{want:?}"),
            });
        }
    }
    if let Some(inv) = &inv_degree {
        if inv.dims() != [n] {
            return Err(OpError::Shape {
                op: OP,
                what: "inv_degree",
                got: inv.dims().to_vec(),
                expected: format!("[{n}]"),
            });
        }
    }
    let wn = w_neigh.dims();
    if wn[0] != d_in || w_root.dims() != wn {
        return Err(OpError::Shape {
            op: OP,
            what: "weights",
            got: [wn.to_vec(), w_root.dims().to_vec()].concat(),
            expected: format!("[{d_in}, d_out] twice"),
        });
    }
    if let Some(b) = &b {
        if b.dims() != [wn[1]] {
            return Err(OpError::Shape { op: OP, what: "b", got: b.dims().to_vec(), expected: format!("[{}]", wn[1]) });
        }
    }
    Ok(wrap(B::ad_split_pair(SplitInputs {
        own_sum: float(own_sum),
        halo: halo.map(|(g, rows)| (g.prim().clone(), float(rows))),
        inv_degree: inv_degree.map(float),
        own: float(own),
        own_half: own_half.map(float),
        w_neigh: float(w_neigh),
        w_root: float(w_root),
        b: b.map(float),
        precision,
    })))
}
