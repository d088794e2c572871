//! Neighbour sampling for mini-batch training on the device (see
//! [`sparse_gnn_kernels::neighbors`]): for each seed node, a uniform sample without replacement
//! of at most `fanout` of its row's columns (its in-neighbours, the nodes it aggregates from).
//!
//! ```
//! use burn::backend::NdArray;
//! use burn::tensor::{Int, Tensor};
//! use burn_sparse_gnn::ops::neighbors::{sample_neighbors, step_key};
//! use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
//! type B = NdArray;
//! let dev = Default::default();
//! // node 0 aggregates from 1, 2, 3 and 4; node 1 from 0
//! let csr = Csr::from_edges(5, &[1, 2, 3, 4, 0], &[0, 0, 0, 0, 1], None, BuildOptions::default()).unwrap();
//! let g = Graph::<B>::new(&csr, &dev, GraphOptions::default());
//! let seeds = Tensor::<B, 1, Int>::from_ints([0, 1, 2], &dev);
//! let s = sample_neighbors(&g, seeds, 2, step_key(7, 0, 0)).unwrap();
//! let counts = s.counts.into_data().convert::<i64>().to_vec::<i64>().unwrap();
//! assert_eq!(counts, vec![2, 1, 0]); // min(fan-out, degree)
//! let picks = s.picks.into_data().convert::<i64>().to_vec::<i64>().unwrap();
//! assert!(picks[0] < picks[1] && (1..=4).contains(&picks[0]) && (1..=4).contains(&picks[1]));
//! assert_eq!(&picks[2..], &[0, -1, -1, -1]); // unused slots are -1
//! ```

mod autodiff;
mod cube;
mod host;

use crate::error::OpError;
use crate::graph::Graph;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::IntTensor;
use burn::tensor::{Int, Tensor};
pub use sparse_gnn_kernels::neighbors::step_key;

/// Neighbour sampling on the device.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait NeighborOps: Backend {
    /// For each of the `seeds` (rows of `csr`): `counts[s] = min(fanout, degree)` (`[n_seeds]`)
    /// and `picks` (`[n_seeds * fanout]`): the sampled columns in row order, then -1. The sample
    /// of a node depends only on `key`, the node and `fanout`. On the host by default.
    fn sample_neighbors(
        csr: &CsrPrimitive<Self>,
        seeds: IntTensor<Self>,
        fanout: usize,
        key: [u32; 2],
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        host::sample_neighbors::<Self>(csr, seeds, fanout, key)
    }

    /// The sampled block of the distinct destinations `dst` (rows of the square `csr`): the
    /// sample of [`Self::sample_neighbors`] relabelled so that the destinations come first among
    /// the sources, the other sampled nodes after them in ascending global id (DGL's
    /// message-flow-graph layout). On the host by default.
    fn sample_block(
        csr: &CsrPrimitive<Self>,
        dst: IntTensor<Self>,
        fanout: usize,
        key: [u32; 2],
    ) -> BlockPrim<IntTensor<Self>> {
        host::sample_block::<Self>(csr, dst, fanout, key)
    }
}

/// The arrays of a sampled block (see [`NeighborOps::sample_block`]).
#[derive(Clone, Debug)]
pub struct BlockPrim<I> {
    /// Sources: the destinations, then the other sampled nodes.
    pub n_src: usize,
    /// `[n_dst + 1]`.
    pub row_ptr: I,
    /// `[nnz]`: each edge's source, an index into `src`.
    pub col_idx: I,
    /// `[n_src]`: the sources' global ids.
    pub src: I,
}

/// A sampled block: `n_dst` destination rows over `n_src` source columns, the destinations
/// first among the sources (their local ids are their positions in `dst`), the other sampled
/// nodes after them in ascending global id.
#[derive(Clone, Debug)]
pub struct SampledBlock<B: Backend> {
    /// Destination rows.
    pub n_dst: usize,
    /// Source columns.
    pub n_src: usize,
    /// `[n_dst + 1]`: the row pointer.
    pub row_ptr: Tensor<B, 1, Int>,
    /// `[nnz]`: each edge's source column (a local id), each row's edges in global-id order.
    pub col_idx: Tensor<B, 1, Int>,
    /// `[n_src]`: the global id of each source column; the next layer's destinations.
    pub src: Tensor<B, 1, Int>,
}

