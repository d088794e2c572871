//! `eval` and `predict`: a trained run on its dataset or another.

use crate::cli::{EvalArgs, PredictArgs};
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use gnn_train::link::evaluate_link;
use std::path::PathBuf;
use train_app::backend::{dispatch, Job};
use train_app::error::{AppError, Result};
use train_app::training::link::{load_link_run, predict_link};
use train_app::training::Task;

struct EvalJob {
    dir: PathBuf,
    dataset: Option<String>,
}

impl Job for EvalJob {
    type Output = ();
    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, _backend: &str) -> Result<()> {
        let task = train_app::training::eval::run_config(&self.dir, None)?.task;
        if task == Task::Graph {
            if self.dataset.is_some() {
                return Err(AppError::Config(
                    "a graph classification run is evaluated on its own split; `predict --dataset` scores other graphs"
                        .into(),
                ));
            }
            for line in train_app::training::graph::eval_graph::<B::InnerBackend>(&self.dir, &device)? {
                println!("{line}");
            }
            return Ok(());
        }
        if task == Task::Link {
            if self.dataset.is_some() {
                return Err(AppError::Config(
                    "a link prediction run is evaluated on its own split (the run folder's link-split); \
                     --dataset is for node classification"
                        .into(),
                ));
            }
            let (cfg, model, batcher) = load_link_run::<B::InnerBackend>(&self.dir, &device)?;
            let e = evaluate_link(&model, &batcher, &device, cfg.hits_k)?;
            for (name, m) in [("valid", e.valid), ("test", Some(e.test))] {
                if let Some(m) = m {
                    println!(
                        "{} on {} ({name}, {} + {} pairs): auc {:.4} ap {:.4} hits@{} {:.4} mrr {:.4}",
                        cfg.model.name(),
                        cfg.dataset,
                        m.positives,
                        m.negatives,
                        m.auc,
                        m.ap,
                        m.hits_k,
                        m.hits,
                        m.mrr
                    );
                }
            }
            return Ok(());
        }
        let (cfg, a) = train_app::training::eval::<B::InnerBackend>(&self.dir, self.dataset.as_deref(), &device)?;
        println!(
            "{} on {}: accuracy train {:.4} valid {:.4} test {:.4} (test loss {:.4})",
            cfg.model.name(),
            cfg.dataset,
            a.train,
            a.valid,
            a.test,
            a.test_loss
        );
        Ok(())
    }
}

struct PredictJob {
    dir: PathBuf,
    dataset: Option<String>,
    nodes: Option<PathBuf>,
    out: PathBuf,
    pairs: Option<PathBuf>,
    top_k: Option<usize>,
}

impl Job for PredictJob {
    type Output = ();
    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, _backend: &str) -> Result<()> {
        let task = train_app::training::eval::run_config(&self.dir, None)?.task;
        if task == Task::Graph {
            if self.pairs.is_some() || self.top_k.is_some() || self.nodes.is_some() {
                return Err(AppError::Config(
                    "a graph classification run predicts whole graphs; --pairs, --top-k and --nodes are for node \
                     and link runs"
                        .into(),
                ));
            }
            let p = train_app::training::graph::predict_graph::<B::InnerBackend>(
                &self.dir,
                self.dataset.as_deref(),
                &self.out,
                &device,
            )?;
            println!(
                "{} graphs, {} classes: {}",
                p.graphs,
                p.classes,
                p.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
            );
            return Ok(());
        }
        let link = task == Task::Link;
        if !link && (self.pairs.is_some() || self.top_k.is_some()) {
            return Err(AppError::Config(
                "--pairs and --top-k score node pairs of a link prediction run; this run classifies nodes".into(),
            ));
        }
        if link {
            if self.dataset.is_some() {
                return Err(AppError::Config(
                    "a link prediction run predicts on its own graph; --dataset is for node classification".into(),
                ));
            }
            let p = predict_link::<B::InnerBackend>(
                &self.dir,
                self.pairs.as_deref(),
                self.top_k,
                self.nodes.as_deref(),
                &self.out,
                &device,
            )?;
            println!(
                "{} pairs scored, top {} of {} nodes: {}",
                p.pairs,
                self.top_k.unwrap_or(0),
                p.top_k_nodes,
                p.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
            );
            return Ok(());
        }
        let p = train_app::training::predict::<B::InnerBackend>(
            &self.dir,
            self.dataset.as_deref(),
            self.nodes.as_deref(),
            &self.out,
            &device,
        )?;
        let of = if p.nodes == p.dataset_nodes { String::new() } else { format!(" of {}", p.dataset_nodes) };
        println!(
            "{} nodes{of}, {} classes{}: {}",
            p.nodes,
            p.classes,
            p.hidden.map(|h| format!(", embeddings {h} wide")).unwrap_or_default(),
            p.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        Ok(())
    }
}

pub fn eval(a: EvalArgs) -> Result<()> {
    dispatch(a.backend, EvalJob { dir: a.dir, dataset: a.dataset })
}

pub fn predict(a: PredictArgs) -> Result<()> {
    dispatch(
        a.backend,
        PredictJob { dir: a.dir, dataset: a.dataset, nodes: a.nodes, out: a.out, pairs: a.pairs, top_k: a.top_k },
    )
}
