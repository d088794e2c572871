//! `train`: the options from flags, a config file or the resumed run; the run on a backend.

use crate::cli::TrainArgs;
use burn_sparse_gnn::collective::RowTransportChoice;
use burn_sparse_gnn::{BuildOptions, SparseGnnAutodiffBackend};
use clap::parser::ValueSource;
use clap::ArgMatches;
use train_app::backend::{dispatch, Job};
use train_app::datasets;
use train_app::error::{AppError, Result};
use train_app::training::config::{config_keys, name_of};
use train_app::training::{ModelSelection, TrainConfig};

use super::memory::{estimate, parse_bytes};

/// The config keys given on the command line (not defaults).
fn given_keys(matches: Option<&ArgMatches>) -> Vec<String> {
    let Some(m) = matches else { return Vec::new() };
    config_keys()
        .into_iter()
        .filter(|k| m.try_contains_id(k).unwrap_or(false) && m.value_source(k) == Some(ValueSource::CommandLine))
        .collect()
}

/// The run's configuration: defaults, a `--config` file, or the resumed run's `config.json`,
/// with the flags given on the command line.
pub fn config(a: &TrainArgs, matches: Option<&ArgMatches>) -> Result<TrainConfig> {
    let mut cfg = merged_config(a, matches)?;
    cfg.dataset = absolute_dataset(&cfg.dataset);
    Ok(cfg)
}

/// A dataset path made absolute where it names something that exists (so `eval`, `predict` and
/// `--resume` find it from any directory); the built-in `sbm` and missing paths as given.
fn absolute_dataset(spec: &str) -> String {
    let path = std::path::Path::new(spec);
    if spec == "sbm" || path.is_absolute() {
        return spec.to_string();
    }
    std::fs::canonicalize(path).ok().and_then(|p| p.to_str().map(str::to_string)).unwrap_or_else(|| spec.to_string())
}

fn merged_config(a: &TrainArgs, matches: Option<&ArgMatches>) -> Result<TrainConfig> {
    let given = given_keys(matches);
    // a dataset given as a relative path means the same folder as the absolute path stored
    let mut flags = a.cfg.clone();
    flags.dataset = absolute_dataset(&flags.dataset);
    let file = match &a.config {
        Some(p) => {
            let v = TrainConfig::file_value(p)?;
            // unknown or mistyped keys are reported against the file
            serde_json::from_value::<TrainConfig>(v.clone())
                .map_err(|e| AppError::Format { path: p.clone(), msg: e.to_string() })?;
            Some(v)
        }
        None => None,
    };
    match a.resume {
        Some(_) => {
            let run = a.cfg.out.join("config.json");
            if !run.exists() {
                return Err(AppError::Missing {
                    path: run,
                    what: "the configuration of the run to resume (--out names a folder written by train)".into(),
                });
            }
            let base = TrainConfig::file_value(&run)?;
            let mut cfg = TrainConfig::merged(&flags, &given, Some(base), file, Some(&run))?;
            cfg.out = a.cfg.out.clone();
            Ok(cfg)
        }
        None => TrainConfig::merged(&flags, &given, file, None, None),
    }
}

pub struct TrainJob {
    pub cfg: TrainConfig,
    pub resume: Option<usize>,
    pub spread: Option<train_app::partitioned::Spread>,
    pub memory_budget: Option<u64>,
    pub dry_run: bool,
    pub partition_cache: Option<std::path::PathBuf>,
    /// One process of a multi-process run, and the index of its device (`None`: the default).
    pub rank: Option<(train_app::partitioned::processes::RankRun, Option<usize>)>,
    /// One fold of a `--fold-jobs` run, whose parent process holds the run folder.
    pub fold_worker: bool,
}

