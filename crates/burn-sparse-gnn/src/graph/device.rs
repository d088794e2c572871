//! Device graphs: the CSR structure uploaded once, with its transpose, degree norms and the
//! edge-group partition every kernel uses for load balance.

use super::csr::Csr;
use super::dataset::GraphData;
use super::options::{GraphOptions, GraphShape};
use super::upload::{float_tensor, norms, owned_index, upload_csr, Cols, Direct, IndexSink, Staged};
use crate::ops::device::DeviceOps;
use crate::ops::primitive::{GraphPrim, GraphPrimitive};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorPrimitive};
use sparse_gnn_kernels::config::KernelConfig;
use sparse_gnn_kernels::csr::{transpose, Transpose};
use std::time::Instant;

/// Degrees and degree normalisations of every node (norms are 0 where the degree is 0).
#[derive(Clone, Debug)]
pub struct DegreeNorms<B: Backend> {
    /// In-degree (row length), as floats.
    pub in_degree: Tensor<B, 1>,
    /// Out-degree (column length), as floats.
    pub out_degree: Tensor<B, 1>,
    /// `1 / d_in` (row degree).
    pub in_inv: Tensor<B, 1>,
    /// `1 / sqrt(d_in)`.
    pub in_inv_sqrt: Tensor<B, 1>,
    /// `1 / d_out` (column degree).
    pub out_inv: Tensor<B, 1>,
    /// `1 / sqrt(d_out)`.
    pub out_inv_sqrt: Tensor<B, 1>,
}

/// Weighted degrees of a graph with edge weights: the sum of the weights of every row's edges
/// and of every column's edges (f64 sums on the host, stored in the backend's float type).
#[derive(Clone, Debug)]
pub struct WeightSums<B: Backend> {
    /// `[n_rows]` weighted in-degree.
    pub rows: Tensor<B, 1>,
    /// `[n_cols]` weighted out-degree.
    pub cols: Tensor<B, 1>,
}

/// Per-graph memo of derived node vectors (e.g. a layer's normalisation), shared by clones.
type Memo<B> = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Tensor<B, 1>>>>;

/// A graph on a device: the structure every sparse op of [`crate::ops`] takes.
#[derive(Clone, Debug)]
pub struct Graph<B: Backend> {
    prim: GraphPrimitive<B>,
    weights: Option<Tensor<B, 1>>,
    weight_sums: Option<WeightSums<B>>,
    norms: DegreeNorms<B>,
    setup_seconds: f64,
    memo: Memo<B>,
}

impl<B: DeviceOps> Graph<B> {
    /// Uploads `adj` and precomputes its transpose, degree norms and edge groups
    /// (O(N + E) host work, timed in [`Graph::setup_seconds`]).
    pub fn new(adj: &Csr, device: &B::Device, opts: GraphOptions) -> Self {
        Self::build(adj, device, opts, adj.row_degrees(), adj.col_degrees(), Instant::now())
    }

    /// [`Graph::new`] with the degrees of a larger graph this one is a part of: `in_degree[i]`
    /// for each row and `out_degree[j]` for each column. A part of a partitioned graph holds
    /// whole rows, so its row degrees are its own, but its columns (own and halo nodes) see
    /// only the edges into its rows: the normalisations (GCN's `1/sqrt(d_out)`, ...) need the
    /// columns' global degrees to give the same result as the whole graph. The weighted degrees
    /// of a weighted `adj` are its own until [`Graph::with_weight_sums`] gives the larger
    /// graph's.
    ///
    /// Errors when the vectors do not have one entry per row / column.
    pub fn with_degrees(
        adj: &Csr,
        device: &B::Device,
        opts: GraphOptions,
        in_degree: Vec<usize>,
        out_degree: Vec<usize>,
    ) -> Result<Self, crate::GraphError> {
        let start = Instant::now();
        if in_degree.len() != adj.n_rows() {
            return Err(crate::GraphError::NodeCount {
                what: "row degrees",
                got: in_degree.len(),
                nodes: adj.n_rows(),
            });
        }
        if out_degree.len() != adj.n_cols() {
            return Err(crate::GraphError::NodeCount {
                what: "column degrees",
                got: out_degree.len(),
                nodes: adj.n_cols(),
            });
        }
        Ok(Self::build(adj, device, opts, in_degree, out_degree, start))
    }

