//! Full-graph training over several processes (`train --world N --rank R --rendezvous ADDR`,
//! or `train --processes N`, which starts the N ranks on this host): each process trains one
//! part of the partitioned graph on its device, the exact model of
//! `gnn_models::partitioned::processes`, with the halo rows and the gradients moving between
//! the processes through NCCL (GPU to GPU) or over TCP (`burn_sparse_gnn::collective`). Rank 0
//! shows the progress and writes the run folder.

use crate::error::{AppError, Result};
use crate::partitioned::checkpoints::RunKeeper;
use crate::partitioned::run::{finish, train_epochs, Epoch, Measured, Start};
use crate::partitioned::{
    adam, exchanged_bytes_per_epoch, load_or_partition, split_weights, PartitionReport, PartitionedEpoch,
    PartitionedReport, Spread,
};
use crate::training::{HostGraph, TrainConfig};
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};
use burn_sparse_gnn::collective::{Comm, CommStats, RowTransport, RowTransportChoice, TcpComm, TcpCommConfig};
use burn_sparse_gnn::partition::{GraphFingerprint, PartitionMethod, PartitionedGraph};
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use gnn_models::GnnModel;
use gnn_models::{broadcast_model, rank_loss, sum_gradients, HaloLayout, RankGraph, RankInput, StepSeeds};
use gnn_train::LossScaler;
use std::path::Path;
use std::time::{Duration, Instant};

/// One process of a multi-process run.
#[derive(Clone, Debug, PartialEq)]
pub struct RankRun {
    /// This process's rank, `0..world`.
    pub rank: usize,
    /// Number of processes (= parts).
    pub world: usize,
    /// Rank 0's address, `host:port` (rank 0 listens there).
    pub rendezvous: String,
    /// Partitioner (every rank computes or reads the same partition).
    pub method: PartitionMethod,
    /// How long the ranks wait for each other at the start.
    pub connect_timeout: Duration,
    /// What moves the halo rows (every rank must ask for the same).
    pub transport: RowTransportChoice,
}

impl RankRun {
    /// Checks the numbers: a rank below the world size, an address with a port.
    pub fn check(&self) -> Result<()> {
        if self.world == 0 || self.rank >= self.world {
            return Err(AppError::Config(format!("--rank {} --world {}: ranks are 0..world", self.rank, self.world)));
        }
        if self.rendezvous.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).is_none() {
            return Err(AppError::Config(format!("--rendezvous {}: expected HOST:PORT", self.rendezvous)));
        }
        Ok(())
    }
}

fn comm_err(e: impl std::fmt::Display) -> AppError {
    AppError::Ranks(e.to_string())
}

/// FNV-1a of `bytes` (a digest every build computes alike).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What the ranks must agree on, as one number: the training configuration (less the run
/// folder, which may differ), the graph and the partitioning.
fn config_tag(cfg: &TrainConfig, fp: &GraphFingerprint, run: &RankRun) -> u64 {
    let mut v = serde_json::to_value(cfg).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        // where the run and its dataset lie may differ between hosts; the fingerprint names
        // the graph
        o.remove("out");
        o.remove("dataset");
    }
    let text =
        format!("{v}|{}|{}|{}|{}|{}|{:?}", fp.n_nodes, fp.nnz, fp.hash, run.world, run.method.as_str(), run.transport);
    fnv1a(text.as_bytes())
}

