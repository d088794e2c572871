// Graphs shared by the examples, generated here from a seed (no files needed).
#![allow(dead_code)]

pub mod epoch_lines;

use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};

/// A small seeded generator (SplitMix64): the examples draw the same graph on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform(); // in (0, 1]
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }

    /// The values in a random order (Fisher-Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// A stochastic block model for node classification.
pub struct Sbm {
    pub nodes: usize,
    pub classes: usize,
    /// Average number of neighbours (both directions of every edge are stored).
    pub avg_degree: usize,
    /// Fraction of a node's edges that stay within its class.
    pub homophily: f64,
    pub features: usize,
    /// Scale of each class's mean feature vector; every feature also gets unit Gaussian noise,
    /// so a single node's features identify its class only roughly.
    pub signal: f64,
    /// Training and validation nodes per class (the rest is the test split).
    pub train_per_class: usize,
    pub valid_per_class: usize,
    /// Add a self-loop to every node (a mean over the neighbours then includes the node).
    pub self_loops: bool,
    pub seed: u64,
}

impl Default for Sbm {
    fn default() -> Self {
        Self {
            nodes: 1000,
            classes: 4,
            avg_degree: 8,
            homophily: 0.8,
            features: 16,
            signal: 0.4,
            train_per_class: 20,
            valid_per_class: 30,
            self_loops: true,
            seed: 7,
        }
    }
}

impl Sbm {
    /// The graph: node `i` is in class `i % classes`; its edges go to a node of its own class
    /// with probability `homophily`, else to a node of another class; its features are its
    /// class's mean (entries `±signal`) plus noise. Aggregating over neighbours, most of them of
    /// the same class, averages the noise away: what a GNN gains over a per-node classifier.
    pub fn generate(&self) -> GraphData {
        let (n, k) = (self.nodes, self.classes);
        let mut rng = Rng::new(self.seed);
        let labels: Vec<i64> = (0..n).map(|i| (i % k) as i64).collect();
        let members: Vec<Vec<usize>> = (0..k).map(|c| (c..n).step_by(k).collect()).collect();
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for i in 0..n {
            let own = i % k;
            // each edge is stored in both directions: half the degree is drawn per node
            for _ in 0..self.avg_degree / 2 {
                let class =
                    if k == 1 || rng.uniform() < self.homophily { own } else { (own + 1 + rng.below(k - 1)) % k };
                let j = members[class][rng.below(members[class].len())];
                if j != i {
                    src.push(i as i64);
                    dst.push(j as i64);
                }
            }
        }
        let opts = BuildOptions { symmetrize: true, add_self_loops: self.self_loops, dedup: true };
        let adj = Csr::from_edges(n, &src, &dst, None, opts).expect("valid edges");
        let means: Vec<f64> =
            (0..k * self.features).map(|_| if rng.uniform() < 0.5 { -self.signal } else { self.signal }).collect();
        let mut x = Vec::with_capacity(n * self.features);
        for i in 0..n {
            for f in 0..self.features {
                x.push((means[(i % k) * self.features + f] + rng.normal()) as f32);
            }
        }
        let mut split = Split { train: Vec::new(), valid: Vec::new(), test: Vec::new() };
        for class in &members {
            let mut ids: Vec<u32> = class.iter().map(|&i| i as u32).collect();
            rng.shuffle(&mut ids);
            let (t, v) = (self.train_per_class, self.train_per_class + self.valid_per_class);
            split.train.extend(&ids[..t]);
            split.valid.extend(&ids[t..v]);
            split.test.extend(&ids[v..]);
        }
        let features = Features::dense(n, self.features, x).expect("one row per node");
        GraphData::new("sbm", adj, features, labels, k, Some(split)).expect("valid data")
    }
}
