//! `train --task link`: the split, the memory estimate and the run; the summary line.

use burn_sparse_gnn::{GraphData, SparseGnnAutodiffBackend};
use train_app::error::{AppError, Result};
use train_app::fsutil::RunFolder;
use train_app::training::config::name_of;
use train_app::training::link::{prepare_link, read_split, split_dir, train_link};

/// Why `--processes` is refused for link prediction.
pub const ONE_PROCESS: &str = "--task link trains in one process; --processes partitions node classification only \
                               (--devices spreads a link run's encoder over GPUs)";

/// How a link run was asked for, beyond its configuration.
pub struct LinkJob<'a> {
    pub cfg: &'a train_app::training::TrainConfig,
    pub resume: Option<usize>,
    pub dry_run: bool,
    /// `--devices` / `--parts`: the encoder on the parts of its graph.
    pub spread: Option<&'a train_app::partitioned::Spread>,
    /// `--processes` was given.
    pub processes: bool,
    /// `--partition-cache`.
    pub partition_cache: Option<std::path::PathBuf>,
}

/// Trains link prediction on one device (`folder`: the claimed run folder, `None` for
/// `--dry-run`).
pub fn run<B: SparseGnnAutodiffBackend>(
    job: LinkJob<'_>,
    data: GraphData,
    device: B::Device,
    backend: &str,
    folder: Option<RunFolder>,
) -> Result<()> {
    let cfg = job.cfg;
    if job.processes {
        return Err(AppError::Config(ONE_PROCESS.into()));
    }
    let device = leading_device::<B>(job.spread, &device, backend)?;
    let stats = data.stats();
    // a resumed run keeps the split it was trained on
    let run_split = split_dir(&cfg.out);
    let split = match job.resume.is_some() && run_split.is_dir() {
        true => {
            let opts = burn_sparse_gnn::BuildOptions { symmetrize: cfg.symmetrize, add_self_loops: false, dedup: true };
            let d = train_app::datasets::rebuild(data.clone(), opts)?;
            Some(read_split(&run_split, d.num_nodes(), d.adjacency(), cfg.seed)?)
        }
        false => None,
    };
    let mut host = prepare_link(cfg, data, split)?;
    let s = &host.split;
    eprintln!(
        "link split: {} training edges, valid {} + {} and test {} + {} pairs (positive + negative){}",
        s.train.len(),
        s.valid_pos.len(),
        s.valid_neg.len(),
        s.test_pos.len(),
        s.test_neg.len(),
        if s.undirected { ", undirected" } else { ", directed" }
    );
    if s.valid_pos.is_empty() {
        return Err(AppError::Config(
            "the link split has no validation pairs: training selects and logs by them (--link-valid > 0)".into(),
        ));
    }
    let model = cfg.model_config(host.d_in, cfg.embedding)?;
    let pattern_edges = s.train.len() * if s.undirected { 2 } else { 1 };
    let est = gnn_models::memory_estimate::estimate_training(
        &gnn_models::memory_estimate::GraphSize {
            nodes: s.num_nodes,
            edges: pattern_edges + if host.self_loops { s.num_nodes } else { 0 },
            features: host.d_in,
            hot_split: false,
            staging_slots: 0,
        },
        &model,
    );
    eprintln!("device memory estimate of the encoder: {est}");
    let shape = train_app::training::buffers::RunShape {
        nodes: s.num_nodes,
        edges: pattern_edges + if host.self_loops { s.num_nodes } else { 0 },
        features: host.d_in,
        outputs: cfg.embedding,
        pairs: Some(pattern_edges),
    };
    train_app::training::buffers::check_run_buffers::<B>(cfg, &shape, &device)?;
    if let Some(spread) = job.spread {
        let cache = job.partition_cache.clone().unwrap_or_else(|| {
            cfg.out.join(format!("partition-link-{}-{}.part", spread.parts, spread.method.as_str()))
        });
        host = spread_encoder(host, spread, cfg, Some(&cache))?;
    }
    if job.dry_run {
        println!("{}", serde_json::to_string(&est).map_err(|e| AppError::Config(e.to_string()))?);
        return Ok(());
    }
    if let (Some(f), None) = (&folder, job.resume) {
        f.start_new_run()?;
    }
    let tui = std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("SGNN_PLAIN_LOG").is_none();
    let report = train_link::<B>(cfg, host, stats, &device, backend, job.resume, tui)?;
    let link = report.link.as_ref().ok_or_else(|| AppError::Config("the run reported no link metrics".into()))?;
    println!(
        "{} {} link prediction on {} ({backend}, {}): {} epochs in {:.1} s; test auc {:.4} ap {:.4} hits@{} {:.4} \
         mrr {:.4}{}",
        cfg.model.name(),
        cfg.nonlin,
        report.dataset.name,
        name_of(&cfg.precision),
        report.epochs.len(),
        report.train_seconds,
        link.test.auc,
        link.test.ap,
        link.test.hits_k,
        link.test.hits,
        link.test.mrr,
        link.valid.map(|v| format!("; valid auc {:.4}", v.auc)).unwrap_or_default()
    );
    println!("results: {}", cfg.out.join("results.json").display());
    Ok(())
}

/// Checks a link run's `--devices` / `--parts` and returns the device that leads: the first of
/// `--devices`, where the model, the decoder, the negatives and the loss live (`device` without
/// them).
pub(crate) fn leading_device<B: SparseGnnAutodiffBackend>(
    spread: Option<&train_app::partitioned::Spread>,
    device: &B::Device,
    backend: &str,
) -> Result<B::Device> {
    let Some(spread) = spread else { return Ok(device.clone()) };
    spread.check()?;
    if spread.boundary_sampling.is_some() {
        return Err(AppError::Config(
            "--boundary-sampling applies to node classification; a link run's encoder exchanges every halo row".into(),
        ));
    }
    train_app::partitioned::check_device_indices::<B>(device, &spread.devices, backend)?;
    Ok(train_app::partitioned::devices_of::<B>(device, &spread.devices[..1]).remove(0))
}

/// `host` with its encoder on the parts of its graph: the partition of the training edges'
/// graph read from or written to `cache` (`train` names `partition-link-<parts>-<method>.part`
/// in the run folder by default; without a cache it is computed).
pub(crate) fn spread_encoder(
    host: gnn_train::link::LinkHost,
    spread: &train_app::partitioned::Spread,
    cfg: &train_app::training::TrainConfig,
    cache: Option<&std::path::Path>,
) -> Result<gnn_train::link::LinkHost> {
    let layout = spread.layout_for(cfg)?;
    let message = host.split.message_graph(host.self_loops)?;
    if let Some(dir) = cache.and_then(std::path::Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| AppError::io(dir, e))?;
    }
    let known = train_app::partitioned::known_partition(&message, spread, cache)?;
    let st = known.graph.stats();
    eprintln!(
        "encoder partition: {} parts ({}) on {} device(s), {} halo layout: cut edges {} ({:.1} %), halo rows {}{}",
        st.parts,
        spread.method.as_str(),
        spread.devices.len(),
        format!("{layout:?}").to_lowercase(),
        st.cut_edges,
        100.0 * st.cut_fraction,
        st.halo_total,
        if known.cached { " (cached partition)" } else { "" }
    );
    let parts = gnn_train::link::LinkParts { partition: known.graph, devices: spread.devices.clone(), layout };
    Ok(host.with_parts(parts)?)
}
