//! Typed launch configuration of the kernels.
//!
//! Every tunable launch parameter is a [`Choice`]: `Auto` takes the measured heuristic of
//! [`crate::heuristics`] (or the documented default), `Forced(v)` takes `v` as given (for
//! benchmarks and tests). Nothing here reads the environment: a [`KernelConfig`] is a value
//! that the caller builds and passes in (in `burn-sparse-gnn` through `GraphOptions`).

use serde::{Deserialize, Serialize};

/// A launch parameter: the measured heuristic, or a forced value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice<T> {
    /// Chosen by the heuristic (see each field's documentation).
    #[default]
    Auto,
    /// This value, whatever the heuristic would choose.
    Forced(T),
}

impl<T: Copy> Choice<T> {
    /// The forced value, or `auto()`.
    pub fn resolve(self, auto: impl FnOnce() -> T) -> T {
        match self {
            Choice::Auto => auto(),
            Choice::Forced(v) => v,
        }
    }

    /// Whether a value is forced.
    pub fn is_forced(&self) -> bool {
        matches!(self, Choice::Forced(_))
    }
}

/// Whether kernels may use plane (warp) operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlaneUse {
    /// Plane operations where the device has them (CUDA), shared memory elsewhere.
    #[default]
    Auto,
    /// The shared-memory fallbacks on every device (how a GPU tests them).
    SharedMemory,
}

/// The GE-SpMM group kernel (`spmm::kernel`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SpmmConfig {
    /// Features per tile. Auto: [`crate::heuristics::spmm_tile_features`] (the gathered slice of
    /// the input within an L2 budget, rows of at least 128 bytes).
    pub tile_features: Choice<usize>,
    /// Most lanes per slot (one lane per vector of the tile). Auto: 32.
    pub max_lanes: Choice<u32>,
    /// Threads per cube. Auto: 256.
    pub threads: Choice<u32>,
    /// Edges loaded ahead per lane. Auto: 4.
    pub unroll: Choice<u32>,
    /// Most f32 staging vectors (of the split rows' partial sums) one launch holds. Auto: the
    /// kernels' 32-bit index range; where a graph's staging slots times the feature vectors
    /// exceed it, the feature tiles run in passes over one reused staging buffer (the results
    /// are the same). A pass holds at least one vector per slot.
    #[serde(default)]
    pub stage_vectors: Choice<usize>,
}

/// The hot-column pass of the split SpMM (`spmm::hot`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HotConfig {
    /// Narrowest feature width the split runs at. Auto: [`crate::heuristics::HOT_MIN_WIDTH`]
    /// (measured slower below it); a structure whose split was forced runs it at any width that
    /// is a multiple of the vector width.
    pub min_width: Choice<usize>,
    /// Bytes of each hot column's row in one shared-memory tile. Auto: 128.
    pub tile_bytes: Choice<usize>,
    /// Threads per cube. Auto: 1024.
    pub threads: Choice<u32>,
    /// Cubes (row blocks). Auto: as many as fit on the device's multiprocessors.
    pub blocks: Choice<usize>,
    /// Edges summed ahead per slot without plane operations. Auto: 4.
    pub unroll: Choice<u32>,
}

/// ES-SpMM (`sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SampleConfig {
    /// Most lanes per slot. Auto: 32.
    pub max_lanes: Choice<u32>,
}

/// How MaxK selects the `k` largest entries of a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaxkSelect {
    /// Register-key bisection for rows of at most 512 entries, radix histogram above.
    #[default]
    Auto,
    /// The radix histogram at every width.
    Radix,
}

/// Launch configuration of every kernel family. `Default` is the measured heuristics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KernelConfig {
    /// Plane operations or their shared-memory fallbacks.
    pub planes: PlaneUse,
    /// SpMM group kernel.
    pub spmm: SpmmConfig,
    /// Hot-column pass of the split SpMM.
    pub hot: HotConfig,
    /// Sampled SpMM.
    pub sample: SampleConfig,
    /// MaxK selection.
    pub maxk: MaxkSelect,
}

impl KernelConfig {
    /// The configuration with every plane operation replaced by its shared-memory fallback.
    pub fn shared_memory_only(self) -> Self {
        Self { planes: PlaneUse::SharedMemory, ..self }
    }
}
