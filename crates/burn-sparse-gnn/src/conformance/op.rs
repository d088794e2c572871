//! The operations under test ([`Op`]) and their kinds ([`OpKind`]).

use crate::ops::primitive::{PoolSpec, Reduce, SampleSpec};

/// An operation under test, with its configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// SpMM; `heads = 0` means no edge weights.
    Spmm {
        /// The reduction.
        reduce: Reduce,
        /// Heads of the edge weights (0: no weights).
        heads: usize,
    },
    /// SDDMM with `heads` heads.
    Sddmm {
        /// Number of heads.
        heads: usize,
    },
    /// Edge softmax with `heads` heads.
    EdgeSoftmax {
        /// Number of heads.
        heads: usize,
    },
    /// ES-SpMM.
    Sampled {
        /// The sampling.
        spec: SampleSpec,
        /// The reduction.
        reduce: Reduce,
        /// Whether the edges are weighted.
        weighted: bool,
    },
    /// MaxK values (and indices).
    Maxk {
        /// Values kept per row.
        k: usize,
    },
    /// MaxK then dense (scatter / gather path).
    MaxkDense {
        /// Values kept per row.
        k: usize,
    },
    /// k-max-pooling values (and indices).
    Maxpool {
        /// The pooling.
        spec: PoolSpec,
    },
    /// MaxK then CBSR SpGEMM (gradients through SSpMM).
    CbsrSpgemm {
        /// Values kept per row by MaxK.
        k: usize,
        /// Whether the edges are weighted.
        weighted: bool,
    },
}

impl Op {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Op::Spmm { .. } => "spmm",
            Op::Sddmm { .. } => "sddmm",
            Op::EdgeSoftmax { .. } => "edge_softmax",
            Op::Sampled { .. } => "sampled_spmm",
            Op::Maxk { .. } => "maxk",
            Op::MaxkDense { .. } => "maxk_dense",
            Op::Maxpool { .. } => "maxpool",
            Op::CbsrSpgemm { .. } => "cbsr_spgemm",
        }
    }

    /// The kind of the operation (one generated test each).
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Spmm { reduce: Reduce::Sum, .. } => OpKind::SpmmSum,
            Op::Spmm { reduce: Reduce::Mean, .. } => OpKind::SpmmMean,
            Op::Spmm { reduce: Reduce::Max, .. } => OpKind::SpmmMax,
            Op::Sddmm { .. } => OpKind::Sddmm,
            Op::EdgeSoftmax { .. } => OpKind::EdgeSoftmax,
            Op::Sampled { .. } => OpKind::SampledSpmm,
            Op::Maxk { .. } => OpKind::Maxk,
            Op::MaxkDense { .. } => OpKind::MaxkDense,
            Op::Maxpool { .. } => OpKind::Maxpool,
            Op::CbsrSpgemm { .. } => OpKind::CbsrSpgemm,
        }
    }
}

/// The operations of the suite as the generated tests divide them: SpMM by reduction, every
/// other operation whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// SpMM sum, unweighted and weighted (one or more heads).
    SpmmSum,
    /// SpMM mean.
    SpmmMean,
    /// SpMM max (and its argmax backward).
    SpmmMax,
    /// SDDMM.
    Sddmm,
    /// Edge softmax.
    EdgeSoftmax,
    /// ES-SpMM (every sampling mode and reduction).
    SampledSpmm,
    /// MaxK values and indices.
    Maxk,
    /// MaxK then dense (scatter / gather).
    MaxkDense,
    /// k-max-pooling values and indices.
    Maxpool,
    /// MaxK then CBSR SpGEMM (gradients through SSpMM).
    CbsrSpgemm,
}

impl OpKind {
    /// Every kind.
    pub const ALL: [OpKind; 10] = [
        OpKind::SpmmSum,
        OpKind::SpmmMean,
        OpKind::SpmmMax,
        OpKind::Sddmm,
        OpKind::EdgeSoftmax,
        OpKind::SampledSpmm,
        OpKind::Maxk,
        OpKind::MaxkDense,
        OpKind::Maxpool,
        OpKind::CbsrSpgemm,
    ];

    /// The name of the kind's generated tests (`spmm_sum`, `sddmm`, ...).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::SpmmSum => "spmm_sum",
            OpKind::SpmmMean => "spmm_mean",
            OpKind::SpmmMax => "spmm_max",
            OpKind::Sddmm => "sddmm",
            OpKind::EdgeSoftmax => "edge_softmax",
            OpKind::SampledSpmm => "sampled_spmm",
            OpKind::Maxk => "maxk",
            OpKind::MaxkDense => "maxk_dense",
            OpKind::Maxpool => "maxpool",
            OpKind::CbsrSpgemm => "cbsr_spgemm",
        }
    }

    /// The kind named `name` (see [`OpKind::name`]).
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }
}
