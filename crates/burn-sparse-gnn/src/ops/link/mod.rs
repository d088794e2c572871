//! Negative pairs of link prediction on the device: the two node permutations that relabel the
//! positive pattern, and the mask of relabelled pairs that hit a known edge (see
//! [`sparse_gnn_kernels::link`]).
//!
//! ```
//! use burn::backend::NdArray;
//! use burn_sparse_gnn::link::negative_pairs;
//! use burn_sparse_gnn::{Csr, Graph, GraphOptions};
//! type B = NdArray;
//! let dev = Default::default();
//! // a path 0 - 1 - 2 - 3, both directions
//! let adj = Csr::from_edges(4, &[0, 1, 2], &[1, 2, 3], None, burn_sparse_gnn::BuildOptions::undirected()).unwrap();
//! let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
//! let neg = negative_pairs(&g, &g, 7).unwrap();
//! let mask = neg.mask.to_data().convert::<i64>().to_vec::<i64>().unwrap();
//! assert_eq!(mask.len(), adj.nnz());
//! assert!(mask.iter().all(|&m| m == 0 || m == 1));
//! ```

mod autodiff;
mod cube;
mod host;

use crate::error::OpError;
use crate::graph::Graph;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::Int;
use burn::tensor::Tensor;
use sparse_gnn_kernels::link as kernel;

/// The device side of link prediction's negative sampling.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait LinkOps: Backend {
    /// The pseudo-random permutation of `0..n` keyed by `keys` (see
    /// [`sparse_gnn_kernels::link::permute`]), or its inverse where `inverse`, `[n]` node ids.
    /// On the host by default.
    fn permutation(n: usize, keys: [u32; kernel::ROUNDS], inverse: bool, device: &Self::Device) -> IntTensor<Self> {
        host::permutation::<Self>(n, keys, inverse, device)
    }

    /// Rows `perm[i]` of `x` (`[n, d]`), where `perm` is a permutation of `0..n` and `inverse`
    /// its inverse. Differentiable in `x` under `Autodiff`, whose backward gathers the
    /// gradient's rows by `inverse` (a `select` of a permutation would scatter-add instead).
    fn permute_rows(x: FloatTensor<Self>, perm: IntTensor<Self>, inverse: IntTensor<Self>) -> FloatTensor<Self> {
        let _ = inverse;
        Self::float_select(x, 0, perm)
    }

    /// Rows `ids[e]` of `x` (`[n, d]`) for every pair `e` of a pattern, `ids` the pairs'
    /// destinations or sources in CSR order. Differentiable in `x` under `Autodiff`, whose
    /// backward is [`Self::pair_rows_sum`] over `row_ptr` (`[n + 1]`) and `perm` (a select's
    /// backward would scatter-add instead).
    fn pair_rows(
        x: FloatTensor<Self>,
        ids: IntTensor<Self>,
        row_ptr: IntTensor<Self>,
        perm: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        let _ = (row_ptr, perm);
        Self::float_select(x, 0, ids)
    }

    /// `[n, d]`, `n + 1` the length of `row_ptr`: row `r` the sum, in order, of the rows
    /// `p(e)` of `dy` (`[pairs, d]`) for `e` in `row_ptr[r]..row_ptr[r + 1]`, where `p(e) =
    /// perm[e]` if `perm` is given and `e` otherwise (see [`sparse_gnn_kernels::pair_rows`]).
    /// Not differentiable; in the dtype of `dy`. On the host by default.
    fn pair_rows_sum(
        row_ptr: IntTensor<Self>,
        perm: Option<IntTensor<Self>>,
        dy: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        host::pair_rows_sum::<Self>(row_ptr, perm, dy, n)
    }

    /// For each pair `(r, c)` of `pattern` (CSR order): 1 when `(pa[r], pb[c])` is neither an
    /// edge of `known` (whose rows hold sorted columns) nor a node with itself, else 0. On the
    /// host by default.
    fn pair_mask(
        pattern: &CsrPrimitive<Self>,
        known: &CsrPrimitive<Self>,
        pa: IntTensor<Self>,
        pb: IntTensor<Self>,
    ) -> IntTensor<Self> {
        host::pair_mask::<Self>(pattern, known, pa, pb)
    }
}

/// One epoch's negatives: pair `e` of the pattern, `(r, c)`, stands for `(rows[r], cols[c])`.
#[derive(Clone, Debug)]
pub struct NegativePairs<B: Backend> {
    /// `[n]`: the source relabelling (rows of the pattern).
    pub rows: Tensor<B, 1, Int>,
    /// `[n]`: the destination relabelling (columns of the pattern).
    pub cols: Tensor<B, 1, Int>,
    /// `[n]`: the inverse of `rows`.
    pub rows_inverse: Tensor<B, 1, Int>,
    /// `[n]`: the inverse of `cols`.
    pub cols_inverse: Tensor<B, 1, Int>,
    /// `[nnz]`: 1 for a pair to score as a negative, 0 for one that is a known edge or a self
    /// pair.
    pub mask: Tensor<B, 1, Int>,
}

