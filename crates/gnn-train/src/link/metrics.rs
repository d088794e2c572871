//! Ranking metrics of link prediction over a split's positive and negative pair scores: ROC-AUC,
//! average precision, Hits@K (OGB's definition) and MRR against the split's shared negatives.
//! Any monotone transform of the scores (logits or probabilities) gives the same values.

use serde::{Deserialize, Serialize};

/// The metrics of one split.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkMetrics {
    /// ROC-AUC: the probability that a positive outscores a negative (ties count half).
    pub auc: f64,
    /// Average precision (scikit-learn's definition: equal scores form one threshold).
    pub ap: f64,
    /// Hits@K: the share of positives scored above the K-th best negative (OGB's definition;
    /// 1 when there are fewer than K negatives).
    pub hits: f64,
    /// The K of [`Self::hits`].
    pub hits_k: usize,
    /// Mean reciprocal rank of each positive among the split's negatives: rank = 1 + the
    /// negatives above it + half the negatives tied with it.
    pub mrr: f64,
    /// Positive pairs scored.
    pub positives: usize,
    /// Negative pairs scored.
    pub negatives: usize,
}

fn sorted(v: &[f32]) -> Vec<f64> {
    let mut s: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    s.sort_by(f64::total_cmp);
    s
}

/// Negatives strictly below and at most `x` in the ascending `neg`: `(below, at_most)`.
fn counts(neg: &[f64], x: f64) -> (usize, usize) {
    (neg.partition_point(|&v| v < x), neg.partition_point(|&v| v <= x))
}

/// ROC-AUC of `pos` against `neg` (Mann-Whitney, ties half); 0.5 when either is empty.
pub fn auc(pos: &[f32], neg: &[f32]) -> f64 {
    if pos.is_empty() || neg.is_empty() {
        return 0.5;
    }
    let neg = sorted(neg);
    let wins: f64 = pos
        .iter()
        .map(|&p| {
            let (below, at_most) = counts(&neg, p as f64);
            below as f64 + 0.5 * (at_most - below) as f64
        })
        .sum();
    wins / (pos.len() as f64 * neg.len() as f64)
}

/// Average precision of `pos` among `pos` and `neg` (scikit-learn's definition).
pub fn average_precision(pos: &[f32], neg: &[f32]) -> f64 {
    if pos.is_empty() {
        return 0.0;
    }
    let mut all: Vec<(f64, bool)> =
        pos.iter().map(|&s| (s as f64, true)).chain(neg.iter().map(|&s| (s as f64, false))).collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut tp, mut fp, mut ap, mut last_recall) = (0usize, 0usize, 0.0f64, 0.0f64);
    let mut i = 0;
    while i < all.len() {
        let s = all[i].0;
        while i < all.len() && all[i].0 == s {
            if all[i].1 {
                tp += 1;
            } else {
                fp += 1;
            }
            i += 1;
        }
        let recall = tp as f64 / pos.len() as f64;
        ap += (recall - last_recall) * tp as f64 / (tp + fp) as f64;
        last_recall = recall;
    }
    ap
}

/// All metrics of a split; `k` is the K of Hits@K.
pub fn link_metrics(pos: &[f32], neg: &[f32], k: usize) -> LinkMetrics {
    let sneg = sorted(neg);
    let hits = if sneg.len() < k.max(1) || pos.is_empty() {
        1.0
    } else {
        let kth = sneg[sneg.len() - k.max(1)];
        pos.iter().filter(|&&p| p as f64 > kth).count() as f64 / pos.len() as f64
    };
    let mrr = if pos.is_empty() {
        0.0
    } else {
        pos.iter()
            .map(|&p| {
                let (below, at_most) = counts(&sneg, p as f64);
                let above = sneg.len() - at_most;
                let ties = at_most - below;
                1.0 / (1.0 + above as f64 + 0.5 * ties as f64)
            })
            .sum::<f64>()
            / pos.len() as f64
    };
    LinkMetrics {
        auc: auc(pos, neg),
        ap: average_precision(pos, neg),
        hits,
        hits_k: k,
        mrr,
        positives: pos.len(),
        negatives: neg.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_and_reversed_rankings() {
        let m = link_metrics(&[3.0, 4.0], &[1.0, 2.0], 1);
        assert_eq!((m.auc, m.ap, m.hits, m.mrr), (1.0, 1.0, 1.0, 1.0));
        let m = link_metrics(&[1.0, 2.0], &[3.0, 4.0], 1);
        assert_eq!((m.auc, m.hits), (0.0, 0.0));
        // ranks 3 and 3 (two negatives above each): 1/3
        assert!((m.mrr - 1.0 / 3.0).abs() < 1e-12);
        // sorted: 4n 3n 2p 1p: precision at the positives 1/3 and 2/4
        assert!((m.ap - (0.5 * 1.0 / 3.0 + 0.5 * 0.5)).abs() < 1e-12);
    }

    #[test]
    fn ties_count_half() {
        assert_eq!(auc(&[1.0], &[1.0]), 0.5);
        let m = link_metrics(&[1.0, 2.0], &[1.0, 0.0], 1);
        // pairs: (1 vs 1) 0.5, (1 vs 0) 1, (2 vs 1) 1, (2 vs 0) 1 -> 3.5 / 4
        assert_eq!(m.auc, 0.875);
        // the best negative scores 1: only the positive at 2 is strictly above it
        assert_eq!(m.hits, 0.5);
        // ranks: 2 -> 1; 1 -> 1 + 0 + 0.5
        assert!((m.mrr - (1.0 + 1.0 / 1.5) / 2.0).abs() < 1e-12);
        // scikit-learn: thresholds 2 (1 tp), 1 (2 tp, 1 fp), 0: AP = 0.5 * 1 + 0.5 * 2/3
        assert!((m.ap - (0.5 + 0.5 * 2.0 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn hits_with_fewer_negatives_than_k_is_one() {
        assert_eq!(link_metrics(&[0.0], &[5.0], 50).hits, 1.0);
        let m = link_metrics(&[0.0, 10.0], &[5.0, 1.0, 2.0], 2);
        // second-best negative 2: the positive at 10 beats it
        assert_eq!(m.hits, 0.5);
    }
}
