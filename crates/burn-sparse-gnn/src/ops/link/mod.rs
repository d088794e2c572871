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
use burn::tensor::ops::IntTensor;
use burn::tensor::Int;
use burn::tensor::Tensor;
use sparse_gnn_kernels::link as kernel;

/// The device side of link prediction's negative sampling.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait LinkOps: Backend {
    /// The pseudo-random permutation of `0..n` keyed by `keys` (see
    /// [`sparse_gnn_kernels::link::permute`]), `[n]` node ids. On the host by default.
    fn permutation(n: usize, keys: [u32; kernel::ROUNDS], device: &Self::Device) -> IntTensor<Self> {
        host::permutation::<Self>(n, keys, device)
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
    let rows = B::permutation(n, kernel::round_keys(seed), &device);
    let cols = B::permutation(n, kernel::round_keys(seed ^ 0x5EED_0F_C01_u64.rotate_left(17)), &device);
    let mask = B::pair_mask(&pattern.prim().csr, &known.prim().csr, rows.clone(), cols.clone());
    Ok(NegativePairs {
        rows: Tensor::from_primitive(rows),
        cols: Tensor::from_primitive(cols),
        mask: Tensor::from_primitive(mask),
    })
}
