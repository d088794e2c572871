//! Boundary-node sampling: the halo rows that cross in one training step.

use super::{BoundarySampling, DistError, DistGraph, SampledHalo};
use crate::hidden::Hidden;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{RowIndex, SparseGnnBackend};

impl<B: Backend> SampledHalo<B> {
    /// Halo rows that cross in this step, all parts together.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The routes' rows, as an exchange takes them.
    pub(super) fn exchange_routes(&self) -> Vec<Vec<(usize, &RowIndex<B>)>> {
        self.routes.iter().map(|l| l.iter().map(|(q, sel, _)| (*q, sel)).collect()).collect()
    }
}

impl<B: SparseGnnBackend> SampledHalo<B> {
    /// Part `p`'s halo block from the rows it received (`got`: its routes' kept rows in route
    /// order): each scaled by `1 / rate` and put back at its halo column, zeros elsewhere.
    pub(super) fn spread_part(&self, p: usize, got: Tensor<B, 2>) -> Tensor<B, 2> {
        let mut pieces = Vec::with_capacity(self.routes[p].len());
        let mut start = 0;
        for (_, _, spread) in &self.routes[p] {
            let rows = got.clone().slice([start..start + spread.kept()]);
            start += spread.kept();
            pieces.push(burn_sparse_gnn::spread_rows(rows * self.scale, spread));
        }
        match pieces.len() {
            1 => pieces.remove(0),
            _ => Tensor::cat(pieces, 0),
        }
    }
}

/// Whether node `id` crosses in step `step` (a splitmix64 hash against the rate).
fn crosses(seed: u64, step: u64, id: u32, rate: f64) -> bool {
    let mut z = seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(id) << 17);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64) / ((1u64 << 53) as f64) < rate
}

impl<B: SparseGnnBackend> DistGraph<B> {
    /// The halo rows that cross in training step `step` under `sampling` (see
    /// [`BoundarySampling`]). Errors when the rate is not in `(0, 1]`.
    pub fn sample_halo(&self, sampling: &BoundarySampling, step: u64) -> Result<SampledHalo<B>, DistError> {
        let rate = sampling.rate;
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(DistError::SamplingRate(rate));
        }
        let mut rows = 0;
        let mut routes = Vec::with_capacity(self.parts.len());
        for (p, part) in self.parts.iter().enumerate() {
            let mut list = Vec::new();
            for (q, other) in self.parts.iter().enumerate() {
                let Some(send) = self.host_send[q].get(p).filter(|s| q != p && !s.is_empty()) else { continue };
                let mut kept_rows = Vec::new();
                let mut positions = Vec::new();
                for (pos, &r) in send.iter().enumerate() {
                    if crosses(sampling.seed, step, self.host_owned[q][r as usize], rate) {
                        kept_rows.push(r);
                        positions.push(pos as u32);
                    }
                }
                rows += kept_rows.len();
                let err = |source| DistError::Graph { part: p, source };
                let sel = RowIndex::new(&kept_rows, other.owned, &other.device).map_err(err)?;
                let spread = burn_sparse_gnn::RowSpread::new(&positions, send.len(), &part.device).map_err(err)?;
                list.push((q, sel, spread));
            }
            routes.push(list);
        }
        Ok(SampledHalo { routes, scale: 1.0 / rate, rows })
    }

    /// The halo exchange of one step under boundary sampling: each part's state followed by its
    /// halo rows, those that cross scaled by `1 / rate`, the others zero (dense states only:
    /// `None` for CBSR states, or for a halo drawn from a graph of another number of parts).
    pub fn exchange_sampled(&self, states: &[Hidden<B>], halo: &SampledHalo<B>) -> Option<Vec<Hidden<B>>> {
        // a halo drawn for another partitioned graph (other parts) falls back to every row
        if halo.routes.len() != self.parts.len() || !states.iter().all(|s| matches!(s, Hidden::Dense(_))) {
            return None;
        }
        let devices: Vec<B::Device> = self.parts.iter().map(|p| p.device.clone()).collect();
        let dense = states.iter().map(Hidden::dense).collect();
        let moved = burn_sparse_gnn::exchange::exchange(dense, &devices, &halo.exchange_routes())
            .expect("the sampled rows were drawn from these states' send lists");
        let full = moved
            .into_iter()
            .zip(&self.parts)
            .enumerate()
            .map(|(p, (t, part))| {
                if halo.routes[p].is_empty() {
                    return Hidden::Dense(t);
                }
                let [rows, _] = t.dims();
                let own = t.clone().slice([0..part.owned]);
                Hidden::Dense(Tensor::cat(vec![own, halo.spread_part(p, t.slice([part.owned..rows]))], 0))
            })
            .collect();
        Some(full)
    }
}
