//! Link prediction runs: the edge split (random and seeded, or the dataset's own) written into
//! the run folder, training through the shared loop ([`super::train::run_learner`]), the
//! metrics of the selected model, and `eval` / `predict` of a trained run.

use crate::error::{AppError, Result};
use crate::training::config::TrainConfig;
use crate::training::files::model_path;
use crate::training::report::{write_json, LossScaleSummary, TrainReport};
use crate::training::train::{conclude, loaders, run_learner, Learned, Outcome};
use burn::module::Module;
use burn_sparse_gnn::{BuildOptions, GraphData, SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_train::link::{evaluate_link, LinkBatcher, LinkHost, LinkPredictor, LinkSplit, LinkSplitConfig, Pair};
use gnn_train::Accuracies;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The folder of a run (or a dataset) that holds a link split.
pub fn split_dir(folder: &Path) -> PathBuf {
    folder.join("link-split")
}

/// Writes `split` into `dir`: one `[m, 2]` int64 `.npy` per list (`source, destination`) and
/// `meta.json` (`num_nodes`, `undirected`, `weighted`); training edge weights, where the graph
/// has them, as `train_weight.npy`.
pub fn write_split(dir: &Path, split: &LinkSplit) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| AppError::io(dir, e))?;
    for (name, pairs) in split.parts() {
        let flat: Vec<i64> = pairs.iter().flat_map(|p| [p[0] as i64, p[1] as i64]).collect();
        crate::npyio::write(&dir.join(format!("{name}.npy")), &[pairs.len(), 2], &flat)?;
    }
    if let Some(w) = &split.train_weights {
        crate::npyio::write(&dir.join("train_weight.npy"), &[w.len()], w)?;
    }
    let meta = serde_json::json!({
        "num_nodes": split.num_nodes,
        "undirected": split.undirected,
        "weighted": split.train_weights.is_some(),
    });
    write_json(&dir.join("meta.json"), &meta)
}

fn read_pairs(path: &Path, n: usize) -> Result<Vec<Pair>> {
    let a = crate::npyio::read_ints(path)?;
    crate::npyio::expect_shape(path, &a.shape, &[None, Some(2)])?;
    a.data
        .chunks(2)
        .enumerate()
        .map(|(i, p)| {
            let ok = |v: i64| usize::try_from(v).ok().filter(|&v| v < n).map(|v| v as u32);
            match (ok(p[0]), ok(p[1])) {
                (Some(s), Some(d)) => Ok([s, d]),
                _ => Err(AppError::Format {
                    path: path.into(),
                    msg: format!("pair {i} ({}, {}) has a node outside 0..{n}", p[0], p[1]),
                }),
            }
        })
        .collect()
}

/// Reads a split written by [`write_split`] (or laid out the same way in a dataset folder, see
/// docs/LINK_PREDICTION.md) for a graph of `n` nodes. Missing negatives of valid or test are
/// drawn (seeded) against `adj`'s edges.
pub fn read_split(dir: &Path, n: usize, adj: &burn_sparse_gnn::Csr, seed: u64) -> Result<LinkSplit> {
    let file = |name: &str| dir.join(format!("{name}.npy"));
    let must = |name: &str| -> Result<Vec<Pair>> {
        let p = file(name);
        if !p.is_file() {
            return Err(AppError::Missing { path: p, what: format!("the link split's {name} pairs") });
        }
        read_pairs(&p, n)
    };
    let may = |name: &str| -> Result<Option<Vec<Pair>>> {
        let p = file(name);
        if p.is_file() {
            read_pairs(&p, n).map(Some)
        } else {
            Ok(None)
        }
    };
    let meta_path = dir.join("meta.json");
    let undirected = match std::fs::read_to_string(&meta_path) {
        Ok(t) => serde_json::from_str::<serde_json::Value>(&t)
            .map_err(|e| AppError::Format { path: meta_path.clone(), msg: e.to_string() })?
            .get("undirected")
            .and_then(|v| v.as_bool())
            .unwrap_or_else(|| adj.is_symmetric()),
        Err(_) => adj.is_symmetric(),
    };
    let train = must("train_pos")?;
    let test_pos = must("test_pos")?;
    let valid_pos = may("valid_pos")?.unwrap_or_default();
    let weights = match file("train_weight").is_file() {
        true => Some(crate::npyio::read_floats(&file("train_weight"))?.data),
        false => None,
    };
    let drawn = |pos: &[Pair], salt: u64| -> Result<Vec<Pair>> {
        gnn_train::link::split::negatives_for(adj, undirected, pos.len(), seed ^ salt).map_err(AppError::from)
    };
    let valid_neg = match may("valid_neg")? {
        Some(v) => v,
        None => drawn(&valid_pos, 1)?,
    };
    let test_neg = match may("test_neg")? {
        Some(v) => v,
        None => drawn(&test_pos, 2)?,
    };
    let split =
        LinkSplit { num_nodes: n, undirected, train, train_weights: weights, valid_pos, valid_neg, test_pos, test_neg };
    split.check().map_err(|e| AppError::Config(format!("{}: {e}", dir.display())))?;
    Ok(split)
}