/// Trains `cfg` as rank `run.rank` of `run.world` processes on `device`; returns the report on
/// rank 0 (which writes `cfg.out`, checkpoints included, as a partitioned run does) and `None`
/// on the others. The partition is read from `cache` when it holds this graph's (rank 0 writes
/// it first). `resume`: rank 0 picks the checkpoint of `cfg.out` to continue from (the latest
/// complete one at or before that epoch) and every rank reads it from its own `cfg.out`, which
/// must therefore be one folder for ranks on several hosts.
pub fn train<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    host: &HostGraph,
    run: &RankRun,
    cache: &Path,
    device: &B::Device,
    backend: &str,
    resume: Option<usize>,
) -> Result<Option<PartitionedReport>> {
    run.check()?;
    let leader = run.rank == 0;
    let adj = host.data.adjacency();
    let fp = GraphFingerprint::of(adj);
    let mut tcp = TcpCommConfig::new(run.rank, run.world, run.rendezvous.clone());
    tcp.tag = config_tag(cfg, &fp, run);
    tcp.connect_timeout = run.connect_timeout;
    if leader {
        eprintln!("rank 0 of {}: waiting for the other ranks at {}", run.world, run.rendezvous);
    }
    let comm = Comm::new(TcpComm::connect(&tcp).map_err(comm_err)?);
    let transport = comm.setup_rows(B::nccl_device(device), run.transport).map_err(comm_err)?;
    if leader {
        let how = match transport {
            RowTransport::Nccl => "NCCL, GPU to GPU",
            RowTransport::Host => "the host (TCP through rank 0)",
        };
        eprintln!("halo rows move through {how}");
    }
    if leader {
        crate::fsutil::make_out_dir(&cfg.out)?;
    }

    // the partition: rank 0 computes (or reads) it and writes the cache, then the others read it
    let start = Instant::now();
    let spread = Spread {
        devices: vec![0],
        parts: run.world,
        method: run.method,
        boundary_sampling: None,
        layout: None,
        links: Default::default(),
    };
    let first = match leader {
        true => {
            if let Some(dir) = cache.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| AppError::io(dir, e))?;
            }
            Some(load_or_partition(adj, &spread, Some(cache))?)
        }
        false => None,
    };
    comm.barrier().map_err(comm_err)?;
    let (part, cached) = match first {
        Some(p) => p,
        // a rank whose cache rank 0 did not write (another host) computes the same partition
        None => load_or_partition(adj, &spread, Some(cache).filter(|c| c.exists()))?,
    };
    let pg = PartitionedGraph::build(adj, &part).map_err(|e| AppError::Config(format!("partition: {e}")))?;
    // the same partition on every rank (a cache that is not shared is computed anew)
    let digest = fnv1a(&part.assignment.iter().flat_map(|p| p.to_le_bytes()).collect::<Vec<u8>>());
    let first = comm.broadcast(digest.to_le_bytes().to_vec()).map_err(comm_err)?;
    let differs = first != digest.to_le_bytes();
    let disagree = comm.all_reduce_sum(&[f64::from(u8::from(differs))]).map_err(comm_err)?[0];
    if disagree > 0.0 {
        return Err(AppError::Ranks(format!(
            "{disagree} rank(s) computed another partition than rank 0: give every rank the same --partition-cache \
             file"
        )));
    }
    let partition_seconds = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let rg = RankGraph::<B>::new(adj, &pg, comm.clone(), device, host.opts).map_err(comm_err)?;
    let owned = rg.owned_ids().len();
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    let x = Tensor::<B, 2>::from_data(
        TensorData::new(rg.own_rows(&host.x, host.d_in), [owned, host.d_in]).convert_dtype(dtype),
        (device, dtype),
    );
    let labels: Vec<i64> = host.data.labels().iter().map(|&l| l.max(0)).collect();
    let own_labels = rg.own_rows(&labels, 1);
    let y = Tensor::<B, 1, Int>::from_data(TensorData::new(own_labels.clone(), [owned]), device);
    // the split weights (`1 / |split|` on the split's nodes) of the rank's rows
    let weights = split_weights(host)?.map(|w| rg.own_rows(&w, 1));
    let w_train =
        Tensor::<B, 1>::from_data(TensorData::new(weights[0].clone(), [owned]).convert_dtype(dtype), (device, dtype));
    let w_valid = Tensor::<B::InnerBackend, 1>::from_data(
        TensorData::new(weights[1].clone(), [owned]).convert_dtype(dtype),
        (device, dtype),
    );
    let y_eval = y.clone().inner();
    // per split, the rank's rows on it
    let eval_rows = weights.each_ref().map(|w| (0..owned).filter(|&i| w[i] > 0.0).collect::<Vec<usize>>());
    let split = host.data.split().ok_or_else(|| AppError::Config("a split is needed to train".into()))?;
    let split_sizes = [split.train.len(), split.valid.len(), split.test.len()];

    let model_cfg = cfg.model_config(host.d_in, host.data.num_classes())?;
    B::seed(device, cfg.seed);
    let model = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    model.initialise_parameters();
    let mut model = broadcast_model(model, &comm, device).map_err(comm_err)?;
    let mut optim = adam(cfg).init();
    let mut keeper = RunKeeper::new(cfg, leader);
    let mut epochs = Vec::new();
    if let Some(requested) = resume {
        let r = resume_ranks(&mut keeper, requested, model, optim, &comm, device)?;
        crate::training::checkpoints::check_epochs_left(r.epoch, cfg.epochs)?;
        (model, optim, epochs) = (r.model, r.optim, r.epochs);
    }
    let resumed_from = resume.and(epochs.last().map(|e: &PartitionedEpoch| e.epoch));
    // the input rows, with their halo rows (exchanged here, once) where the model reads them
    let x = model.rank_input(&rg, x).map_err(comm_err)?;
    // every rank holds the whole partition: its halo rows are every rank's
    let stats = pg.stats();
    let exchanged =
        exchanged_bytes_per_epoch(cfg, &model, host.d_in, stats.halo_total, HaloLayout::Joined, x.has_halo());
    let report = PartitionReport {
        parts: run.world,
        devices: run.world,
        method: format!("{:?}", run.method).to_lowercase(),
        stats,
        exchanged_bytes_per_epoch: exchanged,
        partition_seconds,
        setup_seconds: start.elapsed().as_secs_f64(),
        cached,
        boundary_sampling: None,
        halo_layout: "joined".into(),
        processes: Some(run.world),
        transport: Some(transport),
    };
    let exchanged_mb = exchanged as f64 / 1e6;
    if leader {
        let st = &report.stats;
        eprintln!(
            "partition: {} parts ({}) on {} processes: cut edges {} ({:.1} %), halo rows {}, {exchanged_mb:.1} MB \
             exchanged per epoch{}",
            st.parts,
            run.method.as_str(),
            run.world,
            st.cut_edges,
            100.0 * st.cut_fraction,
            st.halo_total,
            if cached { " (cached partition)" } else { "" }
        );
        crate::training::report::write_json(&cfg.out.join("config.json"), cfg)?;
    }
    // the part and its rows without autodiff, for the evaluation after every step
    let (rg_eval, x_eval) = (rg.inner(), x.inner());
    let mut run = RankEpoch {
        cfg,
        comm: &comm,
        device,
        rg: &rg,
        x: &x,
        y,
        w_train,
        rg_eval,
        x_eval,
        y_eval,
        w_valid,
        own_labels,
        eval_rows,
        split_sizes,
        scaler: cfg.loss_scale.config(cfg.precision).map(LossScaler::new),
    };
    comm.take_stats();
    let start = Start { epochs, resumed_from, exchanged_mb, shows: leader };
    let (model, _, epochs, train_seconds) = train_epochs(cfg, &mut run, model, optim, &mut keeper, start)?;
    // every rank holds the same parameters; rank 0 writes them
    let out = match leader {
        true => {
            let loss_scale = run.scaler.as_ref().map(Into::into);
            Some(finish(
                cfg,
                &mut keeper,
                model,
                epochs,
                report,
                backend,
                (resumed_from, train_seconds, loss_scale),
                device,
            )?)
        }
        false => None,
    };
    comm.barrier().map_err(comm_err)?;
    Ok(out)
}