    fn build(
        adj: &Csr,
        device: &B::Device,
        opts: GraphOptions,
        in_deg: Vec<usize>,
        out_deg: Vec<usize>,
        start: Instant,
    ) -> Self {
        // host copies one at a time next to `adj`: the adjacency goes up before the transpose
        // is built; of the transpose the permutation goes up first, then its hot-column split,
        // then its columns, each array uploaded from its own allocation (at most three arrays of
        // the edge count at once, with `adj`)
        let r = adj.as_ref();
        let mut sink = Direct::<B> { device, piece: opts.upload_piece };
        let csr = upload_csr((r.n_rows, r.n_cols), r.row_ptr, Cols::Borrowed(r.col_idx), &opts, &mut sink);
        let Transpose { row_ptr: t_ptr, col_idx: t_col, perm } = transpose(&r);
        let t_perm = owned_index::<B>(perm, opts.upload_piece, device);
        let csc = upload_csr((r.n_cols, r.n_rows), &t_ptr, Cols::Owned(t_col), &opts, &mut sink);
        let prim = GraphPrim { csr, csc, t_perm, policy: opts.policy };
        let (in_inv, in_inv_sqrt) = norms(&in_deg);
        let (out_inv, out_inv_sqrt) = norms(&out_deg);
        let norms = DegreeNorms {
            in_degree: float_tensor(in_deg.iter().map(|&d| d as f64).collect(), device),
            out_degree: float_tensor(out_deg.iter().map(|&d| d as f64).collect(), device),
            in_inv: float_tensor(in_inv, device),
            in_inv_sqrt: float_tensor(in_inv_sqrt, device),
            out_inv: float_tensor(out_inv, device),
            out_inv_sqrt: float_tensor(out_inv_sqrt, device),
        };
        let weights = adj.weights().map(|w| float_tensor(w.iter().map(|&v| v as f64).collect(), device));
        let weight_sums = match (adj.row_weight_sums(), adj.col_weight_sums()) {
            (Some(rows), Some(cols)) => {
                Some(WeightSums { rows: float_tensor(rows, device), cols: float_tensor(cols, device) })
            }
            _ => None,
        };
        Self::built(prim, weights, weight_sums, norms, start)
    }

