//! Accuracy, loss and class probabilities of a trained graph classifier over a set of graphs,
//! in batches (the model in inference mode: batch normalisation by its running statistics, no
//! dropout).

use super::batch::GraphSet;
use burn::tensor::activation::softmax;
use burn_sparse_gnn::SparseGnnBackend;
use gnn_models::GraphModel;

/// Accuracy and mean loss over a list of graphs.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GraphScore {
    pub accuracy: f64,
    pub loss: f64,
    pub graphs: usize,
}

/// Class probabilities and predicted class of each graph.
#[derive(Clone, Debug)]
pub struct GraphPredictions {
    /// `[graphs, classes]` row-major.
    pub probabilities: Vec<f32>,
    pub classes: usize,
    /// The most probable class index of each graph.
    pub predicted: Vec<usize>,
}

/// The probabilities of `graphs` (ids of `set`), `batch_size` graphs at a time.
pub fn predict_graphs<B: SparseGnnBackend>(
    model: &GraphModel<B>,
    set: &GraphSet,
    graphs: &[usize],
    batch_size: usize,
    device: &B::Device,
) -> GraphPredictions {
    let classes = set.num_classes();
    let mut probabilities = Vec::with_capacity(graphs.len() * classes);
    for chunk in graphs.chunks(batch_size.max(1)) {
        let b = set.batch::<B>(chunk, device);
        let p = softmax(model.forward(&b.graph, &b.pool, b.x), 1);
        probabilities.extend(p.into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default());
    }
    let predicted = probabilities
        .chunks(classes.max(1))
        .map(|row| row.iter().enumerate().fold((0, f32::MIN), |m, (i, &v)| if v > m.1 { (i, v) } else { m }).0)
        .collect();
    GraphPredictions { probabilities, classes, predicted }
}

/// Accuracy and mean cross-entropy of `graphs` of a labeled `set` (`None` for an empty list
/// or an unlabeled set).
pub fn score_graphs<B: SparseGnnBackend>(
    model: &GraphModel<B>,
    set: &GraphSet,
    graphs: &[usize],
    batch_size: usize,
    device: &B::Device,
) -> Option<GraphScore> {
    let labels = set.labels.as_ref()?;
    if graphs.is_empty() {
        return None;
    }
    let p = predict_graphs(model, set, graphs, batch_size, device);
    let mut correct = 0usize;
    let mut loss = 0f64;
    for (i, &g) in graphs.iter().enumerate() {
        let y = labels[g] as usize;
        correct += (p.predicted[i] == y) as usize;
        loss -= (p.probabilities[i * p.classes + y] as f64).max(1e-30).ln();
    }
    let n = graphs.len() as f64;
    Some(GraphScore { accuracy: correct as f64 / n, loss: loss / n, graphs: graphs.len() })
}
