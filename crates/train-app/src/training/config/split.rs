//! The split a run trains on: the dataset's own, or the one `--split` makes
//! (`per-class:TRAIN,VALID`, `random:TRAIN,VALID`, `mask:K`; without either, `per-class:20,30`).
//! A split that leaves a part empty is an error that gives a `--split` which fits the dataset's
//! labelled nodes; labelled nodes of one class only are warned about (every accuracy is 1).

use crate::error::{AppError, Result};
use crate::gen::{per_class_split, random_split};
use burn_sparse_gnn::data::SplitIssue;
use burn_sparse_gnn::{GraphData, Split};

pub use crate::datasets::DEFAULT_SPLIT;

/// Applies a split specification (see [`super::TrainConfig::split`]).
pub fn apply_split(data: GraphData, spec: Option<&str>, seed: u64) -> Result<GraphData> {
    if let Some(warning) = one_class_warning(&data) {
        eprintln!("warning: {warning}");
    }
    let (spec, default) = match spec {
        Some(s) => (s.to_string(), false),
        None if data.split().is_some() => return Ok(data),
        None => (DEFAULT_SPLIT.to_string(), true),
    };
    let bad =
        || AppError::Config(format!("split `{spec}`: expected per-class:TRAIN,VALID, random:TRAIN,VALID or mask:K"));
    let (kind, args) = spec.split_once(':').ok_or_else(bad)?;
    let split = match kind {
        "per-class" => {
            let (t, v) = args.split_once(',').ok_or_else(bad)?;
            let (t, v): (usize, usize) = (t.parse().map_err(|_| bad())?, v.parse().map_err(|_| bad())?);
            per_class_split(data.labels(), data.num_classes(), t, v, seed)
        }
        "random" => {
            let (t, v) = args.split_once(',').ok_or_else(bad)?;
            let (t, v): (f64, f64) = (t.parse().map_err(|_| bad())?, v.parse().map_err(|_| bad())?);
            if !(t > 0.0 && v > 0.0 && t + v < 1.0) {
                return Err(AppError::Config(format!(
                    "split `{spec}`: random:TRAIN,VALID needs TRAIN > 0, VALID > 0 and TRAIN + VALID < 1 \
                     (the rest is the test split; no split may be empty)"
                )));
            }
            random_split(data.labels(), t, v, seed)
        }
        "mask" => {
            let k: usize = args.parse().map_err(|_| bad())?;
            crate::datasets::mask_split(&data, k)?
        }
        _ => return Err(bad()),
    };
    if let Err(issue @ SplitIssue::Empty { .. }) = split.check(data.num_nodes()) {
        let which = if default { "the default split" } else { "split" };
        return Err(AppError::Config(format!(
            "{which} {spec} of dataset {}: {issue}; {}",
            data.name,
            advice(&data, seed)
        )));
    }
    let name = data.name.clone();
    data.with_split(split).map_err(|e| AppError::graph(name, e))
}

/// What to give instead of a split that left a part empty: a `--split` that fills all three
/// parts of `data` (checked), or why none can.
fn advice(data: &GraphData, seed: u64) -> String {
    let labels = data.labels();
    let mut counts = vec![0usize; data.num_classes()];
    for &l in labels.iter().filter(|&&l| l >= 0) {
        counts[l as usize] += 1;
    }
    let labelled: usize = counts.iter().sum();
    let largest = counts.iter().copied().max().unwrap_or(0);
    let fills = |s: &Split| s.check(data.num_nodes()).is_ok();
    let mut options = Vec::new();
    if largest >= 3 {
        // about 60 / 20 / 20 of the largest class, at most the default's 20 / 30
        let t = (largest * 6 / 10).clamp(1, 20);
        let v = (largest * 2 / 10).clamp(1, 30).min(largest - 1 - t).max(1);
        if fills(&per_class_split(labels, data.num_classes(), t, v, seed)) {
            options.push(format!("--split per-class:{t},{v} (the largest class has {largest} labelled nodes)"));
        }
    }
    if fills(&random_split(labels, 0.6, 0.2, seed)) {
        options.push(format!("--split random:0.6,0.2 (fractions of the {labelled} labelled nodes)"));
    }
    if options.is_empty() {
        return format!(
            "the dataset has {labelled} labelled node(s), and a split needs at least 3 (one for each of train, valid \
             and test): label more nodes (labels -1 are unlabelled)"
        );
    }
    format!("give a split that leaves nodes for every part, e.g. {}", options.join(" or "))
}

/// A warning when every labelled node of `data` has the same class: a classifier of one class
/// learns nothing and scores an accuracy of 1 on every split.
pub fn one_class_warning(data: &GraphData) -> Option<String> {
    let mut labelled = data.labels().iter().copied().filter(|&l| l >= 0);
    let first = labelled.next()?;
    let rest = labelled.clone().count();
    if labelled.any(|l| l != first) {
        return None;
    }
    Some(format!(
        "every labelled node of dataset {} ({} of them) has class {first}: a model trained on it predicts that \
         class and scores accuracy 1.0 on every split; check the labels (class ids 0, 1, 2, ...; -1 marks an \
         unlabelled node)",
        data.name,
        rest + 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn_sparse_gnn::{BuildOptions, Csr, Features};

    fn data(labels: Vec<i64>) -> GraphData {
        let n = labels.len();
        let src: Vec<i64> = (0..n as i64 - 1).collect();
        let dst: Vec<i64> = (1..n as i64).collect();
        let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap();
        let classes = labels.iter().copied().max().unwrap_or(-1).max(-1) as usize + 1;
        GraphData::new("t", adj, Features::dense(n, 1, vec![1.0; n]).unwrap(), labels, classes, None).unwrap()
    }

    #[test]
    fn an_empty_default_split_names_a_split_that_fits() {
        // 2 classes of 12 nodes: the default per-class:20,30 puts every node in train
        let d = data((0..24).map(|i| i % 2).collect());
        let e = apply_split(d.clone(), None, 1).unwrap_err().to_string();
        assert!(e.contains("the default split per-class:20,30 of dataset t: the valid split is empty"), "{e}");
        assert!(e.contains("--split per-class:7,2") && e.contains("--split random:0.6,0.2"), "{e}");
        // the advice fits
        assert!(apply_split(d.clone(), Some("per-class:7,2"), 1).is_ok());
        assert!(apply_split(d, Some("random:0.6,0.2"), 1).is_ok());
        // too few labelled nodes for any split
        let e = apply_split(data(vec![0, 1, -1, -1]), None, 1).unwrap_err().to_string();
        assert!(e.contains("2 labelled node(s)") && e.contains("at least 3"), "{e}");
    }

    #[test]
    fn labelled_nodes_of_one_class_are_warned_about() {
        let w = one_class_warning(&data(vec![2, -1, 2, 2])).unwrap();
        assert!(w.contains("(3 of them) has class 2") && w.contains("accuracy 1.0"), "{w}");
        assert!(one_class_warning(&data(vec![0, 1, 0, 0])).is_none());
        assert!(one_class_warning(&data(vec![-1, -1])).is_none());
    }
}
