//! The model and its loss on the parts of a partitioned graph.

use super::{DistError, DistGraph, HaloLayout, SampledHalo};
use crate::hidden::Hidden;
use crate::model::GnnModel;
use crate::partitioned::processes::StepSeeds;
use burn::module::Module;
use burn::tensor::{Int, Tensor};
use burn_sparse_gnn::SparseGnnBackend;

impl<B: SparseGnnBackend> GnnModel<B> {
    /// The model on a partitioned graph: `xs[p]` holds part `p`'s input rows (on its device,
    /// e.g. from [`DistGraph::scatter`]); returns each part's logits. Equals
    /// [`GnnModel::forward`] on the whole graph, rows split by part (see the module docs).
    pub fn forward_partitioned(
        &self,
        dg: &DistGraph<B>,
        xs: Vec<Tensor<B, 2>>,
    ) -> Result<Vec<Tensor<B, 2>>, DistError> {
        self.forward_partitioned_sampled(dg, xs, None)
    }

    /// [`GnnModel::forward_partitioned`] with the halo rows of `halo` only (boundary sampling,
    /// see [`BoundarySampling`]; dense states: a convolution reading CBSR states exchanges
    /// every row). `None`: every row, the exact model.
    ///
    /// Errors when `dg` has the split layout and the model cannot use it
    /// ([`GnnModel::splits_halo`]).
    pub fn forward_partitioned_sampled(
        &self,
        dg: &DistGraph<B>,
        xs: Vec<Tensor<B, 2>>,
        halo: Option<&SampledHalo<B>>,
    ) -> Result<Vec<Tensor<B, 2>>, DistError> {
        // a clone of a lazily initialised parameter initialises its own copy: initialise them
        // here, so every part reads the same tensors and their gradients reach this model's
        self.initialise_parameters();
        let models: Vec<GnnModel<B>> = dg
            .parts
            .iter()
            .map(|p| if p.device == dg.leader { self.clone() } else { self.clone().to_device(&p.device) })
            .collect();
        self.forward_parts(dg, xs, halo, &models)
    }

    /// The forward pass of the parts, part `p` through `models[p]` (on its device).
    pub(super) fn forward_parts(
        &self,
        dg: &DistGraph<B>,
        xs: Vec<Tensor<B, 2>>,
        halo: Option<&SampledHalo<B>>,
        models: &[GnnModel<B>],
    ) -> Result<Vec<Tensor<B, 2>>, DistError> {
        if dg.layout == HaloLayout::Split && !self.splits_halo() {
            return Err(DistError::Layout(
                "this model needs the joined halo layout (the split layout serves GraphSAGE mean / sum layers \
                 on ReLU states)"
                    .into(),
            ));
        }
        // one seed per dropout site, drawn on the leader as the one-device model draws it and
        // moved to the other devices once per step
        let devices: Vec<B::Device> = dg.parts.iter().map(|p| p.device.clone()).collect();
        let seeds = StepSeeds::draw(self, &dg.leader).on_devices(&devices);
        let mut hs: Vec<Tensor<B, 2>> = models
            .iter()
            .zip(&dg.parts)
            .zip(xs)
            .zip(&seeds)
            .map(|(((m, part), x), s)| m.input(m.drop_input(x, s.input(), Some(&part.global_ids))))
            .collect();
        for l in 0..self.num_layers() {
            let states: Vec<Hidden<B>> = models
                .iter()
                .zip(&dg.parts)
                .zip(hs)
                .zip(&seeds)
                .map(|(((m, part), h), s)| {
                    m.activate(l, h, part.graph.kernel_config(), s.layer(l), Some(&part.global_ids))
                })
                .collect();
            if dg.layout == HaloLayout::Split {
                // a halo drawn for another partitioned graph (other parts) falls back to every row
                let sampled = halo.filter(|h| h.routes.len() == dg.parts.len());
                hs = dg.convolve_split(models, l, states, sampled)?;
                continue;
            }
            let full = match halo.and_then(|h| dg.exchange_sampled(&states, h)) {
                Some(full) => full,
                None => dg.exchange(&states),
            };
            hs = models.iter().zip(&dg.parts).zip(&full).map(|((m, part), a)| m.convolve(l, &part.graph, a)).collect();
        }
        Ok(models.iter().zip(hs).map(|(m, h)| m.output(h)).collect())
    }
}

