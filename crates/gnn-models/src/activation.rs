//! Activations as layers: ReLU (dense), MaxK (CBSR, so the next convolution runs the CBSR
//! SpGEMM) and k-max-pooling (CBSR, 1D / 2D / channelled windows).

use crate::hidden::Hidden;
use burn::tensor::activation::relu;
use burn::tensor::Tensor;
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

    /// Applies the activation (checked with [`Nonlinearity::check`] at model construction).
    pub fn forward<B: SparseGnnBackend>(&self, x: Tensor<B, 2>) -> Hidden<B> {
        match *self {
            Nonlinearity::Relu => Hidden::Dense(relu(x)),
            Nonlinearity::Maxk { k } => Hidden::Sparse(ops::maxk(x, k)),
            Nonlinearity::Maxpool { .. } => Hidden::Sparse(ops::maxpool(x, self.pool_spec().expect("pool"))),
        }
    }
}
