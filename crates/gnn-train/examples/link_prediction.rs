//! Link prediction with burn-train's `Learner`: which pairs of nodes are edges.
//!
//! The graph is the stochastic block model of the other examples without self-loops (1,000 nodes
//! in 4 communities, 80 % of the edges within a community, features a noisy community mean). Its
//! edges are split 85 / 5 / 10 with fixed negatives for valid and test ([`LinkSplit`]); a
//! two-layer GCN embeds every node from the training edges only, a dot product of two embeddings
//! (the SDDMM) scores a pair, and each epoch draws its negatives on the device. Measured on the
//! CPU backend: test ROC-AUC 0.788 after 30 epochs (chance: 0.5; an edge joins two nodes of the
//! same community 80 % of the time, a random pair 25 %; longer training overfits this small
//! graph: 0.717 after 100).
//!
//! `cargo run --release -p gnn-train --example link_prediction`

mod common;

use burn::backend::Autodiff;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::train::logger::InMemoryMetricLogger;
use burn::train::metric::LossMetric;
use burn::train::{Learner, SupervisedTraining};
use burn_sparse_gnn::optim::FusedAdamConfig;
use burn_sparse_gnn::{Cpu, GraphOptions};
use gnn_models::{ConvKind, GnnModelConfig};
use gnn_train::link::LinkSplitConfig;
use gnn_train::link::{evaluate_link, Decoder, LinkAucMetric, LinkBatcher, LinkHost, LinkPredictor, LinkSplit};
use gnn_train::SplitKind;
use std::sync::Arc;

type B = Autodiff<Cpu>;

fn main() {
    let data = common::Sbm { self_loops: false, ..Default::default() }.generate();
    let split = LinkSplit::random(data.adjacency(), LinkSplitConfig { valid: 0.05, test: 0.10, seed: 42 })
        .expect("the graph has enough edges to split");
    println!(
        "{} training edges; valid {} and test {} positives, as many fixed negatives",
        split.train.len(),
        split.valid_pos.len(),
        split.test_pos.len()
    );
    let x = data.features().to_dense();
    let d_in = data.features().width();
    // GCN's normalisation without self-loops in the graph; one negative per positive
    let host = LinkHost::new(split, x, d_in, GraphOptions::default(), false, 1, 42).expect("a consistent split");
    let device = Default::default();
    let (hidden, embedding) = (64, 32);
    let encoder = GnnModelConfig::new(ConvKind::Gcn, d_in, hidden, embedding)
        .with_linear_io(false)
        .with_dropout(0.0)
        .init::<B>(&device)
        .expect("a valid model");
    let model = LinkPredictor::new(encoder, Decoder::Dot, embedding, 42, &device);
    let batcher = LinkBatcher::new(Arc::new(host), 0);
    let train = DataLoaderBuilder::new(batcher.clone()).batch_size(1).build(InMemDataset::new(vec![SplitKind::Train]));
    let valid = DataLoaderBuilder::new(batcher.clone()).batch_size(1).build(InMemDataset::new(vec![SplitKind::Valid]));
    let dir = std::env::temp_dir().join("gnn-train-link-prediction");
    let result = SupervisedTraining::new(&dir, train, valid)
        .metric_train_numeric(LossMetric::new())
        .metric_train_numeric(LinkAucMetric::new())
        .metric_valid_numeric(LossMetric::new())
        .metric_valid_numeric(LinkAucMetric::new())
        .num_epochs(30)
        .with_application_logger(None)
        .with_metric_logger(InMemoryMetricLogger::default())
        .renderer(common::epoch_lines::EpochLines::new(5, &["Loss", "AUC"]))
        .launch(Learner::new(model, FusedAdamConfig::new().init(), 0.01));
    let e = evaluate_link(&result.model, &batcher, &device, 50).expect("the split's pairs");
    println!("test auc {:.3} ap {:.3} hits@50 {:.3} mrr {:.3}", e.test.auc, e.test.ap, e.test.hits, e.test.mrr);
}
