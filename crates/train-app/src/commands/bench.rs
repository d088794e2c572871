//! `bench` (kernels) and `bench-train` (training epochs): options checked, then the timings.

use crate::cli::{BenchArgs, BenchTrainArgs};
use burn_sparse_gnn::{BuildOptions, SparseGnnAutodiffBackend};
use std::collections::HashMap;
use std::sync::Arc;
use train_app::backend::{dispatch, Job};
use train_app::error::{AppError, Result};
use train_app::out_of_memory::catch_out_of_memory;
use train_app::training::{Architecture, FullGraphBatcher, Task, TrainConfig};
use train_app::{bench, datasets, gen};

fn parse_rmat(s: &str) -> Result<(usize, usize)> {
    let bad = || AppError::Config(format!("--rmat expects NODES:EDGES, got `{s}`"));
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    Ok((a.trim().replace('_', "").parse().map_err(|_| bad())?, b.trim().replace('_', "").parse().map_err(|_| bad())?))
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let (graph_name, adj) = match (&a.graph, &a.rmat) {
        (Some(dir), _) => {
            let n = datasets::npy::read_num_nodes(dir)?;
            let name = dir.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "graph".into());
            (name, datasets::npy::read_adjacency(dir, n, BuildOptions::default())?)
        }
        (None, Some(spec)) => {
            let (nodes, edges) = parse_rmat(spec)?;
            (
                format!("rmat-{nodes}-{edges}"),
                gen::rmat(&gen::RmatSpec { nodes, edges, ..gen::RmatSpec::reddit_scale() })?,
            )
        }
        (None, None) => return Err(AppError::Config("bench needs --graph DIR or --rmat NODES:EDGES".into())),
    };
    // a feature matrix of every width is held on the host and on the device, with its output
    // and a reference copy: refuse widths whose matrices cannot fit before any is allocated
    let rows = adj.n_rows().max(adj.n_cols()) as u64;
    for &w in &a.widths {
        let need = rows.saturating_mul(w as u64).saturating_mul(4 * 4);
        train_app::host_memory::check_fits(need, || format!("--widths {w}: the [{rows}, {w}] f32 feature matrices"))?;
    }
    let job = bench::Bench {
        graph_name,
        adj,
        ops: a.ops,
        widths: a.widths,
        ks: a.ks,
        samples: a.samples,
        runs: a.runs.max(1),
        warmup: a.warmup,
        out: a.out,
        options: a.kernels.graph_options()?,
        device_name: a.device_name,
        dtypes: a.dtypes,
    };
    dispatch(a.backend, job).map(|_| ())
}

struct BenchTrainJob(BenchTrainArgs);

/// The name as a serde value of a `gnn-models` option type (names listed by the parser).
fn named<T: serde::de::DeserializeOwned>(what: &str, v: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(v.to_string()))
        .map_err(|_| AppError::Config(format!("unknown {what} `{v}`")))
}

