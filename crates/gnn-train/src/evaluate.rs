//! Accuracies of a trained model, and its per-node outputs.

use crate::batch::{FullGraphBatcher, GraphBatch, SplitKind};
use crate::classifier::NodeClassifier;
use crate::error::TrainError;
use burn::tensor::activation::softmax;
use burn::tensor::{ElementConversion, Tensor};
use burn_sparse_gnn::{Graph, SparseGnnBackend};
use gnn_models::{GnnModel, GnnModelConfig};
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
    predictions_of(model.forward(graph, x))
}

/// Class probabilities and predicted classes of the rows of `logits` (`[nodes, classes]`).
pub fn predictions_of<B: SparseGnnBackend>(logits: Tensor<B, 2>) -> Predictions {
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
/// `lin_out` in MaxK-GNN's architecture (the last convolution's output), the output of the
/// second-to-last convolution (after its normalisation, before the next nonlinearity) in the
/// classic one; for a classic GAT that is the hidden layer's heads concatenated. `None` where
/// there is no hidden layer: a classic model of one convolution.
///
/// Computed with the model's own steps ([`GnnModel::input`], [`GnnModel::activate`],
/// [`GnnModel::convolve`]) as [`GnnModel::forward`] takes them, stopping before the output
/// layer; `cfg` is the configuration the model was built from.
pub fn embeddings<B: SparseGnnBackend>(
    cfg: &GnnModelConfig,
    model: &GnnModel<B>,
    graph: &Graph<B>,
    x: Tensor<B, 2>,
) -> Result<Option<Tensor<B, 2>>, TrainError> {
    let layers = model.num_layers();
    if layers != cfg.layers {
        return Err(TrainError::Data(format!(
            "the model holds {layers} convolutions, its configuration says {}",
            cfg.layers
        )));
    }
    // MaxK-GNN's architecture maps the last convolution's output through `lin_out`; the
    // classic stack's last convolution is the output layer
    let hidden_convs = if cfg.linear_io { layers } else { layers - 1 };
    if hidden_convs == 0 {
        return Ok(None);
    }
    let device = x.device();
    let x = model.drop_input(x, model.input_dropout_seed(&device).as_ref(), None);
    let mut h = model.input(x);
    for l in 0..hidden_convs {
        let seed = model.dropout_seed(l, &device);
        let a = model.activate(l, h, graph.kernel_config(), seed.as_ref(), None);
        h = model.convolve(l, graph, &a);
    }
    Ok(Some(h))
}
