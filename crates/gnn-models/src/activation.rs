//! Activations as layers: ReLU (dense), MaxK (CBSR, so the next convolution runs the CBSR
//! SpGEMM) and k-max-pooling (CBSR, 1D / 2D / channelled windows).

use crate::hidden::Hidden;
use burn::nn::Dropout;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};
use burn_sparse_gnn::{ops, PoolLayout, PoolSpec, SparseGnnBackend};
use serde::{Deserialize, Serialize};

/// A nonlinearity between layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Nonlinearity {
    /// `max(x, 0)`, dense output.
    Relu,
    /// MaxK-GNN: keep the `k` largest entries of each row (CBSR output).
    Maxk {
        /// Entries kept per row.
        k: usize,
    },
    /// k-max-pooling: `windows * channels` window maxima per row (CBSR output).
    Maxpool {
        /// Number of windows.
        windows: usize,
        /// Maxima per window.
        channels: usize,
        /// 2D windows (the row viewed as a square matrix) instead of 1D.
        two_d: bool,
    },
}

impl Nonlinearity {
    /// Checks the activation against the hidden width it is applied to.
    pub fn check(&self, width: usize) -> Result<(), String> {
        match *self {
            Nonlinearity::Relu => Ok(()),
            Nonlinearity::Maxk { k } => {
                if k == 0 || k > width {
                    Err(format!("MaxK k = {k} must be in 1..={width} (the hidden width)"))
                } else {
                    Ok(())
                }
            }
            Nonlinearity::Maxpool { .. } => self.pool_spec().expect("pool").check(width),
        }
    }

    fn pool_spec(&self) -> Option<PoolSpec> {
        match *self {
            Nonlinearity::Maxpool { windows, channels, two_d } => {
                Some(PoolSpec { windows, channels, layout: if two_d { PoolLayout::TwoD } else { PoolLayout::OneD } })
            }
            _ => None,
        }
    }

    /// Short name for logs and result files (`relu`, `maxk32`, `maxpool64x1`).
    pub fn name(&self) -> String {
        match *self {
            Nonlinearity::Relu => "relu".into(),
            Nonlinearity::Maxk { k } => format!("maxk{k}"),
            Nonlinearity::Maxpool { windows, channels, two_d } => {
                format!("maxpool{}{windows}x{channels}", if two_d { "2d" } else { "" })
            }
        }
    }

    /// Applies the activation (checked with [`Nonlinearity::check`] at model construction);
    /// `kernels`: the launch configuration of the selection kernels (the graph's,
    /// [`burn_sparse_gnn::Graph::kernel_config`]).
    pub fn forward<B: SparseGnnBackend>(&self, x: Tensor<B, 2>, kernels: &burn_sparse_gnn::KernelConfig) -> Hidden<B> {
        match *self {
            Nonlinearity::Relu => Hidden::Dense(relu_rows(x)),
            Nonlinearity::Maxk { k } => Hidden::Sparse(
                ops::try_maxk_with(x, k, kernels).unwrap_or_else(|e| panic!("checked at construction: {e}")),
            ),
            Nonlinearity::Maxpool { .. } => Hidden::Sparse(ops::maxpool(x, self.pool_spec().expect("pool"))),
        }
    }
}

/// `max(x, 0)` whose backward keeps a one-byte mask of the clipped entries instead of the f32
/// input (Burn's `relu` keeps its input alive for the backward pass): the same values and
/// gradients in a quarter of the saved memory.
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// let x = Tensor::<NdArray, 1>::from_floats([-1.0, 0.0, 2.0], &Default::default());
/// assert_eq!(gnn_models::activation::relu(x).to_data().to_vec::<f32>().unwrap(), vec![0.0, 0.0, 2.0]);
/// ```
pub fn relu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    let clipped = x.clone().lower_equal_elem(0.0);
    x.mask_fill(clipped, 0.0)
}

/// `max(x, 0)` of node states in one launch on the CubeCL backends
/// ([`burn_sparse_gnn::dropout::relu_dropout`] without dropout), where [`relu`] takes two (a
/// comparison and a masked fill); its backward keeps one bit per entry. The values and gradients
/// equal [`relu`]'s.
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// let x = Tensor::<NdArray, 2>::from_floats([[-1.0, 0.0, 2.0]], &Default::default());
/// let y = gnn_models::activation::relu_rows(x);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![0.0, 0.0, 2.0]);
/// ```
pub fn relu_rows<B: SparseGnnBackend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    // a probability of 0 is always valid and no row ids are passed: nothing can fail
    burn_sparse_gnn::dropout::relu_dropout(x, true, 0.0, None, None)
        .unwrap_or_else(|e| panic!("relu without dropout: {e}"))
}

/// Burn's [`Dropout`] (the same Bernoulli draws, so the same masks for a seed) whose backward
/// keeps a one-byte mask of the dropped entries; Burn's keeps the input and an f32 mask. The
/// identity when autodiff is off or the probability is 0.
pub fn dropout<B: Backend, const D: usize>(d: &Dropout, x: Tensor<B, D>) -> Tensor<B, D> {
    if !B::ad_enabled(&x.device()) || d.prob == 0.0 {
        return x;
    }
    let keep = 1.0 - d.prob;
    let dropped = x.random_like(Distribution::Bernoulli(keep)).lower_elem(0.5);
    x.mask_fill(dropped, 0.0) * (1.0 / keep)
}
