//! # gnn-models
//!
//! Graph convolutions as Burn modules, built only from the tensor-level sparse ops of
//! `burn-sparse-gnn`, so they run unchanged on CUDA, wgpu and the CPU, with autodiff:
//! [`GcnConv`], [`SageConv`], [`GinConv`], [`GatConv`]; activations ([`Nonlinearity`]: ReLU,
//! MaxK, k-max-pooling) whose sparse outputs feed the CBSR SpGEMM; and [`GnnModel`], MaxK-GNN's
//! `lin_in -> [nonlinearity -> dropout -> conv (-> norm)] x L -> lin_out`.
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::Tensor;
//! use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
//! use gnn_models::{ConvKind, GnnModelConfig, Nonlinearity};
//!
//! type B = Autodiff<NdArray>;
//! let dev = Default::default();
//! let adj = Csr::from_edges(4, &[0, 1, 2], &[1, 2, 3], None, BuildOptions::undirected()).unwrap();
//! let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
//! let model = GnnModelConfig::new(ConvKind::Sage, 5, 16, 3)
//!     .with_nonlin(Nonlinearity::Maxk { k: 4 })
//!     .init::<B>(&dev)
//!     .unwrap();
//! let logits = model.forward(&g, Tensor::ones([4, 5], &dev));
//! assert_eq!(logits.dims(), [4, 3]);
//! ```

pub mod activation;
pub mod aggregate;
pub mod conv;
pub mod graph_model;
pub mod hidden;
pub mod linear;
pub mod memory_estimate;
pub mod model;
pub mod norm;
pub mod partitioned;
pub mod precision;

/// HalfGNN's weight of the neighbour mean in GIN's half-safe aggregation
/// `(1 + eps) x + lambda * mean` ([`GinConvConfig::half_safe_lambda`]).
pub const GIN_HALF_SAFE_LAMBDA: f64 = 0.1;

pub use activation::Nonlinearity;
pub use aggregate::{aggregate, aggregate_weighted};
pub use conv::gat::{GatConv, GatConvConfig};
pub use conv::gcn::{GcnConv, GcnConvConfig, GcnNorm};
pub use conv::gin::{GinConv, GinConvConfig};
pub use conv::sage::{SageAggr, SageConv, SageConvConfig};
pub use conv::{Conv, ConvKind, ConvOptions, ConvSpec, EstimateLayer, LayerShape, SavedBytes};
pub use graph_model::{pool_pattern, GraphModel, GraphModelConfig, Readout};
pub use hidden::Hidden;
pub use model::{GnnModel, GnnModelConfig, ModelError, NormKind};
pub use partitioned::devices::{
    partitioned_loss, BoundarySampling, DistError, DistGraph, HaloLayout, PartGraph, SampledHalo,
};
pub use partitioned::processes::{broadcast_model, rank_loss, sum_gradients, RankGraph, RankInput, StepSeeds};
pub use precision::Precision;