/// The block of one layer of a sampled mini-batch: for each of the distinct destinations `dst`
/// (nodes of the square graph `g`), a uniform sample of at most `fanout` of the nodes it
/// aggregates from ([`sample_neighbors`]), as a CSR over the block's sources. Built on the
/// device without a host loop over nodes; the sizes (sources, edges) are read back.
///
/// Checks `dst` on the host (one read of it): every id a node of `g`, no id twice.
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::{Int, Tensor};
/// use burn_sparse_gnn::ops::neighbors::{sample_block, step_key};
/// use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
/// type B = NdArray;
/// let dev = Default::default();
/// // 0 aggregates from 2 and 3, 2 from 0
/// let csr = Csr::from_edges(4, &[2, 3, 0], &[0, 0, 2], None, BuildOptions::default()).unwrap();
/// let g = Graph::<B>::new(&csr, &dev, GraphOptions::default());
/// let b = sample_block(&g, Tensor::<B, 1, Int>::from_ints([2, 0], &dev), 5, step_key(1, 0, 0)).unwrap();
/// assert_eq!((b.n_dst, b.n_src), (2, 3));
/// let ids = |t: Tensor<B, 1, Int>| t.into_data().convert::<i64>().to_vec::<i64>().unwrap();
/// assert_eq!(ids(b.src), vec![2, 0, 3]); // destinations first, then node 3
/// assert_eq!(ids(b.row_ptr), vec![0, 1, 3]);
/// assert_eq!(ids(b.col_idx), vec![1, 0, 2]); // 2 <- 0; 0 <- 2, 3
/// ```
pub fn sample_block<B: NeighborOps>(
    g: &Graph<B>,
    dst: Tensor<B, 1, Int>,
    fanout: usize,
    key: [u32; 2],
) -> Result<SampledBlock<B>, OpError> {
    let op = "sample_block";
    if fanout == 0 {
        return Err(OpError::Config { op, msg: "the fan-out must be at least 1".into() });
    }
    if g.n_rows() != g.n_cols() {
        return Err(OpError::Config {
            op,
            msg: format!("sampling needs a square graph, this one is {} x {}", g.n_rows(), g.n_cols()),
        });
    }
    let n_dst = check_nodes(g, &dst, op, "node", true)?;
    Ok(block_of(g, dst, n_dst, fanout, key))
}

/// The block of the layer below `block` in a sampled mini-batch: [`sample_block`] with
/// `block`'s sources as the destinations (distinct nodes of `g` by construction, so unlike
/// [`sample_block`] nothing is read back to check them). `block` must come from `g`.
pub fn sample_next_block<B: NeighborOps>(
    g: &Graph<B>,
    block: &SampledBlock<B>,
    fanout: usize,
    key: [u32; 2],
) -> Result<SampledBlock<B>, OpError> {
    if fanout == 0 {
        return Err(OpError::Config { op: "sample_next_block", msg: "the fan-out must be at least 1".into() });
    }
    Ok(block_of(g, block.src.clone(), block.n_src, fanout, key))
}

fn block_of<B: NeighborOps>(
    g: &Graph<B>,
    dst: Tensor<B, 1, Int>,
    n_dst: usize,
    fanout: usize,
    key: [u32; 2],
) -> SampledBlock<B> {
    let b = B::sample_block(&g.prim().csr, dst.into_primitive(), fanout, key);
    SampledBlock {
        n_dst,
        n_src: b.n_src,
        row_ptr: Tensor::from_primitive(b.row_ptr),
        col_idx: Tensor::from_primitive(b.col_idx),
        src: Tensor::from_primitive(b.src),
    }
}

/// The output of [`sample_neighbors`].
#[derive(Clone, Debug)]
pub struct NeighborSample<B: Backend> {
    /// `[n_seeds]`: how many neighbours each seed got, `min(fanout, degree)`.
    pub counts: Tensor<B, 1, Int>,
    /// `[n_seeds, fanout]`: each seed's sampled neighbours (global ids, ascending as in its row),
    /// then -1 in the unused slots.
    pub picks: Tensor<B, 2, Int>,
}

/// For each seed, a uniform sample without replacement of `min(fanout, degree)` of the nodes it
/// aggregates from (the columns of its row of `g`), drawn on the device; seeded by `key` (one per
/// layer and batch: [`step_key`]) and reproducible on every backend.
///
/// Checks that every seed is a row of `g` (one read of the seeds to the host).
pub fn sample_neighbors<B: NeighborOps>(
    g: &Graph<B>,
    seeds: Tensor<B, 1, Int>,
    fanout: usize,
    key: [u32; 2],
) -> Result<NeighborSample<B>, OpError> {
    if fanout == 0 {
        return Err(OpError::Config { op: "sample_neighbors", msg: "the fan-out must be at least 1".into() });
    }
    let n = check_nodes(g, &seeds, "sample_neighbors", "seed", false)?;
    let (counts, picks) = B::sample_neighbors(&g.prim().csr, seeds.into_primitive(), fanout, key);
    Ok(NeighborSample {
        counts: Tensor::from_primitive(counts),
        picks: Tensor::<B, 1, Int>::from_primitive(picks).reshape([n, fanout]),
    })
}

/// Reads `ids` to the host and checks that each is a node of `g` (and, with `distinct`, that none
/// repeats); returns how many there are.
fn check_nodes<B: Backend>(
    g: &Graph<B>,
    ids: &Tensor<B, 1, Int>,
    op: &'static str,
    what: &str,
    distinct: bool,
) -> Result<usize, OpError> {
    let ids: Vec<i64> = ids.clone().into_data().convert::<i64>().into_vec::<i64>().unwrap_or_default();
    let n = g.n_rows();
    if let Some(v) = ids.iter().find(|&&v| v < 0 || v >= n as i64) {
        return Err(OpError::Config { op, msg: format!("{what} {v} is not a node of the graph (0..{n})") });
    }
    if distinct {
        // sorted, not a flag per node: a batch's ids are few next to a large graph's nodes
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(OpError::Config { op, msg: format!("node {} is a destination twice", w[0]) });
        }
    }
    Ok(ids.len())
}