/// An epoch on a rank's part: the training step with rank 0's dropout seeds, the gradients
/// summed over the ranks, then the evaluation of the updated model; the loss, the valid loss
/// and the accuracies' hits are summed over the ranks in one collective.
struct RankEpoch<'a, B: SparseGnnAutodiffBackend> {
    cfg: &'a TrainConfig,
    comm: &'a Comm,
    device: &'a B::Device,
    rg: &'a RankGraph<B>,
    x: &'a RankInput<B>,
    y: Tensor<B, 1, Int>,
    w_train: Tensor<B, 1>,
    /// The part, its input rows, labels and valid weights without autodiff (evaluation).
    rg_eval: RankGraph<B::InnerBackend>,
    x_eval: RankInput<B::InnerBackend>,
    y_eval: Tensor<B::InnerBackend, 1, Int>,
    w_valid: Tensor<B::InnerBackend, 1>,
    /// The labels of the rank's rows, and per split its rows on the split.
    own_labels: Vec<i64>,
    eval_rows: [Vec<usize>; 3],
    /// The nodes of each split over the whole graph.
    split_sizes: [usize; 3],
    /// Loss scaling (mixed f16): every rank decides alike, from the same summed gradients.
    scaler: Option<LossScaler>,
}

impl<B: SparseGnnAutodiffBackend, O: Optimizer<GnnModel<B>, B>> Epoch<B, O> for RankEpoch<'_, B> {
    fn train_and_evaluate(
        &mut self,
        model: GnnModel<B>,
        optim: &mut O,
        _epoch: usize,
    ) -> Result<(GnnModel<B>, Measured)> {
        let (comm, device) = (self.comm, self.device);
        // rank 0's dropout seeds, drawn as the one-process run draws them
        let seeds = StepSeeds::draw(&model, device).broadcast(comm, device).map_err(comm_err)?;
        let logits = model.forward_rank(self.rg, self.x, &seeds).map_err(comm_err)?;
        let loss = rank_loss(self.rg, logits, self.y.clone(), self.w_train.clone()).map_err(comm_err)?;
        let grads = match &self.scaler {
            Some(scaler) => loss.clone().mul_scalar(scaler.scale()).backward(),
            None => loss.backward(),
        };
        comm.check().map_err(comm_err)?;
        let local: f64 = loss.into_scalar().elem();
        let grads = GradientsParams::from_grads(grads, &model);
        let mut grads = sum_gradients(&model, grads, comm).map_err(comm_err)?;
        if let Some(scaler) = &mut self.scaler {
            scaler.unscale::<B, GnnModel<B>>(&mut grads, &model);
        }
        let model = optim.step(self.cfg.lr, model, grads);
        // the loss and the accuracies over all ranks
        let valid_model = model.valid();
        let eval =
            valid_model.forward_rank(&self.rg_eval, &self.x_eval, &StepSeeds::none(&valid_model)).map_err(comm_err)?;
        let local_valid: f64 = rank_loss(&self.rg_eval, eval.clone(), self.y_eval.clone(), self.w_valid.clone())
            .map_err(comm_err)?
            .into_scalar()
            .elem();
        let pred: Vec<i64> = eval.argmax(1).into_data().convert::<i64>().to_vec().unwrap_or_default();
        let labels = &self.own_labels;
        let hits =
            self.eval_rows.each_ref().map(|rows| rows.iter().filter(|&&i| pred.get(i) == labels.get(i)).count() as f64);
        let sums = comm.all_reduce_sum(&[local, hits[0], hits[1], hits[2], local_valid]).map_err(comm_err)?;
        let (loss, valid_loss) = (sums[0], sums[4]);
        let accuracies = [1, 2, 3].map(|k| sums[k] / self.split_sizes[k - 1].max(1) as f64);
        Ok((model, Measured { loss, accuracies, valid_loss }))
    }

    fn exchange(&mut self) -> Option<CommStats> {
        Some(self.comm.take_stats())
    }

    fn device(&self) -> &B::Device {
        self.device
    }
}

