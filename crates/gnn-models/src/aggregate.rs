//! Neighbour aggregation of a hidden state in a model's precision, and the per-edge weights
//! it uses.

use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::{ops, Graph, Reduce, SparseGnnBackend};

use crate::hidden::Hidden;
use crate::precision::Precision;

/// Neighbour aggregation of a hidden state over the graph's edges, weighted by the graph's
/// edge weights where it has them ([`Graph::weights`]; see [`aggregate_weighted`]): dense input
/// goes through the SpMM kernels, CBSR input through the CBSR SpGEMM for sum and mean, and
/// through the dense fallback for max. The CBSR mean is the SpGEMM then `1 / deg` in f32; in
/// half precision it is the SpGEMM with the per-edge weights `1 / deg(row)`
/// ([`mean_edge_weights`]), so the half output holds the mean, not the sum: a hub row's sum of
/// thousands of values would overflow f16 (65,504).
pub fn aggregate<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    reduce: Reduce,
    precision: Precision,
) -> Tensor<B, 2> {
    match g.weights() {
        Some(w) => aggregate_with(g, h, w, reduce, precision, || weighted_mean_edge_weights(g, precision)),
        None => aggregate_unweighted(g, h, reduce, precision),
    }
}

/// [`aggregate`] with the per-edge weights `w` (`[nnz]`, CSR order, the graph's float type;
/// `None`: every weight 1, whatever the graph holds): sum `sum_j w_ij h_j`, mean
/// `sum_j w_ij h_j / deg(i)` (divided by the number of the row's edges, not by the sum of their
/// weights: all weights 1 give the unweighted mean, and a row whose weights cancel out stays
/// finite), max `max_j w_ij h_j` (feature-wise). In mixed precision the weights are rounded to
/// the half type with the rows (f16: magnitudes above 65,504 become infinite, below about
/// 6e-8 zero). Weights are data: they receive no gradient.
pub fn aggregate_weighted<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    w: Option<&Tensor<B, 1>>,
    reduce: Reduce,
    precision: Precision,
) -> Tensor<B, 2> {
    match w {
        Some(w) => aggregate_with(g, h, w, reduce, precision, || {
            precision.down(w.clone() * per_edge_row_values(g, g.norms().in_inv.clone()))
        }),
        None => aggregate_unweighted(g, h, reduce, precision),
    }
}

fn aggregate_unweighted<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    reduce: Reduce,
    precision: Precision,
) -> Tensor<B, 2> {
    match (h, reduce) {
        (Hidden::Sparse(c), Reduce::Sum | Reduce::Mean) => {
            let c = c.with_values(precision.down(c.values()));
            if reduce == Reduce::Mean && precision.half().is_some() {
                let w = mean_edge_weights(g, precision);
                return precision.up(ops::cbsr_spgemm_weighted(g, w, &c));
            }
            let out = precision.up(ops::cbsr_spgemm(g, &c));
            if reduce == Reduce::Mean {
                out * g.norms().in_inv.clone().unsqueeze_dim::<2>(1)
            } else {
                out
            }
        }
        _ => precision.up(ops::spmm(g, precision.down(h.dense()), reduce)),
    }
}

/// The weighted aggregation; `mean_weights`: `w_e / deg(row e)` in the aggregation storage type
/// (the half-precision CBSR mean's edge weights).
fn aggregate_with<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    w: &Tensor<B, 1>,
    reduce: Reduce,
    precision: Precision,
    mean_weights: impl FnOnce() -> Tensor<B, 1>,
) -> Tensor<B, 2> {
    match (h, reduce) {
        (Hidden::Sparse(c), Reduce::Sum | Reduce::Mean) => {
            let c = c.with_values(precision.down(c.values()));
            if reduce == Reduce::Mean && precision.half().is_some() {
                return precision.up(ops::cbsr_spgemm_weighted(g, mean_weights(), &c));
            }
            let out = precision.up(ops::cbsr_spgemm_weighted(g, precision.down(w.clone()), &c));
            if reduce == Reduce::Mean {
                out * g.norms().in_inv.clone().unsqueeze_dim::<2>(1)
            } else {
                out
            }
        }
        _ => precision.up(ops::spmm_weighted(g, precision.down(w.clone()), precision.down(h.dense()), reduce)),
    }
}

/// `w_e / deg(row e)` of every edge of `g` with its own weights `w`, in the aggregation storage
/// type of `precision`, remembered per graph and precision (the weighted form of
/// [`mean_edge_weights`]). A graph without weights gives [`mean_edge_weights`].
pub fn weighted_mean_edge_weights<B: SparseGnnBackend>(g: &Graph<B>, precision: Precision) -> Tensor<B, 1> {
    let Some(w) = g.weights() else { return mean_edge_weights(g, precision) };
    g.memoized(&format!("mean:edge-weights:weighted:{precision:?}"), |g| {
        precision.down(w.clone() * per_edge_row_values(g, g.norms().in_inv.clone()))
    })
}

/// `v[row e]` of every edge `e` of `g` (`v`: `[n_rows]`), in CSR order: an SDDMM of `v` with
/// ones (each edge's product `v[row] * 1`, exact), on the device.
pub fn per_edge_row_values<B: SparseGnnBackend>(g: &Graph<B>, v: Tensor<B, 1>) -> Tensor<B, 1> {
    let ones = Tensor::<B, 2>::ones([g.n_cols(), 1], &v.device());
    ops::sddmm(g, v.unsqueeze_dim::<2>(1), ones)
}

/// `a[row e] * b[col e]` of every edge `e` of `g` (`a`: `[n_rows]`, `b`: `[n_cols]`), in CSR
/// order (an SDDMM of width 1, on the device).
pub fn per_edge_products<B: SparseGnnBackend>(g: &Graph<B>, a: Tensor<B, 1>, b: Tensor<B, 1>) -> Tensor<B, 1> {
    ops::sddmm(g, a.unsqueeze_dim::<2>(1), b.unsqueeze_dim::<2>(1))
}

/// `1 / deg(row)` of every edge of `g` (`[nnz]`, CSR order): the weights of a mean as a
/// weighted sum, in the aggregation storage type of `precision`. Built once per graph and
/// precision (one read of the row offsets to the host) and remembered ([`Graph::memoized`]).
pub fn mean_edge_weights<B: SparseGnnBackend>(g: &Graph<B>, precision: Precision) -> Tensor<B, 1> {
    g.memoized(&format!("mean:edge-weights:{precision:?}"), |g| {
        let device = g.device();
        let row_ptr: Vec<i64> = Tensor::<B, 1, Int>::from_primitive(g.prim().csr.row_ptr.clone())
            .into_data()
            .convert::<i64>()
            .into_vec::<i64>()
            .unwrap_or_default();
        let rows: Vec<i64> = row_ptr
            .windows(2)
            .enumerate()
            .flat_map(|(r, w)| std::iter::repeat_n(r as i64, (w[1] - w[0]).max(0) as usize))
            .collect();
        let len = rows.len();
        let rows = Tensor::<B, 1, Int>::from_data(TensorData::new(rows, [len]).convert::<B::IntElem>(), &device);
        precision.down(g.norms().in_inv.clone().select(0, rows))
    })
}
