//! Graph convolutions and their registry.
//!
//! **Adding a convolution** is one file and one line. The file, `conv/<name>.rs`, holds the layer
//! (a Burn [`Module`] with an inherent `forward(&self, &Graph<B>, &Hidden<B>, Precision) ->
//! Tensor<B, 2>`) and a type that implements [`ConvSpec`]: how the model builds one layer of its
//! stack, which checks and layouts apply, and what the layer holds for the memory estimate. The
//! line goes in the `convolutions!` list at the end of this file: it declares the module, the
//! [`ConvKind`] variant (whose lowercase name is the command-line and config-file name) and the
//! [`Conv`] variant, and routes every [`ConvKind`] and [`Conv`] method to the new type. Options
//! of the layer's own (as GraphSAGE's aggregation) are fields of [`ConvOptions`], of
//! [`GnnModelConfig`](crate::GnnModelConfig) and flags of the front end.

mod options;
mod spec;

pub use options::{ConvOptions, GcnNorm, SageAggr};
pub use spec::{ConvSpec, EstimateLayer, LayerShape, SavedBytes};

use crate::hidden::Hidden;
use crate::precision::Precision;
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{Graph, SparseGnnBackend};
use serde::{Deserialize, Serialize};

/// Writes the registry from the list of convolutions: `Variant = "name" => module::Spec,
/// Layer;` per convolution (see the module docs).
macro_rules! convolutions {
    ($($(#[$meta:meta])* $variant:ident = $name:literal => $module:ident :: $spec:ident, $layer:ident;)+) => {
        $(pub mod $module;)+

        /// Which convolution the model stacks. A variant's serde name (config files,
        /// `config.json`, `results.json`), its command-line name (clap's `ValueEnum`, with the
        /// `clap` feature) and [`ConvKind::name`] are its lowercase name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        #[serde(rename_all = "lowercase")]
        pub enum ConvKind {
            $($variant,)+
        }

        impl ConvKind {
            /// Every convolution, in the registry's order.
            pub const ALL: &'static [ConvKind] = &[$(ConvKind::$variant),+];

            /// Short name (`gcn`, `sage`, ...).
            pub fn name(&self) -> &'static str {
                match self {
                    $(ConvKind::$variant => $name,)+
                }
            }

            /// [`ConvSpec::check`] of this convolution.
            pub fn check(&self, opts: &ConvOptions) -> Result<(), String> {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::check(opts),)+
                }
            }

            /// [`ConvSpec::needs_self_loops`] of this convolution.
            pub fn needs_self_loops(&self) -> bool {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::needs_self_loops(),)+
                }
            }

            /// [`ConvSpec::supports_split_halo`] of this convolution with the options `opts`.
            pub fn supports_split_halo(&self, opts: &ConvOptions) -> bool {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::supports_split_halo(opts),)+
                }
            }

            /// [`ConvSpec::supports_boundary_sampling`] of this convolution with the options `opts`.
            pub fn supports_boundary_sampling(&self, opts: &ConvOptions) -> bool {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::supports_boundary_sampling(opts),)+
                }
            }

            /// [`ConvSpec::sums_neighbours`] of this convolution with the options `opts`.
            pub fn sums_neighbours(&self, opts: &ConvOptions) -> bool {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::sums_neighbours(opts),)+
                }
            }

            /// [`ConvSpec::parameter_count`] of one layer.
            pub fn parameter_count(&self, opts: &ConvOptions, d_in: u64, d_out: u64) -> u64 {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::parameter_count(opts, d_in, d_out),)+
                }
            }

            /// [`ConvSpec::saved_bytes`] of one layer.
            pub fn saved_bytes(&self, opts: &ConvOptions, layer: &EstimateLayer) -> SavedBytes {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::saved_bytes(opts, layer),)+
                }
            }

            /// [`ConvSpec::staged_rows`] of this convolution.
            pub fn staged_rows(&self, opts: &ConvOptions) -> u64 {
                match self {
                    $(ConvKind::$variant => <$module::$spec as ConvSpec>::staged_rows(opts),)+
                }
            }
        }

        /// One convolution of the stack.
        #[derive(Module, Debug)]
        pub enum Conv<B: Backend> {
            $($(#[$meta])* $variant($module::$layer<B>),)+
        }

        impl<B: Backend> Conv<B> {
            /// Builds a layer of kind `kind` at `shape` of a stack with the options `opts`.
            pub fn new(kind: ConvKind, opts: &ConvOptions, shape: LayerShape, device: &B::Device) -> Self {
                match kind {
                    $(ConvKind::$variant => Conv::$variant(<$module::$spec as ConvSpec>::layer::<B>(opts, shape, device)),)+
                }
            }

            /// Which convolution this is.
            pub fn kind(&self) -> ConvKind {
                match self {
                    $(Conv::$variant(_) => ConvKind::$variant,)+
                }
            }
        }

        impl<B: SparseGnnBackend> Conv<B> {
            /// The layer's forward pass on `h` (on a part of a partitioned graph: the part's
            /// rows then its halo rows; the result has the part's rows).
            pub fn forward(&self, g: &Graph<B>, h: &Hidden<B>, precision: Precision) -> Tensor<B, 2> {
                match self {
                    $(Conv::$variant(c) => c.forward(g, h, precision),)+
                }
            }
        }
    };
}

convolutions! {
    /// GCN (Kipf & Welling).
    Gcn = "gcn" => gcn::GcnConvConfig, GcnConv;
    /// GraphSAGE (Hamilton et al.).
    Sage = "sage" => sage::SageConvConfig, SageConv;
    /// GIN (Xu et al.).
    Gin = "gin" => gin::GinConvConfig, GinConv;
    /// GAT (Velickovic et al.).
    Gat = "gat" => gat::GatConvConfig, GatConv;
}