    /// [`Graph::new`] for a small graph that is built often, such as each batch of a
    /// graph-classification epoch: every index array of the structure goes up in one upload and
    /// every float vector in another ([`DeviceOps::index_arrays`]), where `Graph::new` uploads
    /// some thirty arrays one by one. The host holds all the arrays at once, so a large graph
    /// belongs to `Graph::new`, which uploads long arrays in pieces. A graph without nodes or
    /// edges is built by `Graph::new`.
    pub fn new_packed(adj: &Csr, device: &B::Device, opts: GraphOptions) -> Self {
        if adj.n_rows() == 0 || adj.n_cols() == 0 || adj.nnz() == 0 {
            return Self::new(adj, device, opts);
        }
        let start = Instant::now();
        let r = adj.as_ref();
        let mut sink = Staged::default();
        let csr = upload_csr((r.n_rows, r.n_cols), r.row_ptr, Cols::Borrowed(r.col_idx), &opts, &mut sink);
        let Transpose { row_ptr: t_ptr, col_idx: t_col, perm } = transpose(&r);
        let t_perm = sink.owned(perm);
        let csc = upload_csr((r.n_cols, r.n_rows), &t_ptr, Cols::Owned(t_col), &opts, &mut sink);
        let ints = B::index_arrays(sink.arrays, device);
        let prim = GraphPrim { csr, csc, t_perm, policy: opts.policy }.map(|i| ints[i].clone());
        let (in_deg, out_deg) = (adj.row_degrees(), adj.col_degrees());
        let (in_inv, in_inv_sqrt) = norms(&in_deg);
        let (out_inv, out_inv_sqrt) = norms(&out_deg);
        let as_f64 = |d: &[usize]| d.iter().map(|&d| d as f64).collect::<Vec<_>>();
        let mut floats = vec![as_f64(&in_deg), as_f64(&out_deg), in_inv, in_inv_sqrt, out_inv, out_inv_sqrt];
        let weights = adj.weights().map(|w| w.iter().map(|&v| v as f64).collect::<Vec<_>>());
        let sums = adj.row_weight_sums().zip(adj.col_weight_sums());
        let (has_weights, has_sums) = (weights.is_some(), sums.is_some());
        floats.extend(weights);
        if let Some((rows, cols)) = sums {
            floats.extend([rows, cols]);
        }
        let mut floats = B::float_arrays(floats, device)
            .into_iter()
            .map(|t| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t)));
        let mut next = || floats.next().expect("one tensor per vector uploaded");
        let norms = DegreeNorms {
            in_degree: next(),
            out_degree: next(),
            in_inv: next(),
            in_inv_sqrt: next(),
            out_inv: next(),
            out_inv_sqrt: next(),
        };
        let weights = has_weights.then(&mut next);
        let weight_sums = has_sums.then(|| WeightSums { rows: next(), cols: next() });
        Self::built(prim, weights, weight_sums, norms, start)
    }

    /// [`Graph::new`] on the adjacency of a dataset.
    pub fn from_data(data: &GraphData, device: &B::Device, opts: GraphOptions) -> Self {
        Self::new(data.adjacency(), device, opts)
    }

    /// The graph with the weighted degrees of a larger graph it is a part of (see
    /// [`Graph::with_degrees`]): `rows[i]` the sum of the weights of row `i`'s edges and
    /// `cols[j]` of column `j`'s edges, in the whole graph. A graph without edge weights is
    /// returned as it is. Forgets the derived vectors remembered so far ([`Graph::memoized`]).
    ///
    /// Errors when the vectors do not have one entry per row / column.
    pub fn with_weight_sums(mut self, rows: Vec<f64>, cols: Vec<f64>) -> Result<Self, crate::GraphError> {
        if rows.len() != self.n_rows() {
            return Err(crate::GraphError::NodeCount {
                what: "row weight sums",
                got: rows.len(),
                nodes: self.n_rows(),
            });
        }
        if cols.len() != self.n_cols() {
            return Err(crate::GraphError::NodeCount {
                what: "column weight sums",
                got: cols.len(),
                nodes: self.n_cols(),
            });
        }
        if self.weights.is_none() {
            return Ok(self);
        }
        let device = self.device();
        self.weight_sums = Some(WeightSums { rows: float_tensor(rows, &device), cols: float_tensor(cols, &device) });
        self.memo = Default::default();
        Ok(self)
    }
}

impl<B: Backend> Graph<B> {
    /// The graph from its uploaded parts, timed from `start`.
    fn built(
        prim: GraphPrimitive<B>,
        weights: Option<Tensor<B, 1>>,
        weight_sums: Option<WeightSums<B>>,
        norms: DegreeNorms<B>,
        start: Instant,
    ) -> Self {
        Self {
            prim,
            weights,
            weight_sums,
            norms,
            setup_seconds: start.elapsed().as_secs_f64(),
            memo: Default::default(),
        }
    }

    /// A graph from its device parts: the structure, the edge weights with their weighted
    /// degrees, the degree norms (no host work; for blocks built on the device).
    pub(crate) fn from_parts(
        prim: GraphPrimitive<B>,
        weighted: Option<(Tensor<B, 1>, WeightSums<B>)>,
        norms: DegreeNorms<B>,
    ) -> Self {
        let (weights, weight_sums) = match weighted {
            Some((w, s)) => (Some(w), Some(s)),
            None => (None, None),
        };
        Self { prim, weights, weight_sums, norms, setup_seconds: 0.0, memo: Default::default() }
    }