impl Job for BenchTrainJob {
    type Output = ();
    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<()> {
        let a = self.0;
        // every configuration is checked before the first one runs
        let mut configs = Vec::new();
        for m in &a.models {
            for nl in &a.nonlins {
                for p in &a.precisions {
                    let mut cfg = TrainConfig {
                        dataset: a.dataset.clone(),
                        model: named("model", m)?,
                        architecture: Architecture::LinearIo,
                        hidden: a.hidden,
                        layers: a.layers,
                        nonlin: nl.clone(),
                        precision: named("precision", p)?,
                        dropout: 0.5,
                        input_dropout: 0.0,
                        normalize_features: false,
                        atomic: a.atomic,
                        checkpoints: false,
                        ..Default::default()
                    };
                    if let Some(w) = a.group_width {
                        cfg.group_width = Some(w);
                    }
                    if a.task == Task::Graph {
                        cfg.task = Task::Graph;
                        cfg.readout = a.readout;
                    }
                    if a.task == Task::Link {
                        cfg.task = Task::Link;
                        cfg.architecture = Architecture::Classic;
                        cfg.dropout = 0.0;
                        cfg.embedding = a.embedding;
                        cfg.decoder = a.decoder;
                    }
                    cfg.check()?;
                    cfg.check_device::<B>(&device, backend)?;
                    configs.push((m, nl, p, cfg));
                }
            }
        }
        if a.task == Task::Graph {
            return bench_graph::<B>(&a, configs, &device, backend);
        }
        if a.training == train_app::training::Training::Minibatch {
            return bench_minibatch::<B>(&a, configs, &device, backend);
        }
        let start = std::time::Instant::now();
        let data = datasets::load(&a.dataset, BuildOptions::default())?;
        eprintln!(
            "loaded {}: {} nodes, {} edges in {:.1} s{}",
            data.name,
            data.num_nodes(),
            data.adjacency().nnz(),
            start.elapsed().as_secs_f64(),
            train_app::host_memory::host_resident_note()
        );
        let name = a.device_name.clone().unwrap_or_else(|| backend.to_string());
        let mut file = match &a.out {
            Some(p) => {
                Some(std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| AppError::io(p, e))?)
            }
            None => None,
        };
        let mut failed = Vec::new();
        if a.task == Task::Link {
            // --devices / --parts: the encoder on the parts of the training edges' graph
            let spread = a.spread.spread()?;
            let device = super::link::leading_device::<B>(spread.as_ref(), &device, backend)?;
            let cache = a.spread.partition_cache.clone();
            let spread_host = |h: gnn_train::link::LinkHost,
                               cfg: &train_app::training::TrainConfig|
             -> Result<gnn_train::link::LinkHost> {
                match &spread {
                    Some(spread) => super::link::spread_encoder(h, spread, cfg, cache.as_deref()),
                    None => Ok(h),
                }
            };
            let first = configs.first().map(|c| c.3.clone()).unwrap_or_default();
            let start = std::time::Instant::now();
            let host = train_app::training::link::prepare_link(&first, data, None)?;
            eprintln!(
                "link split: {} training edges in {:.1} s",
                host.split.train.len(),
                start.elapsed().as_secs_f64()
            );
            if let Some(dir) = &a.link_split {
                train_app::training::link::write_split(&train_app::training::link::split_dir(dir), &host.split)?;
            }
            let graph = std::path::Path::new(&a.dataset)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| a.dataset.clone());
            let split = host.split.clone();
            let mut host = Some(spread_host(host, &first)?);
            for (m, nl, p, cfg) in configs {
                let h = match host.take() {
                    Some(h) if h.self_loops == (cfg.self_loops || cfg.model.needs_self_loops()) => h,
                    _ => {
                        let d = datasets::load(&a.dataset, BuildOptions::default())?;
                        spread_host(train_app::training::link::prepare_link(&cfg, d, Some(split.clone()))?, &cfg)?
                    }
                };
                let batcher = gnn_train::link::LinkBatcher::new(Arc::new(h), 0);
                let tb = train_app::trainbench::TrainBench { cfg, epochs: a.epochs, warmup: a.warmup };
                let run =
                    catch_out_of_memory(|| train_app::trainbench::run_link::<B>(&tb, &batcher, &graph, &device, &name));
                match run.map_err(|msg| out_of_memory(backend, &m, &nl, &p, &msg))? {
                    Ok(rec) => {
                        let line = serde_json::to_string(&rec).map_err(|e| AppError::Config(e.to_string()))?;
                        println!("{line}");
                        if let (Some(f), Some(path)) = (file.as_mut(), a.out.as_ref()) {
                            use std::io::Write;
                            writeln!(f, "{line}").map_err(|e| AppError::io(path, e))?;
                        }
                    }
                    Err(e) => {
                        eprintln!("{m} {nl} {p}: {e}");
                        failed.push(format!("{m} {nl} {p}"));
                    }
                }
            }
            return all_ran(&failed);
        }
        if let Some(spread) = a.spread.spread()? {
            train_app::partitioned::check_device_indices::<B>(&device, &spread.devices, backend)?;
            for (m, nl, p, cfg) in configs {
                let host = train_app::training::prepare(&cfg, data.clone())?;
                if backend != "cuda" {
                    // activations live in host memory on the CPU and lavapipe backends
                    cfg.check_size(host.data.num_nodes(), host.d_in, host.data.num_classes())?;
                }
                let tb = train_app::trainbench::TrainBench { cfg, epochs: a.epochs, warmup: a.warmup };
                let run = catch_out_of_memory(|| {
                    train_app::partitioned::devices::bench::<B>(
                        &tb,
                        &host,
                        &spread,
                        a.spread.partition_cache.as_deref(),
                        &device,
                        &name,
                    )
                });
                let rec = match run.map_err(|msg| out_of_memory(backend, &m, &nl, &p, &msg))? {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("{m} {nl} {p}: {e}");
                        failed.push(format!("{m} {nl} {p}"));
                        continue;
                    }
                };
                let line = serde_json::to_string(&rec).map_err(|e| AppError::Config(e.to_string()))?;
                println!("{line}");
                if let (Some(f), Some(path)) = (file.as_mut(), a.out.as_ref()) {
                    use std::io::Write;
                    writeln!(f, "{line}").map_err(|e| AppError::io(path, e))?;
                }
            }
            return all_ran(&failed);
        }
        // one prepared graph (and device upload) per graph option set: graph options differ by
        // self-loops, group width, atomic kernels and precision (no hot-column split for
        // half-precision aggregation)
        let key_of = |cfg: &TrainConfig| {
            (
                cfg.model.needs_self_loops() || cfg.self_loops,
                cfg.group_width,
                cfg.atomic,
                cfg.precision.half().is_some(),
            )
        };
        let keys: std::collections::HashSet<_> = configs.iter().map(|c| key_of(&c.3)).collect();
        let mut batchers: HashMap<(bool, Option<usize>, bool, bool), FullGraphBatcher> = Default::default();
        // the last graph option set takes the loaded data itself (no second host copy of a
        // large graph)
        let mut data = Some(data);
        for (m, nl, p, cfg) in configs {
            let key = key_of(&cfg);
            if !batchers.contains_key(&key) {
                let last = batchers.len() + 1 == keys.len();
                let d = if last { data.take() } else { data.clone() };
                let Some(d) = d else { continue };
                let start = std::time::Instant::now();
                let host = train_app::training::prepare(&cfg, d)?;
                eprintln!(
                    "prepared the graph for {m} {p} in {:.1} s{}",
                    start.elapsed().as_secs_f64(),
                    train_app::host_memory::host_resident_note()
                );
                if backend != "cuda" {
                    // activations live in host memory on the CPU and lavapipe backends
                    cfg.check_size(host.data.num_nodes(), host.d_in, host.data.num_classes())?;
                }
                batchers.insert(key, FullGraphBatcher::new(Arc::new(host), 0));
            }
            let Some(batcher) = batchers.get(&key) else { continue };
            let tb = train_app::trainbench::TrainBench { cfg, epochs: a.epochs, warmup: a.warmup };
            let run = catch_out_of_memory(|| train_app::trainbench::run::<B>(&tb, batcher, &device, &name));
            let rec = match run.map_err(|msg| out_of_memory(backend, &m, &nl, &p, &msg))? {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("{m} {nl} {p}: {e}");
                    failed.push(format!("{m} {nl} {p}"));
                    continue;
                }
            };
            let line = serde_json::to_string(&rec).map_err(|e| AppError::Config(e.to_string()))?;
            println!("{line}");
            if let (Some(f), Some(path)) = (file.as_mut(), a.out.as_ref()) {
                use std::io::Write;
                writeln!(f, "{line}").map_err(|e| AppError::io(path, e))?;
            }
        }
        all_ran(&failed)
    }
}

