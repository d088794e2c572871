//! The backend extension trait: [`SparseGnnBackend`] is the sum of one trait per op family
//! (each with its kernels and the differentiable entry points that `Autodiff<B>` overrides with
//! hand-written backward passes), implemented for every backend that has them all.

use crate::dist::exchange::ExchangeOps;
use crate::dist::transfer::TransferOps;
use crate::ops::aggregation::AggregationOps;
use crate::ops::attention::AttentionOps;
use crate::ops::cbsr::CbsrOps;
use crate::ops::dense::DenseOps;
use crate::ops::device::DeviceOps;
use crate::ops::dropout::DropoutOps;
use crate::ops::layer::LayerOps;
use crate::ops::link::LinkOps;
use crate::ops::loss::LossOps;
use crate::ops::neighbors::NeighborOps;
use crate::ops::norm::NormOps;
use crate::ops::optim::OptimOps;
use crate::ops::rows::RowOps;

pub use crate::ops::primitive::{
    CbsrPrim, CsrPrimitive, PoolLayout, PoolSpec, Reduce, ReluDropout, SampleSpec, Sampling, SpmmOutput,
};

/// Sparse kernels of the project, implemented for NdArray (CPU reference), `CubeBackend`
/// (CubeCL kernels on CUDA / wgpu) and `Autodiff<B>`.
///
/// Conventions: `csr` is a CSR structure with row = destination; edge weights `w` are
/// `[nnz, heads]` (or `[nnz]` for one head) in CSR edge order, `heads` dividing the feature
/// width; node features are `[n, f]` row-major. Methods without the `ad_` prefix are plain
/// kernels: on `Autodiff<B>` their outputs are not tracked. The `ad_` methods are the
/// differentiable operations; their default is the kernel, `Autodiff<B>` records a backward.
///
/// The methods are those of the family traits: [`AggregationOps`], [`AttentionOps`],
/// [`CbsrOps`], [`DenseOps`], [`LayerOps`], [`LinkOps`], [`NeighborOps`], [`NormOps`], [`RowOps`], [`LossOps`], [`OptimOps`], [`DropoutOps`],
/// [`DeviceOps`], [`TransferOps`] and [`ExchangeOps`]. A backend implements each of them; this
/// trait then holds for it.
pub trait SparseGnnBackend:
    AggregationOps
    + AttentionOps
    + CbsrOps
    + DenseOps
    + LayerOps
    + LinkOps
    + NeighborOps
    + NormOps
    + RowOps
    + LossOps
    + OptimOps
    + DropoutOps
    + DeviceOps
    + TransferOps
    + ExchangeOps
{
}

impl<
        B: AggregationOps
            + AttentionOps
            + CbsrOps
            + DenseOps
            + LayerOps
            + LinkOps
            + NeighborOps
            + NormOps
            + RowOps
            + LossOps
            + OptimOps
            + DropoutOps
            + DeviceOps
            + TransferOps
            + ExchangeOps,
    > SparseGnnBackend for B
{
}

/// A backend whose autodiff inner backend also has the sparse ops (what training needs: the
/// validation model runs on the inner backend).
pub trait SparseGnnAutodiffBackend:
    SparseGnnBackend + burn::tensor::backend::AutodiffBackend<InnerBackend: SparseGnnBackend>
{
}

impl<B, C> SparseGnnAutodiffBackend for burn::backend::Autodiff<B, C>
where
    B: SparseGnnBackend,
    C: burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy,
{
}