    /// Primitive form (for backend implementations).
    pub fn prim(&self) -> &GraphPrimitive<B> {
        &self.prim
    }
    /// Number of nodes (rows).
    pub fn num_nodes(&self) -> usize {
        self.prim.csr.n_rows
    }
    /// Number of rows (destination nodes).
    pub fn n_rows(&self) -> usize {
        self.prim.csr.n_rows
    }
    /// Number of columns (source nodes).
    pub fn n_cols(&self) -> usize {
        self.prim.csr.n_cols
    }
    /// Number of edges.
    pub fn num_edges(&self) -> usize {
        self.prim.csr.nnz
    }
    /// Stored edge weights (from the adjacency, `[nnz]` in CSR order), if any.
    pub fn weights(&self) -> Option<&Tensor<B, 1>> {
        self.weights.as_ref()
    }
    /// Weighted degrees (present exactly when the graph has edge weights).
    pub fn weight_sums(&self) -> Option<&WeightSums<B>> {
        self.weight_sums.as_ref()
    }
    /// Degree norms.
    pub fn norms(&self) -> &DegreeNorms<B> {
        &self.norms
    }
    /// Seconds spent building the device graph.
    pub fn setup_seconds(&self) -> f64 {
        self.setup_seconds
    }
    /// A node vector derived from the graph, computed once per graph by `compute` and
    /// remembered under `key` (e.g. a GCN normalisation that every epoch reuses).
    pub fn memoized(&self, key: &str, compute: impl FnOnce(&Self) -> Tensor<B, 1>) -> Tensor<B, 1> {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = memo.get(key) {
            return t.clone();
        }
        let t = compute(self);
        memo.insert(key.to_string(), t.clone());
        t
    }

    /// Device of the graph.
    pub fn device(&self) -> B::Device {
        self.norms.in_inv.device()
    }

    /// Launch configuration of the graph's kernels.
    pub fn kernel_config(&self) -> &KernelConfig {
        &self.prim.csr.kernels
    }

    /// What the graph's options resolved to.
    pub fn shape(&self) -> GraphShape {
        let (csr, csc) = (&self.prim.csr, &self.prim.csc);
        GraphShape {
            group_width: csr.groups.width,
            cbsr_group_width: csr.cbsr_groups.width,
            hot_cols: csr.hot.as_ref().map_or(0, |h| h.len),
            hot_cols_transpose: csc.hot.as_ref().map_or(0, |h| h.len),
            cold_group_width: csr.hot.as_ref().or(csc.hot.as_ref()).map_or(0, |h| h.cold_groups.width),
        }
    }
}

impl<B: AutodiffBackend> Graph<B> {
    /// The same graph on the inner (non-autodiff) backend, sharing the device buffers.
    pub fn inner(&self) -> Graph<B::InnerBackend> {
        let n = &self.norms;
        Graph {
            prim: self.prim.clone().map(B::int_inner),
            weights: self.weights.as_ref().map(|w| w.clone().inner()),
            weight_sums: self
                .weight_sums
                .as_ref()
                .map(|s| WeightSums { rows: s.rows.clone().inner(), cols: s.cols.clone().inner() }),
            norms: DegreeNorms {
                in_degree: n.in_degree.clone().inner(),
                out_degree: n.out_degree.clone().inner(),
                in_inv: n.in_inv.clone().inner(),
                in_inv_sqrt: n.in_inv_sqrt.clone().inner(),
                out_inv: n.out_inv.clone().inner(),
                out_inv_sqrt: n.out_inv_sqrt.clone().inner(),
            },
            setup_seconds: self.setup_seconds,
            memo: Default::default(),
        }
    }
}