/// The end of `bench-train`: an error naming the configurations that could not run (their
/// reasons were printed as they failed; the others' records are written).
fn all_ran(failed: &[String]) -> Result<()> {
    match failed {
        [] => Ok(()),
        _ => Err(AppError::Config(format!(
            "{} configuration(s) could not run: {} (the reasons are above; the other records are written)",
            failed.len(),
            failed.join(", ")
        ))),
    }
}

/// The error that ends `bench-train` when the device ran out of memory: the device may be in
/// no state to run the configurations that follow, and no record is written.
fn out_of_memory(
    backend: &str,
    m: &impl std::fmt::Display,
    nl: &impl std::fmt::Display,
    p: &impl std::fmt::Display,
    msg: &str,
) -> AppError {
    AppError::Backend {
        backend: backend.into(),
        msg: format!(
            "{m} {nl} {p} ran out of device memory ({msg}); no record written, the remaining configurations not run"
        ),
    }
}

pub fn bench_train(a: BenchTrainArgs) -> Result<()> {
    dispatch(a.backend, BenchTrainJob(a))
}

/// `bench-train --task graph`: epochs over every graph of a TU dataset at each batch size.
fn bench_graph<B: SparseGnnAutodiffBackend>(
    a: &BenchTrainArgs,
    configs: Vec<(&String, &String, &String, TrainConfig)>,
    device: &B::Device,
    backend: &str,
) -> Result<()> {
    if a.spread.spread()?.is_some() {
        return Err(AppError::Config("bench-train --task graph runs on one device".into()));
    }
    if let Some(b) = a.batch_sizes.iter().find(|&&b| b == 0) {
        return Err(AppError::Config(format!("--batch-sizes must be >= 1, got {b}")));
    }
    let data = train_app::training::graph::load_tu(&a.dataset)?;
    let encoding = gnn_train::graphs::TuEncoding::fit(&data, gnn_train::graphs::TuFeatures::Auto)
        .map_err(|e| AppError::Config(e.to_string()))?;
    let name = a.device_name.clone().unwrap_or_else(|| backend.to_string());
    let mut failed = Vec::new();
    for (m, nl, p, cfg) in configs {
        let self_loops = cfg.self_loops || cfg.model.needs_self_loops();
        let set = gnn_train::graphs::GraphSet::new(&data, encoding.clone(), self_loops, cfg.graph_options())
            .map_err(|e| AppError::Config(e.to_string()))?;
        for &bs in &a.batch_sizes {
            let tb = train_app::trainbench::TrainBench { cfg: cfg.clone(), epochs: a.epochs, warmup: a.warmup };
            let run = catch_out_of_memory(|| train_app::trainbench::run_graph::<B>(&tb, &set, bs, device, &name));
            match run.map_err(|msg| out_of_memory(backend, &m, &nl, &p, &msg))? {
                Ok(rec) => emit(a, &rec)?,
                Err(e) => {
                    eprintln!("{m} {p} batch {bs}: {e}");
                    failed.push(format!("{m} {p} batch {bs}"));
                }
            }
        }
    }
    all_ran(&failed)
}

