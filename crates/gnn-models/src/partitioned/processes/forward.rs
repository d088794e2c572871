//! The model and its loss on a rank's part: input rows, dropout seeds, forward pass.

use super::{RankGraph, RankInput, StepSeeds};
use crate::hidden::Hidden;
use crate::model::GnnModel;
use crate::partitioned::devices::DistError;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::collective::{rank_exchange, rank_exchange_cbsr, Comm};
use burn_sparse_gnn::{DropoutSeed, SparseGnnBackend};

impl<B: Backend> RankInput<B> {
    /// The rows: own, then halo rows where [`RankInput::has_halo`].
    pub fn rows(&self) -> &Tensor<B, 2> {
        &self.rows
    }

    /// Whether the halo rows are held (exchanged once).
    pub fn has_halo(&self) -> bool {
        self.with_halo
    }
}

impl<B: AutodiffBackend> RankInput<B> {
    /// The same rows without autodiff (evaluation).
    pub fn inner(&self) -> RankInput<B::InnerBackend> {
        RankInput { rows: self.rows.clone().inner(), with_halo: self.with_halo }
    }
}

impl<B: SparseGnnBackend> StepSeeds<B> {
    /// The seeds `model` draws for one step on `device` (none without autodiff: evaluation).
    pub fn draw(model: &GnnModel<B>, device: &B::Device) -> Self {
        let input = model.input_dropout_seed(device);
        let layers = (0..model.num_layers()).map(|l| model.dropout_seed(l, device)).collect();
        Self { input, layers }
    }

    /// No dropout (evaluation).
    pub fn none(model: &GnnModel<B>) -> Self {
        Self { input: None, layers: vec![None; model.num_layers()] }
    }

    /// The input dropout's seed.
    pub fn input(&self) -> Option<&DropoutSeed<B>> {
        self.input.as_ref()
    }

    /// Convolution `l`'s seed (`None` past the last convolution).
    pub fn layer(&self, l: usize) -> Option<&DropoutSeed<B>> {
        self.layers.get(l).and_then(Option::as_ref)
    }

    /// These seeds on each of `devices` (in order): on the device that drew them the seeds
    /// themselves, elsewhere all of them moved in one transfer per device. On CUDA every
    /// transfer between two GPUs orders both GPUs' streams, so one transfer per step, not one
    /// per dropout site, keeps the devices from waiting for each other at every layer.
    pub fn on_devices(&self, devices: &[B::Device]) -> Vec<Self> {
        let sites: Vec<&DropoutSeed<B>> = std::iter::once(&self.input).chain(&self.layers).flatten().collect();
        let Some(home) = sites.first().map(|s| s.tensor().device()) else {
            return vec![self.clone(); devices.len()];
        };
        let joined = Tensor::cat(sites.iter().map(|s| s.tensor().clone()).collect(), 0);
        devices
            .iter()
            .map(|device| {
                if *device == home {
                    return self.clone();
                }
                let moved = joined.clone().to_device(device);
                let mut at = 0;
                let mut take = |site: &Option<DropoutSeed<B>>| {
                    site.as_ref().map(|_| {
                        at += 2;
                        DropoutSeed::from_tensor(moved.clone().slice(at - 2..at)).expect("two floats per seed")
                    })
                };
                let input = take(&self.input);
                Self { input, layers: self.layers.iter().map(&mut take).collect() }
            })
            .collect()
    }

    /// Rank 0's seeds on every rank (each seed's exact bits; 17 bytes per f32 dropout site).
    pub fn broadcast(self, comm: &Comm, device: &B::Device) -> Result<Self, DistError> {
        let sites: Vec<&Option<DropoutSeed<B>>> = std::iter::once(&self.input).chain(&self.layers).collect();
        let mut bytes = Vec::new();
        if comm.rank() == 0 {
            for s in &sites {
                match s {
                    Some(seed) => {
                        let data = seed.tensor().to_data();
                        bytes.push(1 + data.dtype.size() as u8);
                        bytes.extend_from_slice(data.as_bytes());
                    }
                    None => bytes.push(0),
                }
            }
        }
        let bytes = comm.broadcast(bytes).map_err(DistError::Comm)?;
        let dtype = sites
            .iter()
            .find_map(|s| s.as_ref().map(|seed| seed.tensor().dtype()))
            .unwrap_or_else(<B::FloatElem as burn::tensor::Element>::dtype);
        let bad = || DistError::Ranks("rank 0 sent dropout seeds of another model".into());
        let mut at = 0;
        let mut out = Vec::with_capacity(sites.len());
        for _ in 0..sites.len() {
            let tag = *bytes.get(at).ok_or_else(bad)? as usize;
            at += 1;
            if tag == 0 {
                out.push(None);
                continue;
            }
            let size = tag - 1;
            let raw = bytes.get(at..at + 2 * size).ok_or_else(bad)?.to_vec();
            at += 2 * size;
            let dtype = match size == dtype.size() {
                true => dtype,
                false => return Err(bad()),
            };
            let t = Tensor::<B, 1>::from_data(TensorData::from_bytes_vec(raw, [2], dtype), (device, dtype));
            out.push(Some(DropoutSeed::from_tensor(t)?));
        }
        if at != bytes.len() {
            return Err(bad());
        }
        let mut out = out.into_iter();
        Ok(Self { input: out.next().flatten(), layers: out.collect() })
    }
}

