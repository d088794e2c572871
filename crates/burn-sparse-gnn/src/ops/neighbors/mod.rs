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
pub(crate) mod host;

use crate::error::OpError;
use crate::graph::Graph;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Int, Tensor, TensorPrimitive};
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

    /// The graph structure of a block with row pointer `row_ptr` and columns `col_idx` (with a
    /// self-loop appended to every row where `shape.self_loops`): the CSR with its edge groups,
    /// the transpose (stable: each transposed row in CSR order) with its edge permutation and
    /// edge groups, no hot-column split; and each edge's row. Every array equals the host
    /// construction's (`max_degree` of the transpose is an upper bound, the row count). On the
    /// host by default (one read of the block).
    fn block_structure(
        row_ptr: IntTensor<Self>,
        col_idx: IntTensor<Self>,
        shape: BlockShape,
    ) -> BlockStructure<IntTensor<Self>> {
        host::block_structure::<Self>(row_ptr, col_idx, shape)
    }

    /// The degree normalisations of the block with row pointer `row_ptr` (`[n_dst + 1]`) over
    /// the sources `src` (`[n_src]` global ids, the destinations first): each row's edge count
    /// and each column's whole-graph out-degree (from `out_degree`, one per node) with `1 / d`
    /// and `1 / sqrt(d)` (0 where `d` is 0), and with `weighted` each row's whole-graph in-degree
    /// (from `in_degree`) and its edges' weight `in-degree / max(count, 1)`. Composed tensor ops
    /// by default.
    fn block_norms(
        row_ptr: IntTensor<Self>,
        src: IntTensor<Self>,
        in_degree: FloatTensor<Self>,
        out_degree: FloatTensor<Self>,
        n_dst: usize,
        weighted: bool,
    ) -> BlockNorms<FloatTensor<Self>> {
        composed_block_norms::<Self>(row_ptr, src, in_degree, out_degree, n_dst, weighted)
    }
}

/// What [`NeighborOps::block_norms`] returns: `[n_dst]` rows, `[n_src]` columns.
#[derive(Clone, Debug)]
pub struct BlockNorms<F> {
    /// Each row's edge count.
    pub in_degree: F,
    /// `1 / count` (0 for an empty row).
    pub in_inv: F,
    /// `1 / sqrt(count)` (0 for an empty row).
    pub in_inv_sqrt: F,
    /// Each column's whole-graph out-degree.
    pub out_degree: F,
    /// `1 / degree` (0 for a degree of 0).
    pub out_inv: F,
    /// `1 / sqrt(degree)` (0 for a degree of 0).
    pub out_inv_sqrt: F,
    /// With weights: each row's whole-graph in-degree and the weight of its edges.
    pub weighted: Option<(F, F)>,
}

/// [`NeighborOps::block_norms`] in Burn's tensor ops.
fn composed_block_norms<B: Backend>(
    row_ptr: IntTensor<B>,
    src: IntTensor<B>,
    in_degree: FloatTensor<B>,
    out_degree: FloatTensor<B>,
    n_dst: usize,
    weighted: bool,
) -> BlockNorms<FloatTensor<B>> {
    let f1 = |t: FloatTensor<B>| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t));
    let row_ptr = Tensor::<B, 1, Int>::from_primitive(row_ptr);
    let src = Tensor::<B, 1, Int>::from_primitive(src);
    let counts = (row_ptr.clone().slice(1..n_dst + 1) - row_ptr.slice(0..n_dst)).float();
    let out_deg = f1(out_degree).select(0, src.clone());
    let inv = |d: Tensor<B, 1>| {
        let zero = d.clone().equal_elem(0.0);
        d.clamp_min(1.0).recip().mask_fill(zero, 0.0)
    };
    let inv_sqrt = |d: Tensor<B, 1>| {
        let zero = d.clone().equal_elem(0.0);
        d.clamp_min(1.0).sqrt().recip().mask_fill(zero, 0.0)
    };
    let p = |t: Tensor<B, 1>| t.into_primitive().tensor();
    let weighted = weighted.then(|| {
        let full = f1(in_degree).select(0, src.slice(0..n_dst));
        let share = full.clone() / counts.clone().clamp_min(1.0);
        (p(full), p(share))
    });
    BlockNorms {
        in_inv: p(inv(counts.clone())),
        in_inv_sqrt: p(inv_sqrt(counts.clone())),
        in_degree: p(counts),
        out_inv: p(inv(out_deg.clone())),
        out_inv_sqrt: p(inv_sqrt(out_deg.clone())),
        out_degree: p(out_deg),
        weighted,
    }
}