/// Negatives for the pairs of `pattern`: two permutations keyed by `seed` and the pairs that
/// must not count (known edges of `known`, self pairs). Each negative pair is uniform over all
/// ordered pairs of nodes. The rows of `known` must hold sorted columns (as [`crate::Csr`]
/// builds them from edges).
///
/// Errors when the graphs are not square over the same nodes.
pub fn negative_pairs<B: LinkOps>(
    pattern: &Graph<B>,
    known: &Graph<B>,
    seed: u64,
) -> Result<NegativePairs<B>, OpError> {
    let n = pattern.n_rows();
    for (what, g) in [("pattern", pattern), ("known", known)] {
        if g.n_rows() != n || g.n_cols() != n {
            return Err(OpError::Shape {
                op: "negative_pairs",
                what,
                got: vec![g.n_rows(), g.n_cols()],
                expected: format!("[{n}, {n}]"),
            });
        }
    }
    let device = pattern.device();
    let (row_keys, col_keys) = (kernel::round_keys(seed), kernel::round_keys(seed ^ 0x5EED_0F_C01_u64.rotate_left(17)));
    let rows = B::permutation(n, row_keys, false, &device);
    let cols = B::permutation(n, col_keys, false, &device);
    let mask = B::pair_mask(&pattern.prim().csr, &known.prim().csr, rows.clone(), cols.clone());
    Ok(NegativePairs {
        rows: Tensor::from_primitive(rows),
        cols: Tensor::from_primitive(cols),
        rows_inverse: Tensor::from_primitive(B::permutation(n, row_keys, true, &device)),
        cols_inverse: Tensor::from_primitive(B::permutation(n, col_keys, true, &device)),
        mask: Tensor::from_primitive(mask),
    })
}

/// Rows `perm[i]` of `x` for a permutation `perm` of its rows with inverse `inverse` (as
/// [`NegativePairs`] holds them): the gather of [`LinkOps::permute_rows`], whose backward is a
/// gather too.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::{Int, Tensor};
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// let x = Tensor::<B, 2>::from_floats([[1.0], [2.0], [3.0]], &dev).require_grad();
/// let perm = Tensor::<B, 1, Int>::from_ints([2, 0, 1], &dev);
/// let inverse = Tensor::<B, 1, Int>::from_ints([1, 2, 0], &dev);
/// let y = burn_sparse_gnn::link::permute_rows(x.clone(), perm, inverse);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![3.0, 1.0, 2.0]);
/// let w = Tensor::<B, 2>::from_floats([[10.0], [20.0], [30.0]], &dev);
/// let grads = (y * w).sum().backward();
/// // x's row 2 went to row 0 (weight 10), row 0 to row 1 (20), row 1 to row 2 (30)
/// assert_eq!(x.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![20.0, 30.0, 10.0]);
/// ```
pub fn permute_rows<B: LinkOps>(x: Tensor<B, 2>, perm: Tensor<B, 1, Int>, inverse: Tensor<B, 1, Int>) -> Tensor<B, 2> {
    Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(B::permute_rows(
        x.into_primitive().tensor(),
        perm.into_primitive(),
        inverse.into_primitive(),
    )))
}

/// Which end of its pairs [`pair_rows`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairEnd {
    /// The pattern's row of each pair.
    Destination,
    /// The pattern's column of each pair.
    Source,
}

/// The rows of `x` (`[n, d]`, one per node of the square `pattern`) that the pairs of `pattern`
/// read at `end`, `[pairs, d]` in CSR order: `ids` are the pairs' destinations (their rows) or
/// sources (their columns, `pattern`'s column indices), in CSR order. Differentiable in `x`;
/// the gradient of a node sums its pairs' gradient rows along the pattern's rows or, for
/// sources, its transpose, in CSR order: no scatter-add, deterministic, one pass (a `select`'s
/// backward walks every pair in turn for each column).
///
/// Errors when `x` does not have a row per node or `ids` a value per pair.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::{Int, Tensor};
/// use burn_sparse_gnn::link::{pair_rows, PairEnd};
/// use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// // pairs (row 0, col 1), (row 0, col 2), (row 2, col 1)
/// let p = Csr::from_edges(3, &[1, 2, 1], &[0, 0, 2], None, BuildOptions::default()).unwrap();
/// let g = Graph::<B>::new(&p, &dev, GraphOptions::default());
/// let x = Tensor::<B, 2>::from_floats([[1.0], [2.0], [3.0]], &dev).require_grad();
/// let src = pair_rows(&g, x.clone(), PairEnd::Source, Tensor::<B, 1, Int>::from_ints([1, 2, 1], &dev)).unwrap();
/// assert_eq!(src.to_data().to_vec::<f32>().unwrap(), vec![2.0, 3.0, 2.0]);
/// let w = Tensor::<B, 2>::from_floats([[10.0], [20.0], [30.0]], &dev);
/// let grads = (src * w).sum().backward();
/// // node 1 is the source of pairs 0 and 2, node 2 of pair 1
/// assert_eq!(x.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![0.0, 40.0, 20.0]);
/// ```
pub fn pair_rows<B: LinkOps>(
    pattern: &Graph<B>,
    x: Tensor<B, 2>,
    end: PairEnd,
    ids: Tensor<B, 1, Int>,
) -> Result<Tensor<B, 2>, OpError> {
    let (n, pairs) = (pattern.n_rows(), pattern.num_edges());
    if pattern.n_cols() != n || x.dims()[0] != n {
        return Err(OpError::Shape {
            op: "pair_rows",
            what: "node rows",
            got: vec![x.dims()[0], pattern.n_rows(), pattern.n_cols()],
            expected: format!("a square pattern with a row of x per node ({n})"),
        });
    }
    if ids.dims()[0] != pairs {
        return Err(OpError::Shape {
            op: "pair_rows",
            what: "pair ids",
            got: ids.dims().to_vec(),
            expected: format!("[{pairs}]"),
        });
    }
    let g = pattern.prim();
    let (row_ptr, perm) = match end {
        PairEnd::Destination => (g.csr.row_ptr.clone(), None),
        PairEnd::Source => (g.csc.row_ptr.clone(), Some(g.t_perm.clone())),
    };
    Ok(Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(B::pair_rows(
        x.into_primitive().tensor(),
        ids.into_primitive(),
        row_ptr,
        perm,
    ))))
}
