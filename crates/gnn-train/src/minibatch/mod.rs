//! Mini-batch node classification with neighbour sampling (GraphSAGE's training, PyG's
//! `NeighborLoader`, DGL's `NeighborSampler`): the training nodes shuffled into batches of seeds,
//! per batch one block per layer sampled on the device ([`NeighborSampler`],
//! [`burn_sparse_gnn::ops::neighbors`]), the layers run on the blocks
//! ([`gnn_models::GnnModel::forward_blocks`]), the next batch built while one trains
//! ([`MiniBatchLoader`]); features on the device or on the host ([`NodeFeatures`]); evaluation
//! and prediction by exact layer-wise inference ([`layerwise_logits`]).
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn_sparse_gnn::{BuildOptions, Csr, GraphOptions};
//! use gnn_models::{ConvKind, GnnModelConfig};
//! use gnn_train::minibatch::{BlockRules, MiniBatchSource, NeighborSampler, NodeFeatures};
//! use std::sync::Arc;
//! type B = Autodiff<NdArray>;
//! let dev = Default::default();
//! // a ring of 6 nodes, 3 features, 2 classes
//! let src: Vec<i64> = (0..6).collect();
//! let dst: Vec<i64> = (0..6).map(|i| (i + 1) % 6).collect();
//! let adj = Csr::from_edges(6, &src, &dst, None, BuildOptions::undirected()).unwrap();
//! let cfg = GnnModelConfig::new(ConvKind::Sage, 3, 8, 2);
//! let rules = BlockRules::for_model(&adj, &cfg, GraphOptions::default()).unwrap();
//! let sampler = NeighborSampler::<B>::new(&adj, vec![2, 2], 7, rules, &dev).unwrap();
//! let source = MiniBatchSource {
//!     sampler,
//!     features: NodeFeatures::Host { x: Arc::new(vec![0.5; 18]), width: 3 },
//!     labels: Arc::new(vec![0, 1, 0, 1, 0, 1]),
//! };
//! let batch = source.batch(&[0, 3], (1, 0)).unwrap();
//! let model = cfg.init::<B>(&dev).unwrap();
//! let logits = model.forward_blocks(&batch.blocks, batch.x).unwrap();
//! assert_eq!(logits.dims(), [2, 2]); // one row per seed
//! ```

mod blocks;
mod features;
mod infer;
mod loader;
mod model;
mod sampler;

pub use blocks::{BlockRules, HostBlock};
pub use features::NodeFeatures;
pub use infer::{layerwise_logits, LayerwisePlan};
pub use loader::MiniBatchLoader;
pub use model::{evaluate_layerwise, InferenceBatch, MiniBatchClassifier};
pub use sampler::{MiniBatch, MiniBatchSource, NeighborSampler};