/// The link split of a run: the dataset's own (a `link-split` folder beside its files), else a
/// random one from the run's shares and seed. `data` holds the graph as loaded (symmetrised and
/// deduplicated as the run asks, without added self-loops).
pub fn make_split(cfg: &TrainConfig, data: &GraphData) -> Result<LinkSplit> {
    let own = Path::new(&cfg.dataset).join("link-split");
    if own.is_dir() {
        eprintln!("link split: the dataset's own ({})", own.display());
        return read_split(&own, data.num_nodes(), data.adjacency(), cfg.seed);
    }
    let split = LinkSplit::random(
        data.adjacency(),
        LinkSplitConfig { valid: cfg.link_valid, test: cfg.link_test, seed: cfg.seed },
    )?;
    Ok(split)
}

/// The host data of a link run: the graph symmetrised / deduplicated as configured (no
/// self-loops: they are not edges to predict; the encoder's graph gets them where the model
/// needs them), the split, and the features (row-normalised where the run asks).
pub fn prepare_link(cfg: &TrainConfig, data: GraphData, split: Option<LinkSplit>) -> Result<LinkHost> {
    let opts = BuildOptions { symmetrize: cfg.symmetrize, add_self_loops: false, dedup: true };
    let data = crate::datasets::rebuild(data, opts)?;
    let split = match split {
        Some(s) => s,
        None => make_split(cfg, &data)?,
    };
    let mut no_loops = cfg.clone();
    no_loops.self_loops = false;
    let u = crate::training::eval::prepare_unsplit(&no_loops, data)?;
    let self_loops = cfg.self_loops || cfg.model.needs_self_loops();
    LinkHost::new(split, u.x, u.d_in, cfg.graph_options(), self_loops, cfg.negatives, cfg.seed).map_err(AppError::from)
}

/// Trains link prediction on backend `B` (see [`super::train::train`] for `resume` and `tui`).
pub fn train_link<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    host: LinkHost,
    stats: burn_sparse_gnn::DatasetStats,
    device: &B::Device,
    backend: &str,
    resume: Option<usize>,
    tui: bool,
) -> Result<TrainReport> {
    cfg.check()?;
    cfg.check_device::<B>(device, backend)?;
    if backend != "cuda" {
        cfg.check_size(host.split.num_nodes, host.d_in, cfg.embedding)?;
    }
    let model_cfg = cfg.model_config(host.d_in, cfg.embedding)?;
    crate::fsutil::make_out_dir(&cfg.out)?;
    write_split(&split_dir(&cfg.out), &host.split)?;
    B::seed(device, cfg.seed);
    let model = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    model.initialise_parameters();
    let model = LinkPredictor::new(model, cfg.decoder, cfg.embedding, cfg.seed, device)
        .with_loss_scale(cfg.loss_scale.config(cfg.precision));
    let parameters = model.num_params();
    let host = Arc::new(host);
    let slot: Arc<Mutex<Option<LinkBatcher>>> = Arc::new(Mutex::new(None));
    let kept = slot.clone();
    let learned = run_learner::<B, _>(cfg, model, device, resume, tui, true, 1, |start| {
        let batcher = LinkBatcher::new(host.clone(), start.unwrap_or(0));
        let setup = Instant::now();
        batcher.resident::<B>(device)?;
        batcher.scored::<B::InnerBackend>(gnn_train::SplitKind::Valid, device)?;
        let seconds = setup.elapsed().as_secs_f64();
        *kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(batcher.clone());
        Ok((loaders::<B, _, _, _>(batcher, device), seconds))
    })?;
    let batcher = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    let batcher = batcher.ok_or_else(|| AppError::Config("the training data was never prepared".into()))?;
    let Learned { trained, run } = learned;
    let loss_scale = trained.loss_scaler().as_ref().map(LossScaleSummary::from);
    let link = evaluate_link(&trained, &batcher, device, cfg.hits_k)?;
    let final_accuracy = Accuracies {
        train: run.epochs.last().and_then(|e| e.train_accuracy).unwrap_or(f64::NAN),
        valid: link.valid_accuracy.unwrap_or(f64::NAN),
        test: link.test_accuracy,
        test_loss: link.test_loss,
    };
    let outcome = Outcome { final_accuracy, parameters, loss_scale, link: Some(link) };
    conclude(cfg, &stats, backend, (&trained, &trained), run, outcome)
}

