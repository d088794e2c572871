//! Which graphs train and which are scored: stratified K-fold cross-validation (the GIN
//! paper's protocol) and a stratified train / valid / test split. Both are seeded and written
//! into the run folder, so that eval, predict and a peer script read the same assignment.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

/// The graph ids of each class, in order, shuffled with `seed`.
fn shuffled_classes(labels: &[i64], seed: u64) -> Vec<Vec<usize>> {
    let classes = labels.iter().map(|&l| l.max(0) as usize + 1).max().unwrap_or(0);
    let mut by_class = vec![Vec::new(); classes];
    for (g, &l) in labels.iter().enumerate() {
        by_class[l.max(0) as usize].push(g);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    for ids in &mut by_class {
        ids.shuffle(&mut rng);
    }
    by_class
}

/// `k` stratified folds of the graphs whose class indices are `labels` (`0..classes`): each
/// class's graphs, shuffled with `seed`, are dealt to the folds in turn, continuing from fold to
/// fold across classes, so fold sizes differ by at most one and each class is spread evenly.
/// Each fold's ids are sorted.
pub fn stratified_folds(labels: &[i64], k: usize, seed: u64) -> Result<Vec<Vec<usize>>, String> {
    if k < 2 {
        return Err(format!("cross-validation needs at least 2 folds, got {k}"));
    }
    if labels.len() < k {
        return Err(format!("{k} folds need at least {k} graphs; the dataset has {}", labels.len()));
    }
    let mut folds = vec![Vec::new(); k];
    let mut next = 0;
    for ids in shuffled_classes(labels, seed) {
        for g in ids {
            folds[next % k].push(g);
            next += 1;
        }
    }
    for f in &mut folds {
        f.sort_unstable();
    }
    Ok(folds)
}

/// A train / valid / test assignment of graph ids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphSplit {
    pub train: Vec<usize>,
    pub valid: Vec<usize>,
    pub test: Vec<usize>,
}

impl GraphSplit {
    /// A stratified split: of each class (shuffled with `seed`) a fraction `valid` goes to
    /// validation and `test` to test (rounded), the rest trains. Every part must be non-empty.
    pub fn stratified(labels: &[i64], valid: f64, test: f64, seed: u64) -> Result<Self, String> {
        if !(0.0..1.0).contains(&valid) || !(0.0..1.0).contains(&test) || valid + test >= 1.0 {
            return Err(format!(
                "the valid ({valid}) and test ({test}) fractions must be in [0, 1) and sum to less than 1"
            ));
        }
        let mut split = GraphSplit { train: Vec::new(), valid: Vec::new(), test: Vec::new() };
        for ids in shuffled_classes(labels, seed) {
            let n = ids.len() as f64;
            let (nt, nv) = ((n * test).round() as usize, (n * valid).round() as usize);
            let nv = nv.min(ids.len() - nt.min(ids.len()));
            let nt = nt.min(ids.len());
            split.test.extend_from_slice(&ids[..nt]);
            split.valid.extend_from_slice(&ids[nt..nt + nv]);
            split.train.extend_from_slice(&ids[nt + nv..]);
        }
        for (what, ids) in [("training", &split.train), ("validation", &split.valid), ("test", &split.test)] {
            if ids.is_empty() {
                return Err(format!(
                    "the {what} part of a split of {} graphs (valid {valid}, test {test}) is empty",
                    labels.len()
                ));
            }
        }
        split.train.sort_unstable();
        split.valid.sort_unstable();
        split.test.sort_unstable();
        Ok(split)
    }

    /// Fold `f` of `folds` as a split: the fold scores (as `valid` and `test`: the GIN protocol
    /// has no separate validation), the other folds train.
    pub fn from_fold(folds: &[Vec<usize>], f: usize) -> Self {
        let train = folds.iter().enumerate().filter(|&(i, _)| i != f).flat_map(|(_, ids)| ids.iter().copied());
        let mut train: Vec<usize> = train.collect();
        train.sort_unstable();
        GraphSplit { train, valid: folds[f].clone(), test: folds[f].clone() }
    }

    /// Checks that every id is below `graphs` and no graph is in two parts (a split file read
    /// back).
    pub fn check(&self, graphs: usize) -> Result<(), String> {
        let mut seen = vec![0u8; graphs];
        for (part, ids) in [(1u8, &self.train), (2, &self.valid), (4, &self.test)] {
            for &g in ids {
                if g >= graphs {
                    return Err(format!("graph id {g} is out of range (the dataset has {graphs} graphs)"));
                }
                seen[g] |= part;
            }
        }
        if let Some(g) = seen.iter().position(|&s| s & 1 != 0 && s != 1) {
            return Err(format!("graph {g} both trains and is scored"));
        }
        if self.train.is_empty() {
            return Err("the split has no training graphs".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_are_stratified_disjoint_and_cover() {
        let labels: Vec<i64> = (0..103).map(|i| if i % 3 == 0 { 1 } else { 0 }).collect();
        let folds = stratified_folds(&labels, 10, 7).unwrap();
        let mut all: Vec<usize> = folds.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..103).collect::<Vec<_>>());
        for f in &folds {
            assert!((10..=11).contains(&f.len()), "fold size {}", f.len());
            let ones = f.iter().filter(|&&g| labels[g] == 1).count();
            assert!((3..=4).contains(&ones), "class 1 count {ones}");
        }
        assert_eq!(folds, stratified_folds(&labels, 10, 7).unwrap());
        assert_ne!(folds, stratified_folds(&labels, 10, 8).unwrap());
        assert!(stratified_folds(&labels, 1, 7).is_err());
        assert!(stratified_folds(&labels[..5], 10, 7).is_err());
    }

    #[test]
    fn split_is_stratified_and_checked() {
        let labels: Vec<i64> = (0..200).map(|i| (i % 4) as i64).collect();
        let s = GraphSplit::stratified(&labels, 0.1, 0.2, 3).unwrap();
        assert_eq!((s.train.len(), s.valid.len(), s.test.len()), (140, 20, 40));
        s.check(200).unwrap();
        assert!(s.check(150).is_err());
        assert!(GraphSplit::stratified(&labels, 0.5, 0.5, 3).is_err());
        assert!(GraphSplit::stratified(&labels[..3], 0.1, 0.1, 3).is_err());
        let folds = stratified_folds(&labels, 5, 1).unwrap();
        let f = GraphSplit::from_fold(&folds, 2);
        assert_eq!(f.train.len() + f.test.len(), 200);
        f.check(200).unwrap();
    }
}