/// `bench-train --training minibatch`: sampling, batch assembly and mini-batch epochs of node
/// classification at each seed batch size.
fn bench_minibatch<B: SparseGnnAutodiffBackend>(
    a: &BenchTrainArgs,
    configs: Vec<(&String, &String, &String, TrainConfig)>,
    device: &B::Device,
    backend: &str,
) -> Result<()> {
    if a.spread.spread()?.is_some() {
        return Err(AppError::Config("bench-train --training minibatch runs on one device".into()));
    }
    let data = datasets::load(&a.dataset, BuildOptions::default())?;
    let first = configs.first().map(|c| c.3.clone()).unwrap_or_default();
    let host = train_app::training::prepare(&first, data)?;
    let name = a.device_name.clone().unwrap_or_else(|| backend.to_string());
    let mut failed = Vec::new();
    for (m, nl, p, mut cfg) in configs {
        cfg.training = train_app::training::Training::Minibatch;
        cfg.fanouts = a.fanouts.clone();
        cfg.prefetch = a.prefetch;
        for &bs in &a.batch_sizes {
            cfg.batch_size = Some(bs);
            cfg.check()?;
            cfg.check_device::<B>(device, backend)?;
            let tb = train_app::trainbench::TrainBench { cfg: cfg.clone(), epochs: a.epochs, warmup: a.warmup };
            let run = catch_out_of_memory(|| train_app::trainbench::run_minibatch::<B>(&tb, &host, device, &name));
            match run.map_err(|msg| out_of_memory(backend, &m, &nl, &p, &msg))? {
                Ok(recs) => {
                    for rec in &recs {
                        emit(a, rec)?;
                    }
                }
                Err(e) => {
                    eprintln!("{m} {p} batch {bs}: {e}");
                    failed.push(format!("{m} {p} batch {bs}"));
                }
            }
        }
    }
    all_ran(&failed)
}

/// Prints a record and appends it to `--out`.
fn emit(a: &BenchTrainArgs, rec: &bench::Record) -> Result<()> {
    let line = serde_json::to_string(rec).map_err(|e| AppError::Config(e.to_string()))?;
    println!("{line}");
    if let Some(path) = a.out.as_ref() {
        use std::io::Write;
        let mut f =
            std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| AppError::io(path, e))?;
        writeln!(f, "{line}").map_err(|e| AppError::io(path, e))?;
    }
    Ok(())
}