/// A trained link predictor loaded from its run folder, with the batcher of its split.
pub fn load_link<B: SparseGnnBackend>(
    cfg: &TrainConfig,
    host: LinkHost,
    device: &B::Device,
) -> Result<(LinkPredictor<B>, LinkBatcher)> {
    let model_cfg = cfg.model_config(host.d_in, cfg.embedding)?;
    let model = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    let model = LinkPredictor::new(model, cfg.decoder, cfg.embedding, cfg.seed, device);
    let model = gnn_train::load_checked(model, &model_path(&cfg.out), device)?;
    Ok((model, LinkBatcher::new(Arc::new(host), 0)))
}

/// A trained link run loaded from its folder: its configuration, predictor and batcher.
pub fn load_link_run<B: SparseGnnBackend>(
    dir: &Path,
    device: &B::Device,
) -> Result<(TrainConfig, LinkPredictor<B>, LinkBatcher)> {
    let cfg = crate::training::eval::run_config(dir, None)?;
    cfg.check_device::<B>(device, "chosen")?;
    let data = crate::datasets::load(&cfg.dataset, BuildOptions::default())?;
    let opts = BuildOptions { symmetrize: cfg.symmetrize, add_self_loops: false, dedup: true };
    let data = crate::datasets::rebuild(data, opts)?;
    let sdir = split_dir(dir);
    if !sdir.is_dir() {
        return Err(AppError::Missing { path: sdir, what: "the link split the run was trained on".into() });
    }
    let split = read_split(&sdir, data.num_nodes(), data.adjacency(), cfg.seed)?;
    let host = prepare_link(&cfg, data, Some(split))?;
    let (model, batcher) = load_link::<B>(&cfg, host, device)?;
    Ok((cfg, model, batcher))
}