/// The checkpoint a multi-process run resumes from: rank 0 picks it (the latest complete one at
/// or before `requested`) and tells the others, every rank reads it from its own run folder,
/// and all fail together when one cannot.
fn resume_ranks<B: SparseGnnAutodiffBackend, O: Optimizer<GnnModel<B>, B> + Clone>(
    keeper: &mut RunKeeper,
    requested: usize,
    model: GnnModel<B>,
    optim: O,
    comm: &Comm,
    device: &B::Device,
) -> Result<crate::partitioned::checkpoints::Resumed<B, O>> {
    let mine = match comm.rank() {
        0 => keeper.resume(requested, model.clone(), optim.clone(), device).map(Some),
        _ => Ok(None),
    };
    // epoch 0: rank 0 found nothing to resume from (and says why)
    let picked = mine.as_ref().ok().and_then(|r| r.as_ref().map(|r| r.epoch)).unwrap_or(0) as u64;
    let first = comm.broadcast(picked.to_le_bytes().to_vec()).map_err(comm_err)?;
    let epoch = u64::from_le_bytes(first.as_slice().try_into().map_err(|_| comm_err("a malformed resume epoch"))?);
    if epoch == 0 {
        return match mine {
            Err(e) => Err(e),
            _ => Err(AppError::Ranks("rank 0 found no checkpoint to resume from; see its message".into())),
        };
    }
    let resumed = match mine {
        Ok(Some(r)) => Ok(r),
        _ => keeper.load(epoch as usize, model, optim, device),
    };
    let failed = comm.all_reduce_sum(&[f64::from(u8::from(resumed.is_err()))]).map_err(comm_err)?[0];
    match resumed {
        Err(e) => Err(AppError::Ranks(format!(
            "rank {} cannot read the checkpoint of epoch {epoch} that rank 0 resumes from ({e}); ranks on \
             several hosts need one shared --out folder",
            comm.rank()
        ))),
        Ok(_) if failed > 0.0 => Err(AppError::Ranks(format!(
            "{failed} rank(s) could not read the checkpoint of epoch {epoch}; see their messages"
        ))),
        Ok(r) => Ok(r),
    }
}