impl Job for TrainJob {
    type Output = ();
    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<()> {
        // the run folder is this run's before anything is read or written: a folder of other
        // files, or one another run is writing, is refused at once (rank 0 writes for all ranks)
        let writes = !self.dry_run && !self.fold_worker && self.rank.as_ref().is_none_or(|(run, _)| run.rank == 0);
        let folder = match writes {
            true => Some(train_app::fsutil::claim_run_folder(&self.cfg.out, self.resume.is_some())?),
            false => None,
        };
        let new_run = |folder: &Option<train_app::fsutil::RunFolder>| match (folder, self.resume) {
            (Some(f), None) => f.start_new_run(),
            _ => Ok(()),
        };
        if self.cfg.task == train_app::training::Task::Graph {
            let partitioned = self.spread.is_some() || self.rank.is_some();
            let how = super::graph::GraphRun {
                resume: self.resume,
                dry_run: self.dry_run,
                partitioned,
                fold_worker: self.fold_worker,
            };
            return super::graph::run::<B>(&self.cfg, how, device, backend, folder);
        }
        let data = datasets::load(&self.cfg.dataset, BuildOptions::default())?;
        let stats = data.stats();
        eprintln!(
            "dataset {}: {} nodes, {} edges, {} features, {} classes",
            stats.name, stats.nodes, stats.edges, stats.features, stats.classes
        );
        if self.cfg.task == train_app::training::Task::Link {
            let job = super::link::LinkJob {
                cfg: &self.cfg,
                resume: self.resume,
                dry_run: self.dry_run,
                spread: self.spread.as_ref(),
                processes: self.rank.is_some(),
                partition_cache: self.partition_cache.clone(),
            };
            return super::link::run::<B>(job, data, device, backend, folder);
        }
        let host = train_app::training::prepare(&self.cfg, data)?;
        let minibatch = self.cfg.training == train_app::training::Training::Minibatch;
        if minibatch && (self.spread.is_some() || self.rank.is_some()) {
            return Err(AppError::Config(
                "--training minibatch trains on one device: leave out the options that spread a run over parts or \
                 processes"
                    .into(),
            ));
        }
        if let Some(spread) = &self.spread {
            train_app::partitioned::check_device_indices::<B>(&device, &spread.devices, backend)?;
        }
        if let Some((run, index)) = &self.rank {
            if let Some(i) = index {
                train_app::partitioned::check_device_indices::<B>(&device, &[*i], backend)?;
            }
            let device = match index {
                Some(i) => train_app::partitioned::devices_of::<B>(&device, &[*i]).remove(0),
                None => device,
            };
            let cache = self
                .partition_cache
                .clone()
                .unwrap_or_else(|| self.cfg.out.join(format!("partition-{}-{}.part", run.world, run.method.as_str())));
            let rank = run.rank;
            // rank 0 writes the run folder: a new run replaces the one there
            new_run(&folder)?;
            let resume = self.resume;
            let report = train_app::out_of_memory::catch_out_of_memory(|| {
                train_app::partitioned::processes::train::<B>(&self.cfg, &host, run, &cache, &device, backend, resume)
            })
            .map_err(|m| AppError::Ranks(format!("rank {rank} ran out of device memory: {m}")))??;
            if let Some(report) = report {
                print_summary(&self.cfg, &host.data.name, &format!("{backend}, {} processes", run.world), &report);
            }
            return Ok(());
        }
        let cache = self.partition_cache.clone().unwrap_or_else(|| match &self.spread {
            Some(sp) => self.cfg.out.join(format!("partition-{}-{}.part", sp.parts, sp.method.as_str())),
            None => self.cfg.out.join("partition.part"),
        });
        // the partition, for the estimate and then the run
        let known = match &self.spread {
            Some(spread) => {
                if let Some(dir) = cache.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| AppError::io(dir, e))?;
                }
                Some(train_app::partitioned::known_partition(host.data.adjacency(), spread, Some(&cache))?)
            }
            None => None,
        };
        let est = estimate(&self.cfg, &host, known.as_ref().map(|k| &k.graph).zip(self.spread.as_ref()))?;
        let capacity = B::device_capacity(&device);
        let (budget, budget_name) = match (self.memory_budget, capacity) {
            (Some(b), _) => (Some(b), "--memory-budget".to_string()),
            (None, Some((free, _))) => (Some(free), format!("the device's free memory ({backend})")),
            (None, None) => (None, String::new()),
        };
        let per = if known.is_some() { " on the device that needs the most" } else { "" };
        eprintln!(
            "device memory estimate{per}: {est}{}",
            budget.map(|b| format!("; {budget_name}: {:.2} GiB", b as f64 / (1u64 << 30) as f64)).unwrap_or_default()
        );
        let mut advice = Vec::new();
        if minibatch {
            if self.cfg.features_on == train_app::training::FeatureHome::Device {
                advice.push("--features-on host (features in host memory)".to_string());
            }
            advice.push(format!("a smaller --batch-size (now {})", self.cfg.seed_batch()));
        } else if backend == "cuda" {
            advice.push("--training minibatch (sampled batches)".to_string());
        }
        if self.cfg.precision.half().is_none() {
            advice.push("--precision mixedf16 (half-precision activations)".to_string());
        }
        if self.cfg.hidden > 16 {
            advice.push(format!("a smaller --hidden (now {})", self.cfg.hidden));
        }
        if self.cfg.layers > 1 {
            advice.push(format!("fewer --layers (now {})", self.cfg.layers));
        }
        if !minibatch {
            advice.push("more GPUs (--devices 0,1,...)".into());
        }
        let advice = format!("try {}", advice.join(", or "));
        let what =
            format!("training {} {}x{} on {}", self.cfg.model.name(), self.cfg.layers, self.cfg.hidden, host.data.name);
        if let Some(b) = budget.filter(|&b| est.total > b) {
            return Err(AppError::WillNotFit {
                what,
                estimate: est.to_string(),
                need_bytes: est.total,
                budget_bytes: b,
                budget_name,
                advice,
            });
        }
        // the device running out during training (the estimate is a model; other processes
        // share the GPU) ends in the same kind of message, not a panic
        let out_of_memory = |message: String| AppError::OutOfMemory {
            what: what.clone(),
            message,
            estimate: est.to_string(),
            need_bytes: est.total,
            budget: budget
                .map(|b| format!(" with {budget_name} {}", train_app::host_memory::gib(b)))
                .unwrap_or_default(),
            advice: advice.clone(),
            out: self.cfg.out.display().to_string(),
        };
        if self.dry_run {
            println!("{}", serde_json::to_string(&est).map_err(|e| AppError::Config(e.to_string()))?);
            return Ok(());
        }
        if self.spread.is_none() {
            // one device holds the whole graph's tensors (a mini-batch run: its features, where
            // they live on the device)
            let shape = train_app::training::buffers::RunShape {
                nodes: host.data.num_nodes(),
                edges: host.data.adjacency().nnz(),
                features: host.d_in,
                outputs: host.data.num_classes(),
                pairs: None,
            };
            let on_device = self.cfg.features_on == train_app::training::FeatureHome::Device;
            match (minibatch, on_device) {
                (false, _) => train_app::training::buffers::check_run_buffers::<B>(&self.cfg, &shape, &device)?,
                (true, true) => {
                    let (what, bytes) = train_app::training::buffers::features_tensor(&shape);
                    burn_sparse_gnn::ops::device::check_buffers::<B>(&device, &[(&what, bytes)])
                        .map_err(|e| AppError::Config(format!("{e}: use --features-on host")))?;
                }
                (true, false) => {}
            }
        }
        if backend != "cuda" && self.spread.is_none() && !minibatch {
            // activations live in host memory on the CPU and lavapipe backends: a run that
            // cannot fit is refused before the run folder changes
            self.cfg.check_size(host.data.num_nodes(), host.d_in, host.data.num_classes())?;
        }
        // the input is checked: a new run replaces the one in its folder
        new_run(&folder)?;
        if let Some(spread) = &self.spread {
            let resume = self.resume;
            let report = train_app::out_of_memory::catch_out_of_memory(|| {
                train_app::partitioned::devices::train::<B>(
                    &self.cfg, &host, spread, &cache, known, &device, backend, resume,
                )
            })
            .map_err(out_of_memory)??;
            let how = format!("{backend}, {} parts on {} device(s)", spread.parts, spread.devices.len());
            print_summary(&self.cfg, &host.data.name, &how, &report);
            return Ok(());
        }
        // the terminal dashboard in a terminal, plain epoch lines otherwise or when SGNN_PLAIN_LOG
        // is set (the command line is where the environment is read)
        let tui = std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("SGNN_PLAIN_LOG").is_none();
        let resume = self.resume;
        let report = train_app::out_of_memory::catch_out_of_memory(|| match minibatch {
            true => {
                train_app::training::minibatch::train_minibatch::<B>(&self.cfg, host, &device, backend, resume, tui)
            }
            false => train_app::training::train::<B>(&self.cfg, host, &device, backend, resume, tui),
        })
        .map_err(out_of_memory)??;
        let a = &report.final_accuracy;
        let last = report.epochs.last();
        println!(
            "{} {} on {} ({backend}, {}): {} epochs in {:.1} s{}{}; accuracy{} train {:.4} valid {:.4} test {:.4}",
            report.config.model.name(),
            report.config.nonlin,
            report.dataset.name,
            name_of(&report.config.precision),
            report.epochs.len(),
            report.train_seconds,
            how_it_ran(report.resumed_from, report.config.patience, report.epochs.len(), report.config.epochs),
            last.and_then(|e| e.device_bytes_reserved)
                .map(|b| format!(", device memory {:.2} GiB", b as f64 / (1u64 << 30) as f64))
                .unwrap_or_default(),
            match (report.config.select, report.selected_epoch) {
                (ModelSelection::BestValid, Some(e)) => format!(" of epoch {e} (best valid)"),
                _ => String::new(),
            },
            a.train,
            a.valid,
            a.test
        );
        println!("results: {}", report.config.out.join("results.json").display());
        Ok(())
    }
}