/// What [`NeighborOps::block_structure`] builds a block's structure with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockShape {
    /// Destination rows of the block as sampled.
    pub n_dst: usize,
    /// Source columns.
    pub n_src: usize,
    /// Edges as sampled.
    pub nnz: usize,
    /// The largest row as sampled (at most its fan-out).
    pub max_row: usize,
    /// Append the edge from itself to every destination (GAT; the sample holds none).
    pub self_loops: bool,
    /// Edge-group width of the SpMM family, both directions.
    pub group_width: usize,
    /// Edge-group width of the CBSR kernels, both directions.
    pub cbsr_group_width: usize,
    /// Kernel choices of the graph.
    pub policy: crate::ops::primitive::KernelPolicy,
    /// Launch configuration of the graph's kernels.
    pub kernels: sparse_gnn_kernels::config::KernelConfig,
}

/// A block's graph structure and the row of each of its edges.
#[derive(Clone, Debug)]
pub struct BlockStructure<I> {
    /// The CSR, its transpose and the edge permutation.
    pub graph: crate::ops::primitive::GraphPrim<I>,
    /// `[nnz]` (padded to 1 when empty): the row of every CSR edge.
    pub edge_rows: I,
}

/// How [`block_graph`] turns a sampled block into the graph the layers take.
#[derive(Clone, Debug)]
pub struct BlockGraphSpec<B: Backend> {
    /// `[nodes]`: the whole graph's in-degree (row lengths), as floats.
    pub in_degree: Tensor<B, 1>,
    /// `[nodes]`: the whole graph's out-degree (column lengths), as floats.
    pub out_degree: Tensor<B, 1>,
    /// Give every destination the edge from itself (GAT; sample from a graph without them).
    pub self_loops: bool,
    /// Weigh each sampled edge of a row `degree / sampled` (layers that sum their neighbours).
    pub scale_sums: bool,
    /// Partition the edges for the CBSR kernels at `opts.cbsr_group_width` (models with MaxK or
    /// k-max-pooling). Without it they share the SpMM family's partition, which the device
    /// builds once per direction instead of twice.
    pub cbsr_groups: bool,
    /// Edge-group widths, kernel policy and launch configuration (no hot-column split).
    pub opts: crate::graph::GraphOptions,
}

/// The graph of a sampled block, built on the device ([`NeighborOps::block_structure`]):
/// rows the destinations, columns the sources. Degrees: a row's own edge count (so a mean
/// averages the sample), a column's whole-graph out-degree (GCN's `1 / sqrt(d_j)` as on the
/// whole graph). With `spec.scale_sums` every edge of a row with `c` of its `d` neighbours
/// sampled weighs `d / c` and the row's weighted degree is `d` (an unbiased estimate of the
/// whole neighbourhood's sum); the columns' weighted degrees are their out-degrees.
pub fn block_graph<B: NeighborOps>(block: &SampledBlock<B>, fanout: usize, spec: &BlockGraphSpec<B>) -> Graph<B> {
    let nnz = block.col_idx.dims()[0];
    let n_dst = block.n_dst;
    let opts = &spec.opts;
    let group_width = opts
        .group_width
        .resolve(|| sparse_gnn_kernels::heuristics::group_width(n_dst, nnz + usize::from(spec.self_loops) * n_dst))
        .max(1);
    let shape = BlockShape {
        n_dst,
        n_src: block.n_src,
        nnz,
        max_row: fanout,
        self_loops: spec.self_loops,
        group_width,
        cbsr_group_width: if spec.cbsr_groups { opts.cbsr_group_width.max(1) } else { group_width },
        policy: opts.policy,
        kernels: opts.kernels,
    };
    let s = B::block_structure(block.row_ptr.clone().into_primitive(), block.col_idx.clone().into_primitive(), shape);
    let n = B::block_norms(
        s.graph.csr.row_ptr.clone(),
        block.src.clone().into_primitive(),
        spec.in_degree.clone().into_primitive().tensor(),
        spec.out_degree.clone().into_primitive().tensor(),
        n_dst,
        spec.scale_sums,
    );
    let f1 = |t: FloatTensor<B>| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t));
    let out_deg = f1(n.out_degree);
    let norms = crate::graph::DegreeNorms {
        in_inv: f1(n.in_inv),
        in_inv_sqrt: f1(n.in_inv_sqrt),
        out_inv: f1(n.out_inv),
        out_inv_sqrt: f1(n.out_inv_sqrt),
        in_degree: f1(n.in_degree),
        out_degree: out_deg.clone(),
    };
    let weighted = n.weighted.map(|(full, share)| {
        let edge_rows = Tensor::<B, 1, Int>::from_primitive(s.edge_rows.clone()).slice(0..nnz.max(1));
        let mut w = f1(share).select(0, edge_rows);
        if nnz == 0 {
            w = w.slice(0..0);
        }
        (w, crate::graph::WeightSums { rows: f1(full), cols: out_deg })
    });
    Graph::from_parts(s.graph, weighted, norms)
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
