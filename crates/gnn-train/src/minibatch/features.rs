//! Node features of mini-batch training: on the device, or on the host with only each batch's
//! rows moved to the device.

use crate::error::TrainError;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use std::sync::Arc;

/// Where the node features live.
#[derive(Clone, Debug)]
pub enum NodeFeatures<B: Backend> {
    /// `[nodes, width]` on the device; a batch selects its rows there.
    Device(Tensor<B, 2>),
    /// `[nodes, width]` row-major in host memory; a batch gathers its rows on the host and
    /// uploads them (a graph whose features do not fit the device trains this way).
    Host {
        /// The features.
        x: Arc<Vec<f32>>,
        /// Row width.
        width: usize,
    },
}

impl<B: burn_sparse_gnn::SparseGnnBackend> NodeFeatures<B> {
    /// Host features `x` (`[nodes, width]` row-major) uploaded to `device`.
    pub fn upload(x: &[f32], width: usize, device: &B::Device) -> Self {
        let n = x.len() / width.max(1);
        let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
        let t = TensorData::new(x.to_vec(), [n, width]).convert_dtype(dtype);
        NodeFeatures::Device(burn_sparse_gnn::upload(t, device))
    }

    /// Row width.
    pub fn width(&self) -> usize {
        match self {
            NodeFeatures::Device(x) => x.dims()[1],
            NodeFeatures::Host { width, .. } => *width,
        }
    }

    /// The rows of the nodes `ids` (`ids_device`: the same ids on the device, where the caller
    /// has them).
    pub fn rows(
        &self,
        ids: &[u32],
        ids_device: Option<Tensor<B, 1, Int>>,
        device: &B::Device,
    ) -> Result<Tensor<B, 2>, TrainError> {
        match self {
            NodeFeatures::Device(x) => {
                let ids = match ids_device {
                    Some(t) => t,
                    None => {
                        let v: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
                        burn_sparse_gnn::upload_int(TensorData::new(v, [ids.len()]), device)
                    }
                };
                Ok(x.clone().select(0, ids))
            }
            NodeFeatures::Host { x, width } => {
                let w = *width;
                let n = x.len() / w.max(1);
                if let Some(&bad) = ids.iter().find(|&&i| i as usize >= n) {
                    return Err(TrainError::Data(format!("node {bad} has no feature row ({n} rows)")));
                }
                let mut out = vec![0f32; ids.len() * w];
                use rayon::prelude::*;
                out.par_chunks_mut(w.max(1)).zip(ids.par_iter()).for_each(|(row, &i)| {
                    row.copy_from_slice(&x[i as usize * w..(i as usize + 1) * w]);
                });
                let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
                let t = TensorData::new(out, [ids.len(), w]).convert_dtype(dtype);
                Ok(burn_sparse_gnn::upload(t, device))
            }
        }
    }
}