/// What a run's summary line says of how it went: resumed after a checkpoint, or stopped by
/// `--patience` after `trained` of its `epochs` epochs.
fn how_it_ran(resumed_from: Option<usize>, patience: Option<usize>, trained: usize, epochs: usize) -> String {
    match (resumed_from, patience) {
        (Some(e), _) => format!(" (resumed after epoch {e})"),
        (None, Some(p)) if trained < epochs => format!(" (stopped early: no better validation loss in {p} epochs)"),
        _ => String::new(),
    }
}

/// The last lines of a partitioned or multi-process run: what trained where (`how`), its
/// epochs, time and accuracies, and where its results are.
fn print_summary(cfg: &TrainConfig, dataset: &str, how: &str, report: &train_app::partitioned::PartitionedReport) {
    let train_app::partitioned::SplitAccuracy { train: tr, valid: va, test: te } = report.final_accuracy;
    let how_it_ran =
        how_it_ran(report.resumed_from, cfg.patience, report.epochs.last().map_or(0, |e| e.epoch), cfg.epochs);
    let selected = match (cfg.select, report.selected_epoch) {
        (ModelSelection::BestValid, Some(e)) => format!(" of epoch {e} (best valid)"),
        _ => String::new(),
    };
    println!(
        "{} {} on {dataset} ({how}): {} epochs in {:.1} s{how_it_ran}; accuracy{selected} train {tr:.4} valid {va:.4} \
         test {te:.4}",
        cfg.model.name(),
        cfg.nonlin,
        report.epochs.len(),
        report.train_seconds,
    );
    println!("results: {}", cfg.out.join("results.json").display());
}