impl<B: SparseGnnBackend> GnnModel<B> {
    /// This rank's input for [`GnnModel::forward_rank`] from its own rows `x`
    /// ([`RankGraph::own_rows`]): for a model whose first convolution reads the features
    /// directly, the halo rows are exchanged here, once (a collective: every rank calls it).
    /// Errors when `x` is not the rank's rows or the exchange fails.
    pub fn rank_input(&self, rg: &RankGraph<B>, x: Tensor<B, 2>) -> Result<RankInput<B>, DistError> {
        if !self.reads_input(0) {
            if x.dims()[0] != rg.owned_host.len() {
                return Err(DistError::Ranks(format!(
                    "an input of {} rows for this rank's {}",
                    x.dims()[0],
                    rg.owned_host.len()
                )));
            }
            return Ok(RankInput { rows: x, with_halo: false });
        }
        let rows = rank_exchange(x, &rg.routes).map_err(DistError::Comm)?;
        Ok(RankInput { rows, with_halo: true })
    }

    /// The model on this rank's part with the dropout seeds `seeds` ([`StepSeeds::draw`] on
    /// rank 0, broadcast): `x` holds the rank's input rows ([`GnnModel::rank_input`]); returns
    /// its logits. Every rank calls it together (the exchanges are collectives). Errors when
    /// the seeds are of another model, the input is not this rank's for this model, or an
    /// exchange fails.
    pub fn forward_rank(
        &self,
        rg: &RankGraph<B>,
        x: &RankInput<B>,
        seeds: &StepSeeds<B>,
    ) -> Result<Tensor<B, 2>, DistError> {
        if seeds.layers.len() != self.num_layers() {
            return Err(DistError::Ranks(format!(
                "dropout seeds of {} convolutions for a model of {}",
                seeds.layers.len(),
                self.num_layers()
            )));
        }
        let (rows, owned) = (x.rows.dims()[0], rg.owned_host.len());
        let want = if x.with_halo { owned + rg.halo_rows() } else { owned };
        if rows != want || x.with_halo != self.reads_input(0) {
            return Err(DistError::Ranks(format!(
                "an input of {rows} rows{} for this rank's {want}: make it with GnnModel::rank_input",
                if x.with_halo { " with halo rows" } else { "" }
            )));
        }
        // the classic stack's first convolution reads the input rows held with their halo
        let ids = if x.with_halo { &rg.full_ids } else { &rg.global_ids };
        let mut h = self.input(self.drop_input(x.rows.clone(), seeds.input.as_ref(), Some(ids)));
        for (l, seed) in seeds.layers.iter().enumerate() {
            let full = match self.activate(l, h, rg.graph.kernel_config(), seed.as_ref(), Some(&rg.global_ids)) {
                Hidden::Dense(a) if l == 0 && x.with_halo => Hidden::Dense(a),
                Hidden::Dense(a) => Hidden::Dense(rank_exchange(a, &rg.routes).map_err(DistError::Comm)?),
                // CBSR rows (MaxK, max-pool): their values and column ids
                Hidden::Sparse(c) => Hidden::Sparse(rank_exchange_cbsr(&c, &rg.routes).map_err(DistError::Comm)?),
            };
            h = self.convolve(l, &rg.graph, &full);
        }
        Ok(self.output(h))
    }
}

/// The weighted cross-entropy of this rank's rows, `-sum_i w_i log p_i[y_i]` (`weights` 0 off
/// the split): the rank's share of the one-process loss (the ranks' shares add up to it).
pub fn rank_loss<B: SparseGnnBackend>(
    rg: &RankGraph<B>,
    logits: Tensor<B, 2>,
    labels: Tensor<B, 1, Int>,
    weights: Tensor<B, 1>,
) -> Result<Tensor<B, 1>, DistError> {
    let terms = burn_sparse_gnn::loss::cross_entropy_rows(logits, labels, weights, rg.graph.kernel_config())?;
    // the same bits every run (not Burn's whole-tensor sum: see `sum_terms`)
    Ok(burn_sparse_gnn::loss::sum_terms(terms))
}