/// Reads pairs from a CSV file: two integer columns `source,destination` per row (a first row
/// that is not two integers is a header), each id in `0..n`. Errors name the file and the line.
pub fn read_pairs_csv(path: &Path, n: usize) -> Result<Vec<Pair>> {
    let file = std::fs::File::open(path).map_err(|e| AppError::io(path, e))?;
    let mut rdr = csv::ReaderBuilder::new().has_headers(false).trim(csv::Trim::All).from_reader(file);
    let mut out = Vec::new();
    for (i, rec) in rdr.records().enumerate() {
        let line = i + 1;
        let rec = rec.map_err(|e| AppError::Format { path: path.into(), msg: format!("line {line}: {e}") })?;
        let ids: Vec<Option<i64>> = rec.iter().map(|f| f.parse::<i64>().ok()).collect();
        match (rec.len(), ids.first().copied().flatten(), ids.get(1).copied().flatten()) {
            (2, Some(s), Some(d)) => {
                let ok = |v: i64| usize::try_from(v).ok().filter(|&v| v < n).map(|v| v as u32);
                match (ok(s), ok(d)) {
                    (Some(s), Some(d)) => out.push([s, d]),
                    _ => {
                        return Err(AppError::Format {
                            path: path.into(),
                            msg: format!("line {line}: pair ({s}, {d}) has a node outside 0..{n}"),
                        })
                    }
                }
            }
            _ if line == 1 => continue, // a header
            _ => {
                return Err(AppError::Format {
                    path: path.into(),
                    msg: format!("line {line}: expected two node ids `source,destination`, got {:?}", rec.as_slice()),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(AppError::Format { path: path.into(), msg: "holds no pairs: nothing to score".into() });
    }
    Ok(out)
}

/// What `predict` wrote for a link run.
#[derive(Clone, Debug)]
pub struct LinkPredictOutput {
    pub pairs: usize,
    pub top_k_nodes: usize,
    pub files: Vec<PathBuf>,
}

fn write_csv(path: &Path, header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let bad = |e: csv::Error| AppError::Format { path: path.into(), msg: e.to_string() };
    w.write_record(header).map_err(bad)?;
    for r in rows {
        w.write_record(&r).map_err(bad)?;
    }
    let bytes = w.into_inner().map_err(|e| AppError::Format { path: path.into(), msg: e.to_string() })?;
    crate::fsutil::write_atomic(path, &bytes)
}

/// `predict` on a link run: the score and probability of every pair of `pairs` (a CSV) into
/// `<out>/scores.csv`, and with `top_k` the K best new neighbours of each node of `nodes` (an
/// .npy of node ids) into `<out>/top_k.csv` (known training edges and the node itself
/// excluded).
pub fn predict_link<B: SparseGnnBackend>(
    dir: &Path,
    pairs: Option<&Path>,
    top_k: Option<usize>,
    nodes: Option<&Path>,
    out: &Path,
    device: &B::Device,
) -> Result<LinkPredictOutput> {
    if pairs.is_none() && top_k.is_none() {
        return Err(AppError::Config(
            "a link prediction run predicts pairs: give --pairs FILE.csv and / or --top-k K".into(),
        ));
    }
    if top_k == Some(0) {
        return Err(AppError::Config("--top-k must be >= 1".into()));
    }
    if top_k.is_some() && nodes.is_none() {
        return Err(AppError::Config(
            "--top-k scores every node against the nodes of --nodes FILE.npy (their ids): give the nodes".into(),
        ));
    }
    let (cfg, model, batcher) = load_link_run::<B>(dir, device)?;
    let n = batcher.host().split.num_nodes;
    let pairs = pairs.map(|p| read_pairs_csv(p, n)).transpose()?;
    let nodes = nodes.map(|p| crate::training::eval::read_node_ids(p, n, &cfg.dataset)).transpose()?;
    crate::fsutil::make_out_dir(out)?;
    let (z, width) = gnn_train::link::embeddings_of(&model, &batcher, device)?;
    let mut files = Vec::new();
    let mut result = LinkPredictOutput { pairs: 0, top_k_nodes: 0, files: Vec::new() };
    if let Some(pairs) = pairs {
        let scores = gnn_train::link::score_pairs(&model, &z, width, &pairs, device);
        let path = out.join("scores.csv");
        write_csv(
            &path,
            &["source", "destination", "score", "probability"],
            pairs.iter().zip(&scores).map(|(p, &s)| {
                vec![p[0].to_string(), p[1].to_string(), s.to_string(), (1.0 / (1.0 + (-s).exp())).to_string()]
            }),
        )?;
        result.pairs = pairs.len();
        files.push(path);
    }
    if let Some(k) = top_k {
        let message = batcher.host().split.message_graph(false)?;
        let queries: Vec<usize> = nodes.unwrap_or_default();
        let mut rows = Vec::new();
        for &q in &queries {
            // known neighbours either way: the row of q, and q's column where the split is directed
            let mut known: Vec<u32> = message.col_idx()[message.row_ptr()[q]..message.row_ptr()[q + 1]].to_vec();
            if !batcher.host().split.undirected {
                known.extend(batcher.host().split.train.iter().filter(|p| p[0] as usize == q).map(|p| p[1]));
            }
            let best = gnn_train::link::top_k(&model, &z, width, q as u32, k, &known, device);
            for (rank, (v, s)) in best.into_iter().enumerate() {
                rows.push(vec![q.to_string(), (rank + 1).to_string(), v.to_string(), s.to_string()]);
            }
        }
        let path = out.join("top_k.csv");
        write_csv(&path, &["node", "rank", "neighbour", "score"], rows.into_iter())?;
        result.top_k_nodes = queries.len();
        files.push(path);
    }
    result.files = files;
    Ok(result)
}