/// `train --processes N`: starts ranks 0..N of this program with the same arguments (and
/// `--rank r --world N --rendezvous 127.0.0.1:PORT`, the r-th of --devices), waits for all.
fn launch(a: &TrainArgs, n: usize, resume: Option<usize>, matches: Option<&ArgMatches>) -> Result<()> {
    if let Some(d) = a.spread.devices.as_ref().filter(|d| d.len() != n) {
        return Err(AppError::Config(format!("--processes {n} needs {n} --devices (one per rank), got {d:?}")));
    }
    // the options, the dataset's path and the run folder are checked once, before any rank
    // starts (N ranks failing on the same input would print N interleaved errors)
    let cfg = config(a, matches)?;
    if cfg.task == train_app::training::Task::Link {
        return Err(AppError::Config(super::link::ONE_PROCESS.into()));
    }
    cfg.check()?;
    if cfg.dataset != "sbm" && !std::path::Path::new(&cfg.dataset).exists() {
        return Err(AppError::Missing {
            path: cfg.dataset.clone().into(),
            what: "dataset (a folder or file, or the built-in `sbm`)".into(),
        });
    }
    train_app::fsutil::make_out_dir(&cfg.out)?;
    if let Some(epoch) = resume {
        // a checkpoint that is not there at all (the ranks check the rest)
        let dir = train_app::training::checkpoints::checkpoint_dir(&cfg.out);
        train_app::training::checkpoints::resumable_epoch(&dir, epoch, |_| Ok(()))?;
    }
    let exe = std::env::current_exe().map_err(|e| AppError::Config(format!("cannot find this program: {e}")))?;
    // the command line is where the arguments are read
    let mut base = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--processes" || text == "--devices" {
            args.next();
        } else if !(text.starts_with("--processes=") || text.starts_with("--devices=")) {
            base.push(arg);
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| AppError::Config(format!("no free port on 127.0.0.1: {e}")))?
        .port();
    eprintln!("starting {n} processes (rendezvous 127.0.0.1:{port})");
    let mut children = Vec::with_capacity(n);
    for r in 0..n {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(&base).args(["--rank", &r.to_string(), "--world", &n.to_string()]);
        cmd.args(["--rendezvous", &format!("127.0.0.1:{port}")]);
        if let Some(d) = &a.spread.devices {
            cmd.args(["--devices", &d[r].to_string()]);
        }
        let child = cmd.spawn().map_err(|e| AppError::Config(format!("cannot start rank {r}: {e}")))?;
        children.push(child);
    }
    // wait for every rank; once one fails, stop the others (a rank waiting for a stopped peer
    // inside NCCL's set-up would wait for ever)
    let mut failed = Vec::new();
    let mut running: Vec<(usize, std::process::Child)> = children.into_iter().enumerate().collect();
    while !running.is_empty() {
        let mut still = Vec::with_capacity(running.len());
        for (r, mut c) in running {
            match c.try_wait() {
                Ok(Some(s)) if s.success() => {}
                Ok(Some(s)) => failed.push(format!("rank {r} ({s})")),
                Ok(None) => still.push((r, c)),
                Err(e) => failed.push(format!("rank {r} ({e})")),
            }
        }
        running = still;
        if !failed.is_empty() && !running.is_empty() {
            // the others get a moment to stop on their own (a closed connection)
            std::thread::sleep(std::time::Duration::from_secs(5));
            for (r, c) in &mut running {
                if matches!(c.try_wait(), Ok(None)) {
                    eprintln!("stopping rank {r}");
                    let _ = c.kill();
                }
                let _ = c.wait();
            }
            running.clear();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(AppError::Ranks(format!("{} failed; see their messages above", failed.join(", ")))),
    }
}

