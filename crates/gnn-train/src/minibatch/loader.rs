//! The loader of mini-batches: the training seeds shuffled every epoch, cut into batches, each
//! batch sampled and assembled while the one before it trains.

use super::sampler::{MiniBatch, MiniBatchSource};
use burn::data::dataloader::{DataLoader, DataLoaderIterator, Progress};
use burn_sparse_gnn::SparseGnnBackend;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

/// burn-train's loader of mini-batches over `seeds` (the training nodes): each epoch a new
/// permutation (seeded by the seed and the epoch, so a resumed run repeats it), batches of
/// `batch_size` seeds, the last one smaller. With `prefetch` > 0 a thread builds the batches,
/// at most `prefetch` ahead of the training step; 0 builds each batch when it is asked for.
///
/// A batch that cannot be built (a device failure: the seeds and options were checked when the
/// loader was made) panics with the reason, on the training thread.
pub struct MiniBatchLoader<B: SparseGnnBackend> {
    source: Arc<MiniBatchSource<B>>,
    seeds: Arc<Vec<u32>>,
    batch_size: usize,
    seed: u64,
    epoch: Arc<AtomicUsize>,
    prefetch: usize,
}

impl<B: SparseGnnBackend> MiniBatchLoader<B> {
    /// `first_epoch`: the epochs already trained (0, or the epoch a run resumes from).
    ///
    /// Errors when a seed is not a node of the graph, a seed repeats or `batch_size` is 0.
    pub fn new(
        source: Arc<MiniBatchSource<B>>,
        seeds: Vec<u32>,
        batch_size: usize,
        seed: u64,
        first_epoch: usize,
        prefetch: usize,
    ) -> Result<Self, crate::TrainError> {
        if batch_size == 0 {
            return Err(crate::TrainError::Data("the batch size must be at least 1".into()));
        }
        let n = source.sampler.nodes();
        let mut seen = vec![false; n];
        for &s in &seeds {
            if s as usize >= n {
                return Err(crate::TrainError::Data(format!("seed {s} is not a node of the graph (0..{n})")));
            }
            if std::mem::replace(&mut seen[s as usize], true) {
                return Err(crate::TrainError::Data(format!("seed {s} appears twice")));
            }
        }
        Ok(Self {
            source,
            seeds: Arc::new(seeds),
            batch_size,
            seed,
            epoch: Arc::new(AtomicUsize::new(first_epoch)),
            prefetch,
        })
    }

    /// Batches per epoch.
    pub fn batches(&self) -> usize {
        self.seeds.len().div_ceil(self.batch_size)
    }

    /// The seeds of every batch of `epoch` (1-based), in order.
    pub fn epoch_batches(&self, epoch: usize) -> Vec<Vec<u32>> {
        let mut order = self.seeds.as_ref().clone();
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        order.shuffle(&mut rng);
        order.chunks(self.batch_size).map(|c| c.to_vec()).collect()
    }
}

struct Batches<B: SparseGnnBackend> {
    receiver: Option<Receiver<Result<MiniBatch<B>, String>>>,
    worker: Option<JoinHandle<()>>,
    inline: Option<(Arc<MiniBatchSource<B>>, std::vec::IntoIter<Vec<u32>>, usize)>,
    next: usize,
    done: usize,
    total: usize,
}

impl<B: SparseGnnBackend> Iterator for Batches<B> {
    type Item = MiniBatch<B>;

    fn next(&mut self) -> Option<MiniBatch<B>> {
        let got = match (&mut self.inline, &self.receiver) {
            (Some((source, batches, epoch)), _) => {
                let seeds = batches.next()?;
                source.batch(&seeds, (*epoch, self.next)).map_err(|e| e.to_string())
            }
            (None, Some(r)) => r.recv().ok()?,
            (None, None) => return None,
        };
        self.next += 1;
        match got {
            Ok(b) => {
                self.done += b.labels.dims()[0];
                Some(b)
            }
            Err(e) => panic!("mini-batch {} could not be built: {e}", self.next),
        }
    }
}

impl<B: SparseGnnBackend> DataLoaderIterator<MiniBatch<B>> for Batches<B> {
    fn progress(&self) -> Progress {
        Progress::new(self.done, self.total)
    }
}

impl<B: SparseGnnBackend> Drop for Batches<B> {
    fn drop(&mut self) {
        // the worker's next send fails once the receiver is gone
        self.receiver.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

impl<B: SparseGnnBackend> DataLoader<B, MiniBatch<B>> for MiniBatchLoader<B> {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<MiniBatch<B>> + 'a> {
        let epoch = self.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        let batches = self.epoch_batches(epoch);
        let total = self.seeds.len();
        if self.prefetch == 0 {
            return Box::new(Batches {
                receiver: None,
                worker: None,
                inline: Some((self.source.clone(), batches.into_iter(), epoch)),
                next: 0,
                done: 0,
                total,
            });
        }
        let (send, receiver) = sync_channel(self.prefetch - 1);
        let source = self.source.clone();
        let worker = std::thread::Builder::new()
            .name("mini-batches".into())
            .spawn(move || {
                for (i, seeds) in batches.iter().enumerate() {
                    let b = source.batch(seeds, (epoch, i)).map_err(|e| e.to_string());
                    let failed = b.is_err();
                    if send.send(b).is_err() || failed {
                        return;
                    }
                }
            })
            .ok();
        Box::new(Batches { receiver: Some(receiver), worker, inline: None, next: 0, done: 0, total })
    }

    fn num_items(&self) -> usize {
        self.seeds.len()
    }

    fn to_device(&self, _device: &B::Device) -> Arc<dyn DataLoader<B, MiniBatch<B>>> {
        // the batches are built on the sampler's device
        Arc::new(self.share(self.seeds.clone()))
    }

    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<B, MiniBatch<B>>> {
        let end = end.min(self.seeds.len());
        Arc::new(self.share(Arc::new(self.seeds[start.min(end)..end].to_vec())))
    }
}

impl<B: SparseGnnBackend> MiniBatchLoader<B> {
    fn share(&self, seeds: Arc<Vec<u32>>) -> Self {
        Self {
            source: self.source.clone(),
            seeds,
            batch_size: self.batch_size,
            seed: self.seed,
            epoch: self.epoch.clone(),
            prefetch: self.prefetch,
        }
    }
}
