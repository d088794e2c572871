//! The model's copies on the devices other than the leader for a training step: each a leaf of
//! the autodiff graph of its own, their gradients moved to the leader once, after the backward
//! pass, and added to the leader's.

use super::{DistError, DistGraph, SampledHalo};
use crate::model::GnnModel;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{FloatDType, Tensor};
use burn_sparse_gnn::SparseGnnAutodiffBackend;

/// The copies of a model that a [`GnnModel::forward_partitioned_replicas`] step ran on the
/// devices other than the leader, one per device.
pub struct DeviceReplicas<B: AutodiffBackend> {
    leader: B::Device,
    replicas: Vec<GnnModel<B>>,
}

impl<B: SparseGnnAutodiffBackend> GnnModel<B> {
    /// [`GnnModel::forward_partitioned_sampled`] for a training step: the parts on another device
    /// than the leader run a copy of the model made there once per step ([`Module::fork`]: the
    /// parameters moved and made leaves of the autodiff graph), instead of reading the leader's
    /// parameters through `to_device`. The backward pass then leaves each copy's gradients on
    /// its device, where no device waits for another's, and
    /// [`DeviceReplicas::gradients`] moves them to the leader in one transfer per device and
    /// adds them: the same gradients as [`GnnModel::forward_partitioned_sampled`]'s, summed in
    /// device order.
    pub fn forward_partitioned_replicas(
        &self,
        dg: &DistGraph<B>,
        xs: Vec<Tensor<B, 2>>,
        halo: Option<&SampledHalo<B>>,
    ) -> Result<(Vec<Tensor<B, 2>>, DeviceReplicas<B>), DistError> {
        self.initialise_parameters();
        let mut replicas: Vec<(B::Device, GnnModel<B>)> = Vec::new();
        let models: Vec<GnnModel<B>> = dg
            .parts
            .iter()
            .map(|p| {
                if p.device == dg.leader {
                    return self.clone();
                }
                if let Some((_, m)) = replicas.iter().find(|(d, _)| *d == p.device) {
                    return m.clone();
                }
                let m = self.clone().fork(&p.device);
                replicas.push((p.device.clone(), m.clone()));
                m
            })
            .collect();
        let logits = self.forward_parts(dg, xs, halo, &models)?;
        let replicas = replicas.into_iter().map(|(_, m)| m).collect();
        Ok((logits, DeviceReplicas { leader: dg.leader.clone(), replicas }))
    }
}

impl<B: SparseGnnAutodiffBackend> DeviceReplicas<B> {
    /// The gradients of `model`'s parameters (the model the step ran on) from the backward
    /// pass `grads`: the leader's own, plus each copy's, flattened on its device into one
    /// vector, moved to the leader and added parameter by parameter.
    pub fn gradients(&self, model: &GnnModel<B>, mut grads: B::Gradients) -> GradientsParams {
        let mut total = GradientsParams::from_module(&mut grads, model);
        for replica in &self.replicas {
            let theirs = GradientsParams::from_module(&mut grads, replica);
            add_moved::<B>(model, &mut total, theirs, &self.leader);
        }
        total
    }

    /// Number of copies (devices other than the leader that hold a part).
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Whether every part is on the leader.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }
}

type Inner<B> = <B as AutodiffBackend>::InnerBackend;

/// Adds `theirs` (one device's gradients) to `total` on `leader`: flattened in `model`'s
/// parameter order, moved in one transfer, added per parameter in `total`'s dtype.
fn add_moved<B: AutodiffBackend>(
    model: &GnnModel<B>,
    total: &mut GradientsParams,
    mut theirs: GradientsParams,
    leader: &B::Device,
) {
    struct Take<'a, B: AutodiffBackend> {
        theirs: &'a mut GradientsParams,
        flat: Vec<Tensor<Inner<B>, 1>>,
        sizes: Vec<Option<usize>>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Take<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            match self.theirs.remove::<Inner<B>, D>(param.id) {
                Some(g) => {
                    let n = g.shape().num_elements();
                    self.flat.push(g.cast(FloatDType::F32).reshape([n]));
                    self.sizes.push(Some(n));
                }
                None => self.sizes.push(None),
            }
        }
    }
    struct Add<'a, B: AutodiffBackend> {
        total: &'a mut GradientsParams,
        moved: Tensor<Inner<B>, 1>,
        sizes: std::vec::IntoIter<Option<usize>>,
        at: usize,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Add<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let Some(Some(n)) = self.sizes.next() else { return };
            let g: Tensor<Inner<B>, D> = self.moved.clone().slice(self.at..self.at + n).reshape(param.val().dims());
            self.at += n;
            let sum = match self.total.remove::<Inner<B>, D>(param.id) {
                Some(mine) => {
                    let dtype = FloatDType::from(mine.dtype());
                    mine + g.cast(dtype)
                }
                None => g,
            };
            self.total.register::<Inner<B>, D>(param.id, sum);
        }
    }
    let mut take = Take::<B> { theirs: &mut theirs, flat: Vec::new(), sizes: Vec::new() };
    model.visit(&mut take);
    if take.flat.is_empty() {
        return;
    }
    let moved = Tensor::cat(take.flat, 0).to_device(leader);
    model.visit(&mut Add::<B> { total, moved, sizes: take.sizes.into_iter(), at: 0 });
}
