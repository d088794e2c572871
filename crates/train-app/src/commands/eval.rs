//! `eval` and `predict`: a trained run on its dataset or another.

use crate::cli::{EvalArgs, PredictArgs};
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use std::path::PathBuf;
use train_app::backend::{dispatch, Job};
use train_app::error::Result;

struct EvalJob {
    dir: PathBuf,
    dataset: Option<String>,
}

impl Job for EvalJob {
    type Output = ();
    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, _backend: &str) -> Result<()> {
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
}

impl Job for PredictJob {
    type Output = ();
    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, _backend: &str) -> Result<()> {
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
    dispatch(a.backend, PredictJob { dir: a.dir, dataset: a.dataset, nodes: a.nodes, out: a.out })
}