impl<B: SparseGnnBackend> DistGraph<B> {
    /// Convolution `l` of the parts' models on the split layout: the exchange starts, every
    /// part sums over its own columns, the halo rows are taken, every part adds the sum over
    /// its halo columns and applies the layer's maps. With `sampled` (boundary sampling) only
    /// the rows that cross move, and each part's halo block is rebuilt from them.
    fn convolve_split(
        &self,
        models: &[GnnModel<B>],
        l: usize,
        states: Vec<Hidden<B>>,
        sampled: Option<&SampledHalo<B>>,
    ) -> Result<Vec<Tensor<B, 2>>, DistError> {
        let mut dense = Vec::with_capacity(states.len());
        for s in states {
            match s {
                Hidden::Dense(t) => dense.push(t),
                Hidden::Sparse(_) => return Err(DistError::Layout("the split halo layout needs dense states".into())),
            }
        }
        let devices: Vec<B::Device> = self.parts.iter().map(|p| p.device.clone()).collect();
        let send = models.first().and_then(GnnModel::split_send);
        let routes = match sampled {
            Some(h) => h.exchange_routes(),
            None => self.routes(),
        };
        let start = burn_sparse_gnn::exchange::exchange_start(dense, &devices, &routes, send)?;
        let own_sums: Vec<(Tensor<B, 2>, Option<Tensor<B, 2>>)> = models
            .iter()
            .zip(&self.parts)
            .zip(&start.own)
            .map(|((m, part), own)| m.convolve_own(&part.graph, own))
            .collect();
        let after: Vec<Tensor<B, 2>> = own_sums.iter().map(|(s, _)| s.clone()).collect();
        let mut halos = burn_sparse_gnn::exchange::exchange_finish(start.halo, &after);
        if let Some(h) = sampled {
            halos = halos.into_iter().enumerate().map(|(p, got)| got.map(|t| h.spread_part(p, t))).collect();
        }
        Ok(models
            .iter()
            .zip(&self.parts)
            .zip(start.own)
            .zip(own_sums)
            .zip(halos)
            .map(|((((m, part), own), sum), halo)| {
                m.convolve_rest(l, &part.graph, part.halo_graph.as_ref(), own, sum, halo)
            })
            .collect())
    }
}

/// Weighted cross-entropy of the parts, summed on the leader: `-sum_i w_i log p_i[y_i]` over
/// all parts' rows (`weights[p]` 0 off the split), each part's terms by
/// [`burn_sparse_gnn::loss::cross_entropy_rows`] with its graph's kernel configuration. Equals
/// the one-device loss of the same weights up to the order of the sum.
///
/// Panics when a part's logits, labels and weights differ in rows (they come from
/// [`DistGraph::scatter`] and the partitioned forward pass, which keep the parts' rows).
pub fn partitioned_loss<B: SparseGnnBackend>(
    dg: &DistGraph<B>,
    logits: &[Tensor<B, 2>],
    labels: &[Tensor<B, 1, Int>],
    weights: &[Tensor<B, 1>],
) -> Tensor<B, 1> {
    let terms: Vec<Tensor<B, 1>> = logits
        .iter()
        .zip(labels)
        .zip(weights)
        .zip(dg.parts())
        .map(|(((z, y), w), part)| {
            // the same bits every run (not Burn's whole-tensor sum: see `sum_terms`)
            burn_sparse_gnn::loss::sum_terms(
                burn_sparse_gnn::loss::cross_entropy_rows(z.clone(), y.clone(), w.clone(), part.graph.kernel_config())
                    .expect("a part's logits, labels and weights have the part's rows"),
            )
            .to_device(dg.leader())
        })
        .collect();
    Tensor::cat(terms, 0).sum_dim(0)
}
