//! What the model and its front ends need of a convolution: [`ConvSpec`], and the shapes and
//! byte counts it speaks in.

use super::options::ConvOptions;
use burn::module::Module;
use burn::tensor::backend::Backend;

/// Where one convolution sits in the model's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerShape {
    /// Input width.
    pub d_in: usize,
    /// Output width.
    pub d_out: usize,
    /// Whether the layer produces the logits (the last convolution of the classic stack).
    pub logits: bool,
}

/// One convolution's place in the memory estimate ([`crate::memory_estimate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EstimateLayer {
    /// Input width.
    pub width_in: u64,
    /// Output width.
    pub width_out: u64,
    /// The model's hidden width.
    pub hidden: u64,
    /// Bytes per element of what the layer keeps for the backward pass (2 in mixed precision).
    pub saved: u64,
    /// Whether the model runs in mixed precision.
    pub half: bool,
    /// Whether the layer reads dense rows (not MaxK's sparse ones).
    pub dense_in: bool,
    /// Whether it is the classic stack's first convolution (it reads the input features).
    pub classic_first: bool,
}

/// Bytes one convolution keeps for its backward pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SavedBytes {
    /// Per node of the graph.
    pub per_node: u64,
    /// Per edge of the graph.
    pub per_edge: u64,
}

/// What the model and its front ends need of a convolution besides its forward pass.
/// Implemented by the convolution's configuration type.
pub trait ConvSpec {
    /// The layer.
    type Layer<B: Backend>: Module<B>;

    /// Builds the layer at `shape` of a stack with the options `opts`.
    fn layer<B: Backend>(opts: &ConvOptions, shape: LayerShape, device: &B::Device) -> Self::Layer<B>;

    /// Checks the options this convolution reads (after the model's own checks).
    fn check(_opts: &ConvOptions) -> Result<(), String> {
        Ok(())
    }

    /// Whether the graph must contain self-loops.
    fn needs_self_loops() -> bool {
        false
    }

    /// Whether the layer can aggregate a part's own columns and its halo columns separately on
    /// dense states: what the split halo layout of a partitioned graph needs
    /// ([`HaloLayout::Split`](crate::partitioned::devices::HaloLayout::Split)).
    fn supports_split_halo(_opts: &ConvOptions) -> bool {
        false
    }

    /// Whether the layer aggregates its neighbours' rows linearly, so that boundary sampling
    /// ([`BoundarySampling`](crate::partitioned::devices::BoundarySampling)) may scale the halo
    /// rows that cross.
    fn supports_boundary_sampling(_opts: &ConvOptions) -> bool {
        false
    }

    /// Whether the layer sums its neighbours' rows (no mean, maximum or softmax over them): on a
    /// sampled block ([`crate::GnnModel::forward_blocks`]) each sampled edge of a row then
    /// weighs `degree / sampled` so that the sum estimates the whole neighbourhood's.
    fn sums_neighbours(_opts: &ConvOptions) -> bool {
        false
    }

    /// Parameters of one layer from `d_in` to `d_out` features.
    fn parameter_count(opts: &ConvOptions, d_in: u64, d_out: u64) -> u64;

    /// What one layer keeps for the backward pass, besides the state it reads (which the
    /// estimate counts for every layer).
    fn saved_bytes(opts: &ConvOptions, layer: &EstimateLayer) -> SavedBytes;

    /// Rows a sparse kernel of this layer stages per split row (2 where it keeps an arg-max
    /// beside the values).
    fn staged_rows(_opts: &ConvOptions) -> u64 {
        1
    }
}
