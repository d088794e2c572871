//! The stochastic block model with Gaussian class-centred features, and the splits.

use crate::error::{AppError, Result};
use crate::host_memory::check_fits;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::{check_classes, check_nodes, config};

/// A stochastic block model with Gaussian class-centred features.
#[derive(Clone, Debug, PartialEq)]
pub struct SbmSpec {
    pub nodes: usize,
    pub classes: usize,
    /// Mean degree (both directions counted once per node).
    pub avg_degree: usize,
    /// Probability that an edge stays inside its class.
    pub homophily: f64,
    pub features: usize,
    /// Distance of the class centres (in units of the per-feature noise).
    pub signal: f32,
    pub seed: u64,
}

impl Default for SbmSpec {
    fn default() -> Self {
        Self { nodes: 3000, classes: 5, avg_degree: 10, homophily: 0.8, features: 64, signal: 0.35, seed: 17 }
    }
}

/// Train and valid nodes per class of the SBM's split; every class needs one more for test.
const SBM_TRAIN: usize = 20;
const SBM_VALID: usize = 30;

/// Bytes per generated SBM edge pair at the peak (both endpoint lists, the symmetrised edge
/// tuples and their merged copy).
const SBM_BYTES_PER_PAIR: u64 = 48;
impl SbmSpec {
    /// Checks every option before anything is generated: counts that 32-bit ids hold, a
    /// probability for the homophily, a degree a simple graph can have, enough nodes per class
    /// for a split with test nodes, and memory for the edges and features.
    pub fn check(&self) -> Result<()> {
        let n = self.nodes;
        check_nodes("sbm", n)?;
        check_classes("sbm", self.classes, 2, n)?;
        let per_class = n / self.classes;
        if per_class <= SBM_TRAIN + SBM_VALID {
            return Err(config(format!(
                "sbm: --nodes {n} with --classes {} gives {per_class} nodes per class, but the split takes \
                 {SBM_TRAIN} train + {SBM_VALID} valid per class and needs test nodes: use at least {} nodes",
                self.classes,
                (SBM_TRAIN + SBM_VALID + 1) * self.classes
            )));
        }
        if self.features == 0 {
            return Err(config("sbm: --features 0: at least one feature is needed".into()));
        }
        if !(self.homophily.is_finite() && (0.0..=1.0).contains(&self.homophily)) {
            return Err(config(format!("sbm: --homophily {} must be a probability in [0, 1]", self.homophily)));
        }
        if !self.signal.is_finite() {
            return Err(config(format!("sbm: signal {} must be finite", self.signal)));
        }
        if self.avg_degree > n - 1 {
            return Err(config(format!(
                "sbm: --avg-degree {} is more than nodes - 1 = {} (the most a node can have without duplicates)",
                self.avg_degree,
                n - 1
            )));
        }
        let pairs = (n as u64).saturating_mul(self.avg_degree.div_ceil(2) as u64);
        let need = pairs
            .saturating_mul(SBM_BYTES_PER_PAIR)
            .saturating_add((n as u64).saturating_mul(self.features as u64).saturating_mul(4))
            .saturating_add((n as u64).saturating_mul(64));
        check_fits(need, || format!("sbm: --nodes {n} --avg-degree {} --features {}", self.avg_degree, self.features))
    }
}

fn gauss(rng: &mut StdRng) -> f32 {
    // Box-Muller
    let u1: f32 = rng.random::<f32>().max(1e-7);
    let u2: f32 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
}

/// Per-class random split: `train` and `valid` nodes per class, the rest test.
pub fn per_class_split(labels: &[i64], classes: usize, train: usize, valid: usize, seed: u64) -> Split {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut by_class: Vec<Vec<u32>> = vec![Vec::new(); classes];
    for (i, &l) in labels.iter().enumerate() {
        if l >= 0 {
            by_class[l as usize].push(i as u32);
        }
    }
    let mut s = Split::default();
    for nodes in &mut by_class {
        nodes.shuffle(&mut rng);
        let t = train.min(nodes.len());
        let v = valid.min(nodes.len() - t);
        s.train.extend_from_slice(&nodes[..t]);
        s.valid.extend_from_slice(&nodes[t..t + v]);
        s.test.extend_from_slice(&nodes[t + v..]);
    }
    s.train.sort_unstable();
    s.valid.sort_unstable();
    s.test.sort_unstable();
    s
}

/// Random split: fractions `train` and `valid` of the labeled nodes, the rest test.
pub fn random_split(labels: &[i64], train: f64, valid: f64, seed: u64) -> Split {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ids: Vec<u32> = labels.iter().enumerate().filter(|(_, &l)| l >= 0).map(|(i, _)| i as u32).collect();
    ids.shuffle(&mut rng);
    let n = ids.len();
    let (a, b) = ((n as f64 * train) as usize, (n as f64 * (train + valid)) as usize);
    let mut s = Split { train: ids[..a].to_vec(), valid: ids[a..b].to_vec(), test: ids[b..].to_vec() };
    s.train.sort_unstable();
    s.valid.sort_unstable();
    s.test.sort_unstable();
    s
}

/// Generates the SBM dataset.
pub fn sbm(spec: &SbmSpec) -> Result<GraphData> {
    spec.check()?;
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let n = spec.nodes;
    let labels: Vec<i64> = (0..n).map(|i| (i % spec.classes) as i64).collect();
    let mut members: Vec<Vec<i64>> = vec![Vec::new(); spec.classes];
    for (i, &l) in labels.iter().enumerate() {
        members[l as usize].push(i as i64);
    }
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for (i, &label) in labels.iter().enumerate() {
        for _ in 0..spec.avg_degree.div_ceil(2) {
            let same = rng.random::<f64>() < spec.homophily;
            let mut c = label as usize;
            if !same {
                c = (c + rng.random_range(1..spec.classes)) % spec.classes;
            }
            let j = members[c][rng.random_range(0..members[c].len())];
            if j != i as i64 {
                src.push(i as i64);
                dst.push(j);
            }
        }
    }
    let adj =
        Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).map_err(|e| AppError::graph("sbm", e))?;
    let centres: Vec<f32> = (0..spec.classes * spec.features).map(|_| gauss(&mut rng) * spec.signal).collect();
    let mut x = vec![0.0f32; n * spec.features];
    for i in 0..n {
        let c = labels[i] as usize;
        for f in 0..spec.features {
            x[i * spec.features + f] = centres[c * spec.features + f] + gauss(&mut rng);
        }
    }
    let features = Features::dense(n, spec.features, x).map_err(|e| AppError::graph("sbm", e))?;
    let split = per_class_split(&labels, spec.classes, SBM_TRAIN, SBM_VALID, spec.seed.wrapping_add(1));
    GraphData::new("sbm", adj, features, labels, spec.classes, Some(split)).map_err(|e| AppError::graph("sbm", e))
}
