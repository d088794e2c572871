//! Training a model of your own with burn-train's `Learner` on a full graph.
//!
//! `cargo run --release -p gnn-train --example train_custom_model`

mod common;

use burn::backend::Autodiff;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::AdamConfig;
use burn::tensor::ElementConversion;
use burn::tensor::Tensor;
use burn::train::{ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep};
use burn_sparse_gnn::{ops, Cpu, Graph, GraphOptions, Reduce, SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_train::{classification_output, FullGraphBatcher, GraphBatch, HostGraph, SplitKind};
use std::sync::Arc;

/// Two mean-aggregation layers with a ReLU between them.
#[derive(Module, Debug)]
struct MeanNet<B: burn::tensor::backend::Backend> {
    first: Linear<B>,
    second: Linear<B>,
}

impl<B: SparseGnnBackend> MeanNet<B> {
    fn forward(&self, g: &Graph<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let h = burn::tensor::activation::relu(self.first.forward(ops::spmm(g, x, Reduce::Mean)));
        self.second.forward(ops::spmm(g, h, Reduce::Mean))
    }
}

impl<B: SparseGnnAutodiffBackend> TrainStep for MeanNet<B> {
    type Input = GraphBatch<B>;
    type Output = ClassificationOutput<B>;
    fn step(&self, batch: GraphBatch<B>) -> TrainOutput<ClassificationOutput<B>> {
        let item = classification_output(self.forward(&batch.graph, batch.x.clone()), &batch);
        TrainOutput::new(self, item.loss.backward(), item)
    }
}

impl<B: SparseGnnBackend> InferenceStep for MeanNet<B> {
    type Input = GraphBatch<B>;
    type Output = ClassificationOutput<B>;
    fn step(&self, batch: GraphBatch<B>) -> ClassificationOutput<B> {
        classification_output(self.forward(&batch.graph, batch.x.clone()), &batch)
    }
}

fn main() {
    type B = Autodiff<Cpu>;
    let device = Default::default();
    let host = HostGraph::new(common::toy_graph(400, 4), GraphOptions::default()).expect("split present");
    let model = MeanNet::<B> {
        first: LinearConfig::new(host.d_in, 16).init(&device),
        second: LinearConfig::new(16, host.data.num_classes()).init(&device),
    };
    let batcher = FullGraphBatcher::new(Arc::new(host), 0);
    let train = DataLoaderBuilder::<B, _, _>::new(batcher.clone()).batch_size(1);
    let valid = DataLoaderBuilder::<Cpu, _, _>::new(batcher.clone()).batch_size(1);
    let out = std::env::temp_dir().join("gnn-train-example");
    let (train, valid) = (
        train.build(InMemDataset::new(vec![SplitKind::Train])),
        valid.build(InMemDataset::new(vec![SplitKind::Valid])),
    );
    let result = SupervisedTraining::new(&out, train, valid).num_epochs(30).launch(Learner::new(
        model,
        AdamConfig::new().init(),
        0.02,
    ));
    let trained = result.model; // the trained model without autodiff
    for split in [SplitKind::Train, SplitKind::Valid, SplitKind::Test] {
        let batch: GraphBatch<Cpu> = Batcher::batch(&batcher, vec![split], &Default::default());
        let out = InferenceStep::step(&trained, batch);
        let n = out.targets.dims()[0];
        let hits: i64 = out.output.argmax(1).reshape([n]).equal(out.targets).int().sum().into_scalar().elem();
        println!("{split:?} accuracy {:.3}", hits as f64 / n as f64);
    }
}
