//! Accuracies of a trained model, and its per-node outputs.

use crate::batch::{FullGraphBatcher, GraphBatch, SplitKind};
use crate::classifier::NodeClassifier;
use crate::error::TrainError;
use burn::module::{Module, Param};
use burn::nn::{LayerNormConfig, LinearRecord};
use burn::tensor::activation::softmax;
use burn::tensor::{ElementConversion, Tensor};
use burn_sparse_gnn::{Graph, SparseGnnBackend};
use gnn_models::{ConvKind, GnnModel, GnnModelConfig};
use serde::{Deserialize, Serialize};

/// Accuracy of every split and the loss on the test split.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Accuracies {
    pub train: f64,
    pub valid: f64,
    pub test: f64,
    pub test_loss: f64,
}

/// Evaluates a model on the train / valid / test splits (run it on an inference backend).
pub fn evaluate<B: SparseGnnBackend>(
    model: &NodeClassifier<B>,
    batcher: &FullGraphBatcher,
    device: &B::Device,
) -> Accuracies {
    let acc = |split: SplitKind| {
        let batch: GraphBatch<B> = burn::data::dataloader::batcher::Batcher::batch(batcher, vec![split], device);
        let out = model.classify(&batch);
        let pred = out.output.argmax(1).reshape([out.targets.dims()[0]]);
        let n = out.targets.dims()[0].max(1) as f64;
        let correct: i64 = pred.equal(out.targets).int().sum().into_scalar().elem();
        (correct as f64 / n, out.loss.into_scalar().elem::<f64>())
    };
    let (train, _) = acc(SplitKind::Train);
    let (valid, _) = acc(SplitKind::Valid);
    let (test, test_loss) = acc(SplitKind::Test);
    Accuracies { train, valid, test, test_loss }
}

/// Per-node outputs of a model, row-major.
#[derive(Clone, Debug)]
pub struct Predictions {
    pub nodes: usize,
    pub classes: usize,
    /// Softmax of the logits, `[nodes, classes]`.
    pub probabilities: Vec<f32>,
    /// The most probable class of every node (the lowest on ties), `[nodes]`.
    pub predictions: Vec<i64>,
}

/// Class probabilities and predicted classes of every node (run it on an inference backend).
pub fn predict<B: SparseGnnBackend>(model: &GnnModel<B>, graph: &Graph<B>, x: Tensor<B, 2>) -> Predictions {
    let logits = model.forward(graph, x);
    let [nodes, classes] = logits.dims();
    let predictions = logits.clone().argmax(1).reshape([nodes]).into_data().convert::<i64>().to_vec::<i64>();
    let probabilities = softmax(logits, 1).into_data().convert::<f32>().to_vec::<f32>();
    Predictions {
        nodes,
        classes,
        probabilities: probabilities.unwrap_or_default(),
        predictions: predictions.unwrap_or_default(),
    }
}

/// The output of the model's last hidden layer for every node, `[nodes, hidden]`: the input of
/// `lin_out` in MaxK-GNN's architecture, the output of the second-to-last convolution (after its
/// normalisation, before the nonlinearity) in the classic one. `None` where there is no hidden
/// layer (a classic model of one convolution) and for a classic GAT (its last layer's head
/// layout differs from the hidden ones).
///
/// Computed with the model's own parts: the same configuration with the output layer made the
/// identity, or the stack without its last convolution.
pub fn embeddings<B: SparseGnnBackend>(
    cfg: &GnnModelConfig,
    model: &GnnModel<B>,
    graph: &Graph<B>,
    x: Tensor<B, 2>,
) -> Result<Option<Tensor<B, 2>>, TrainError> {
    let device = x.device();
    let h = cfg.hidden;
    let mut record = model.clone().into_record();
    if cfg.linear_io {
        let mut head = cfg.clone();
        head.classes = h;
        let body = head.init::<B>(&device)?;
        record.lin_out = Some(LinearRecord {
            weight: Param::from_tensor(Tensor::eye(h, &device)),
            bias: Some(Param::from_tensor(Tensor::zeros([h], &device))),
        });
        return Ok(Some(body.load_record(record).forward(graph, x)));
    }
    if cfg.layers < 2 || cfg.conv == ConvKind::Gat {
        return Ok(None);
    }
    let mut trunk = cfg.clone();
    trunk.classes = h;
    trunk.layers = cfg.layers - 1;
    let body = trunk.init::<B>(&device)?;
    record.convs.truncate(trunk.layers);
    // a classic stack normalises after every convolution but the last: the trunk's last one
    // is applied here
    let last_norm = if record.norms.len() == trunk.layers { record.norms.pop() } else { None };
    if record.convs.len() != trunk.layers {
        return Err(TrainError::Data(format!(
            "the model holds {} convolutions, its configuration says {}",
            record.convs.len() + 1,
            cfg.layers
        )));
    }
    let mut out = body.load_record(record).forward(graph, x);
    if let Some(norm) = last_norm {
        out = LayerNormConfig::new(h).init::<B>(&device).load_record(norm).forward(out);
    }
    Ok(Some(out))
}