pub fn run(a: TrainArgs, matches: Option<&ArgMatches>) -> Result<()> {
    let resume = a.resume.map(|r| r.epoch(&a.cfg.out)).transpose()?;
    if let Some(n) = a.processes.processes {
        return launch(&a, n, resume, matches);
    }
    let cfg = config(&a, matches)?;
    if cfg.task == train_app::training::Task::Graph && cfg.fold_jobs > 1 && cfg.fold.is_none() && !a.dry_run {
        return super::folds::launch(&cfg, resume);
    }
    if a.fold_worker && (cfg.task != train_app::training::Task::Graph || cfg.fold.is_none()) {
        return Err(AppError::Config("--fold-worker trains one --fold of a graph classification run".into()));
    }
    let rank = match (a.processes.rank, a.processes.world, &a.processes.rendezvous) {
        (Some(rank), Some(world), Some(addr)) => {
            let index = match a.spread.devices.as_deref() {
                None => None,
                Some([i]) => Some(*i),
                Some(d) => {
                    return Err(AppError::Config(format!(
                        "--rank runs on one device: give --devices one index, not {d:?}"
                    )))
                }
            };
            let run = train_app::partitioned::processes::RankRun {
                rank,
                world,
                rendezvous: addr.clone(),
                method: a.spread.partition.parse().map_err(|e| AppError::Config(format!("--partition: {e}")))?,
                connect_timeout: std::time::Duration::from_secs(a.processes.rendezvous_timeout),
                transport: match a.processes.rank_transport {
                    crate::cli::RankTransportArg::Auto => RowTransportChoice::Auto,
                    crate::cli::RankTransportArg::Host => RowTransportChoice::Host,
                    crate::cli::RankTransportArg::Nccl => RowTransportChoice::Nccl,
                },
            };
            run.check()?;
            Some((run, index))
        }
        _ => None,
    };
    let spread = if rank.is_some() { None } else { a.spread.spread()? };
    let memory_budget = a.memory_budget.as_deref().map(parse_bytes).transpose()?;
    dispatch(
        a.backend,
        TrainJob {
            cfg,
            resume,
            spread,
            memory_budget,
            dry_run: a.dry_run,
            partition_cache: a.spread.partition_cache.clone(),
            rank,
            fold_worker: a.fold_worker,
        },
    )
}
