//! The training options: one struct that is at once the `train` command's flags (clap), the
//! keys of a `--config` TOML / JSON file and the run's `config.json` (serde), with one default
//! per option.

mod check;
pub mod file;
pub mod host_estimate;
mod loss_scale;
mod minibatch;
mod nonlin;
pub mod split;

pub use loss_scale::LossScaling;
pub use minibatch::{FeatureHome, Training, DEFAULT_FANOUTS};
pub use nonlin::parse_nonlin;
pub use split::{apply_split, DEFAULT_SPLIT};

use crate::error::{AppError, Result};
use burn_sparse_gnn::{Choice, GraphOptions, KernelPolicy, SspmmStrategy};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use gnn_models::{ConvKind, GcnNorm, GnnModelConfig, NormKind, Precision, Readout, SageAggr};
use gnn_train::graphs::TuFeatures;
use gnn_train::link::Decoder;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A clap parser accepting exactly `names` (listed in errors and help) and deserialising the
/// chosen name with serde, for the option types of `gnn-models`.
fn named<T>(names: &'static [&'static str]) -> impl TypedValueParser<Value = T>
where
    T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(names).try_map(|s| serde_json::from_value::<T>(serde_json::Value::String(s)))
}

/// The user-facing name of a value of a `gnn-models` option type (its serde name).
pub fn name_of<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

/// Which epoch's model a run ends with.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ModelSelection {
    /// The model after the last epoch.
    #[default]
    Last,
    /// The model of the epoch with the highest validation accuracy (the earliest on ties), as
    /// the usual Planetoid protocol reports; checkpoints of that epoch are written even with
    /// `checkpoints: false` and removed after the run in that case.
    BestValid,
}

/// What a run learns.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// A class per node (the dataset's labels).
    #[default]
    Node,
    /// Which pairs of nodes are edges (docs/LINK_PREDICTION.md).
    Link,
    /// A class per graph of a set of graphs (a TU dataset; docs/GRAPH_CLASSIFICATION.md).
    Graph,
}

/// How the convolutions are stacked.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    /// Kipf & Welling / PyG's examples: convolutions `d_in -> hidden -> ... -> classes`.
    #[default]
    Classic,
    /// MaxK-GNN's: `lin_in -> [nonlinearity -> dropout -> conv] x layers -> lin_out`, every
    /// convolution hidden-to-hidden.
    LinearIo,
}

/// Everything a training run is configured by. Each field is a `train` flag of the same name
/// (`--weight-decay` for `weight_decay`) and a key of `--config` files and `config.json`.
/// The defaults are Kipf & Welling's two-layer GCN on Planetoid (PyG's `gcn.py` example).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Dataset: a path (npy folder, .npz, OGB or GraphSAINT folder, edge-list folder; see
    /// docs/DATASETS.md) or `sbm` (the built-in stochastic block model).
    #[arg(long, default_value = "sbm")]
    pub dataset: String,
    /// What to learn: node classification or link prediction.
    #[arg(long, value_enum, default_value_t = Task::Node)]
    pub task: Task,
    /// Link prediction: share of the edges held out for validation.
    #[arg(long, default_value_t = 0.05)]
    pub link_valid: f64,
    /// Link prediction: share of the edges held out for testing.
    #[arg(long, default_value_t = 0.10)]
    pub link_test: f64,
    /// Link prediction: negative pairs per positive pair in each training epoch.
    #[arg(long, default_value_t = 1)]
    pub negatives: usize,
    /// Link prediction: the pair decoder.
    #[arg(long, value_enum, default_value_t = Decoder::Dot)]
    pub decoder: Decoder,
    /// Link prediction: the embedding width (the encoder's output).
    #[arg(long, default_value_t = 64)]
    pub embedding: usize,
    /// Link prediction: the K of Hits@K.
    #[arg(long, default_value_t = 50)]
    pub hits_k: usize,
    /// Graph classification: stratified cross-validation folds (0: one stratified split by
    /// --graph-valid and --graph-test).
    #[arg(long, default_value_t = 0)]
    pub folds: usize,
    /// Graph classification: with --folds, train only this fold (1-based; folds spread over
    /// processes or machines, each into its own folder; no cross-validation.json).
    #[arg(long)]
    pub fold: Option<usize>,
    /// Graph classification: with --folds (and no --fold), train this many folds at once, each
    /// in a process of its own on the same device (its log in the fold's folder); 1: one fold
    /// after another in this process.
    #[arg(long, default_value_t = 1)]
    pub fold_jobs: usize,
    /// Graph classification: share of the graphs for validation (without --folds).
    #[arg(long, default_value_t = 0.1)]
    pub graph_valid: f64,
    /// Graph classification: share of the graphs for testing (without --folds).
    #[arg(long, default_value_t = 0.1)]
    pub graph_test: f64,
    /// Graphs per batch (graph classification; default 128) or seed nodes per batch
    /// (`--training minibatch`; default 1024).
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Graph classification: how a graph's node states are pooled.
    #[arg(long, value_enum, default_value_t = Readout::Sum)]
    pub readout: Readout,
    /// Graph classification: the node features of a TU dataset.
    #[arg(long, value_enum, default_value_t = TuFeatures::Auto)]
    pub tu_features: TuFeatures,
    /// Node classification: full-graph steps, or mini-batches of seed nodes with sampled
    /// neighbourhoods.
    #[arg(long, value_enum, default_value_t = Training::Full)]
    pub training: Training,
    /// Mini-batch: neighbours sampled per node at each hop from the seeds, one per layer, hop 1
    /// (the seeds' own neighbours, the last convolution) first, as PyG's `num_neighbors`
    /// (default 15,10,5, then 5 for deeper models).
    #[arg(long, value_delimiter = ',')]
    pub fanouts: Vec<usize>,
    /// Mini-batch: where the node features live.
    #[arg(long, value_enum, default_value_t = FeatureHome::Device)]
    pub features_on: FeatureHome,
    /// Mini-batch: batches built ahead of the training step on a second thread (0: each batch
    /// when it is needed, on the training thread; the CPU and wgpu backends only).
    #[arg(long, default_value_t = 0)]
    pub prefetch: usize,
    /// Mini-batch: rows per chunk of the layer-wise inference that evaluates and predicts.
    #[arg(long, default_value_t = 65_536)]
    pub infer_chunk: usize,
    /// Multiply the learning rate by --lr-gamma every this many epochs (none: constant).
    #[arg(long)]
    pub lr_step: Option<usize>,
    /// The learning rate's factor every --lr-step epochs.
    #[arg(long, default_value_t = 0.5)]
    pub lr_gamma: f64,
    /// Split to apply: `per-class:TRAIN,VALID` (nodes per class), `random:TRAIN,VALID`
    /// (fractions; the rest is the test split) or `mask:K` (the K-th of a file's splits).
    /// [default: the dataset's own split, else per-class:20,30]
    #[arg(long)]
    pub split: Option<String>,
    /// Convolution.
    #[arg(long, value_enum, default_value = "gcn")]
    #[serde(alias = "conv")]
    pub model: ConvKind,
    /// How the convolutions are stacked.
    #[arg(long, value_enum, default_value_t = Architecture::Classic)]
    pub architecture: Architecture,
    /// Hidden width.
    #[arg(long, default_value_t = 16)]
    pub hidden: usize,
    /// Convolution layers.
    #[arg(long, default_value_t = 2)]
    pub layers: usize,
    /// Nonlinearity between layers: `relu`, `maxk:K` (the K largest of each row) or
    /// `maxpool:WINDOWS[xCHANNELS][:2d]` (k-max pooling).
    #[arg(long, default_value = "relu")]
    pub nonlin: String,
    /// Dropout before each hidden convolution.
    #[arg(long, default_value_t = 0.5)]
    pub dropout: f64,
    /// Dropout on the input features.
    #[arg(long, default_value_t = 0.5)]
    pub input_dropout: f64,
    /// Normalisation after each hidden convolution.
    #[arg(long, value_parser = named::<NormKind>(&["none", "layernorm"]), default_value = "none")]
    pub norm: NormKind,
    /// Storage precision of the sparse aggregations (mixed precision needs CUDA or wgpu; bf16 CUDA).
    #[arg(long, value_parser = named::<Precision>(&["f32", "tf32", "mixedf16", "mixedbf16"]), default_value = "f32")]
    pub precision: Precision,
    /// Loss scaling: `auto` scales in mixed f16 as `torch.amp.GradScaler` does (the loss times
    /// 65,536 before the backward pass, so that the gradients passing through f16 stay out of
    /// its subnormal range; the parameters' gradients divided back; a step with gradients that
    /// are not finite skipped and the scale halved, counted in results.json; the scale doubled
    /// after 2,000 finite steps in a row), `off` never.
    #[arg(long, value_enum, default_value_t = LossScaling::Auto)]
    pub loss_scale: LossScaling,
    /// GCN normalisation of the adjacency.
    #[arg(long, value_parser = named::<GcnNorm>(&["symmetric", "left", "right", "none"]), default_value = "symmetric")]
    pub gcn_norm: GcnNorm,
    /// GraphSAGE neighbour aggregation.
    #[arg(long, value_parser = named::<SageAggr>(&["mean", "sum", "maxpool"]), default_value = "mean")]
    pub sage_aggr: SageAggr,
    /// GAT attention heads (they split the hidden width).
    #[arg(long, default_value_t = 4)]
    #[serde(alias = "gat_heads")]
    pub heads: usize,
    /// GAT attention dropout.
    #[arg(long, default_value_t = 0.0)]
    #[serde(alias = "gat_attention_dropout")]
    pub attention_dropout: f64,
    /// GIN's half-safe aggregation `(1 + eps) x + LAMBDA * mean` instead of the sum (HalfGNN),
    /// e.g. 0.1: bounded on hub rows, but a different, weaker model. [default: none, the sum;
    /// in mixed f16 the sum runs in f32]
    #[arg(long)]
    #[serde(alias = "gin_half_safe_lambda")]
    pub gin_lambda: Option<f64>,
    /// Divide every feature row by its sum clamped to >= 1 (PyG's `NormalizeFeatures`).
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub normalize_features: bool,
    /// Training epochs.
    #[arg(long, default_value_t = 200)]
    pub epochs: usize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 0.01)]
    pub lr: f64,
    /// L2 weight decay (added to the gradients, as PyTorch's Adam does).
    #[arg(long, default_value_t = 5e-4)]
    pub weight_decay: f64,
    /// Stop when the validation loss has not improved for this many epochs. [default: none]
    #[arg(long)]
    pub patience: Option<usize>,
    /// Seed of the initialisation, the dropout draws and generated splits.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Add self-loops to the graph (GAT always gets them).
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub self_loops: bool,
    /// Symmetrise the graph.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub symmetrize: bool,
    /// Edge-group width of the SpMM-family kernels. [default: chosen from the graph's average degree]
    #[arg(long)]
    pub group_width: Option<usize>,
    /// Edge-group width of the CBSR kernels (MaxK / max-pooling aggregation).
    #[arg(long, default_value_t = 256)]
    pub cbsr_group_width: usize,
    /// Non-deterministic atomic CBSR kernels (faster MaxK backward).
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub atomic: bool,
    /// Run folder: config.json, checkpoints, model.mpk, model.safetensors, results.json, curves.png.
    #[arg(long, default_value = "artifacts/train")]
    #[serde(alias = "artifact_dir")]
    pub out: PathBuf,
    /// Write a checkpoint every epoch (needed for `--resume`).
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub checkpoints: bool,
    /// Print one line every this many epochs (plain log; 0: none).
    #[arg(long, default_value_t = 1)]
    pub log_every: usize,
    /// Which model the run keeps, saves and reports: the last epoch's, or the one of the epoch
    /// with the highest validation accuracy.
    #[arg(long, value_enum, default_value_t = ModelSelection::Last)]
    pub select: ModelSelection,
}

/// The flags of [`TrainConfig`] alone (its defaults come from here).
#[derive(clap::Parser)]
#[command(no_binary_name = true)]
struct Defaults {
    #[command(flatten)]
    cfg: TrainConfig,
}

impl Default for TrainConfig {
    /// The flags' defaults.
    fn default() -> Self {
        use clap::Parser;
        match Defaults::try_parse_from(std::iter::empty::<String>()) {
            Ok(d) => d.cfg,
            // the defaults are constants of this file; a unit test parses them
            Err(e) => unreachable!("the default training flags do not parse: {e}"),
        }
    }
}

/// The config keys, in declaration order (the clap ids of the flags).
pub fn config_keys() -> Vec<String> {
    use clap::Args;
    TrainConfig::augment_args(clap::Command::new("train")).get_arguments().map(|a| a.get_id().to_string()).collect()
}

/// Most convolution layers a run may stack.
pub const MAX_LAYERS: usize = 64;

/// Widest hidden layer a run may ask for.
pub const MAX_HIDDEN: usize = 1 << 16;

/// A JSON value as a user reads it (`none` for null, strings unquoted).
fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "none".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl TrainConfig {
    /// Reads a TOML or JSON config file (by extension): see [`file`] for its keys.
    pub fn from_file(path: &Path) -> Result<Self> {
        let value = Self::file_value(path)?;
        serde_json::from_value(value).map_err(|e| AppError::Format { path: path.into(), msg: e.to_string() })
    }

    /// A config file's keys (as the options' names: dashes read as underscores, older keys
    /// translated) and values; a key that is not an option, or two keys for one option, is an
    /// error naming them.
    pub fn file_value(path: &Path) -> Result<serde_json::Value> {
        file::read_table(path, &config_keys())
    }

    /// The configuration of a `train` command: the defaults, or `base` (a `--config` file's or
    /// the resumed run's keys), with the flags given on the command line (`given`, config keys)
    /// taken from `flags`.
    ///
    /// When resuming (`resumed_from` is the run's config.json), a flag or file key that
    /// contradicts the run is an error naming the flag and both values; `--epochs` may grow,
    /// `--out` and `--log-every` may differ.
    pub fn merged(
        flags: &TrainConfig,
        given: &[String],
        base: Option<serde_json::Value>,
        file_keys: Option<serde_json::Value>,
        resumed_from: Option<&Path>,
    ) -> Result<TrainConfig> {
        // flag values are checked first: NaN has no JSON form, and a bad value is the clearer error
        flags.check()?;
        let flags_v = serde_json::to_value(flags).map_err(|e| AppError::Config(e.to_string()))?;
        let mut out = match base {
            Some(b) => b,
            None => serde_json::to_value(TrainConfig::default()).map_err(|e| AppError::Config(e.to_string()))?,
        };
        // check the base parses before comparing keys
        let base_cfg: TrainConfig = serde_json::from_value(out.clone()).map_err(|e| match resumed_from {
            Some(p) => AppError::Format { path: p.into(), msg: e.to_string() },
            None => AppError::Config(e.to_string()),
        })?;
        let mut base_full = serde_json::to_value(&base_cfg).map_err(|e| AppError::Config(e.to_string()))?;
        let mut overrides: Vec<(String, serde_json::Value, String)> = Vec::new();
        if let Some(serde_json::Value::Object(m)) = file_keys {
            for (k, v) in m {
                overrides.push((k.clone(), v, format!("`{k}` of the config file")));
            }
        }
        for k in given {
            if let Some(v) = flags_v.get(k) {
                overrides.push((k.clone(), v.clone(), format!("--{}", k.replace('_', "-"))));
            }
        }
        let map = base_full.as_object_mut().ok_or_else(|| AppError::Config("config is not a table".into()))?;
        for (k, v, what) in overrides {
            if let Some(run) = resumed_from {
                let old = map.get(&k).cloned().unwrap_or(serde_json::Value::Null);
                let differs = old != v;
                let allowed = match k.as_str() {
                    "out" | "log_every" => true,
                    "epochs" => v.as_u64() >= old.as_u64(),
                    _ => !differs,
                };
                if differs && !allowed {
                    let extra = if k == "epochs" { " (a resumed run may only train for more epochs)" } else { "" };
                    return Err(AppError::Config(format!(
                        "{what} {} contradicts the resumed run's {k} = {} in {}{extra}; leave it out to keep the run's value",
                        shown(&v),
                        shown(&old),
                        run.display()
                    )));
                }
            }
            map.insert(k, v);
        }
        out = base_full;
        let cfg: TrainConfig = serde_json::from_value(out).map_err(|e| AppError::Config(e.to_string()))?;
        cfg.check()?;
        Ok(cfg)
    }

    /// Whether the configuration asks for MaxK-GNN's `lin_in` / `lin_out` architecture.
    pub fn linear_io(&self) -> bool {
        self.architecture == Architecture::LinearIo
    }

    /// The model configuration for a dataset of `d_in` features and `classes` classes.
    pub fn model_config(&self, d_in: usize, classes: usize) -> Result<GnnModelConfig> {
        let cfg = GnnModelConfig::new(self.model, d_in, self.hidden, classes)
            .with_layers(self.layers)
            .with_nonlin(parse_nonlin(&self.nonlin)?)
            .with_dropout(self.dropout)
            .with_norm(self.norm)
            .with_precision(self.precision)
            .with_gcn_norm(self.gcn_norm)
            .with_sage_aggr(self.sage_aggr)
            .with_gat_heads(self.heads)
            .with_gat_attention_dropout(self.attention_dropout)
            .with_gin_half_safe_lambda(self.gin_lambda)
            .with_linear_io(self.linear_io())
            .with_input_dropout(self.input_dropout);
        cfg.check().map_err(|e| AppError::Config(e.to_string()))?;
        Ok(cfg)
    }

    /// The graph options of the run.
    pub fn graph_options(&self) -> GraphOptions {
        let policy = if self.atomic {
            KernelPolicy { sspmm: SspmmStrategy::OuterAtomic, spgemm_atomic: false }
        } else {
            KernelPolicy::default()
        };
        let defaults = GraphOptions::default();
        GraphOptions {
            group_width: self.group_width.map_or(Choice::Auto, Choice::Forced),
            cbsr_group_width: self.cbsr_group_width,
            policy,
            // the hot-column split serves only f32 aggregation; in mixed precision the SpMM runs
            // on half tensors and the split would only hold memory
            hot_cols: if self.precision.half().is_some() { Choice::Forced(0) } else { defaults.hot_cols },
            ..defaults
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_kipf_and_wellings_gcn() {
        let c = TrainConfig::default();
        assert_eq!((c.model, c.architecture, c.hidden, c.layers), (ConvKind::Gcn, Architecture::Classic, 16, 2));
        assert_eq!((c.dropout, c.lr, c.weight_decay, c.epochs), (0.5, 0.01, 5e-4, 200));
        assert_eq!(c.gcn_norm, GcnNorm::Symmetric);
        assert!(!c.linear_io());
    }

    #[test]
    fn every_convolution_has_one_name_on_the_command_line_and_in_files() {
        use clap::ValueEnum;
        for kind in ConvKind::value_variants() {
            let flag = kind.to_possible_value().expect("every convolution is listed");
            assert_eq!((flag.get_name(), name_of(kind).as_str()), (kind.name(), kind.name()));
            assert_eq!(ConvKind::from_str(kind.name(), false), Ok(*kind));
        }
    }

    #[test]
    fn the_hot_column_split_is_built_for_f32_training_only() {
        let f32_cfg = TrainConfig::default();
        assert_eq!(f32_cfg.graph_options().hot_cols, GraphOptions::default().hot_cols);
        let mixed = TrainConfig { precision: Precision::MixedF16, ..TrainConfig::default() };
        assert_eq!(mixed.graph_options().hot_cols, Choice::Forced(0));
        assert_eq!(mixed.graph_options().group_width, Choice::Auto);
    }

    #[test]
    fn every_config_key_is_a_flag() {
        let keys = config_keys();
        let json = serde_json::to_value(TrainConfig::default()).unwrap();
        let fields: Vec<String> = json.as_object().unwrap().keys().cloned().collect();
        for f in &fields {
            assert!(keys.contains(f), "config key {f} has no flag");
        }
        assert_eq!(keys.len(), fields.len(), "{keys:?} vs {fields:?}");
    }

    #[test]
    fn a_resumed_run_refuses_contradicting_flags() {
        let run = TrainConfig { hidden: 32, epochs: 10, ..TrainConfig::default() };
        let base = serde_json::to_value(&run).unwrap();
        let path = Path::new("RUN/config.json");
        let flags = TrainConfig { hidden: 64, epochs: 20, ..TrainConfig::default() };
        let e = TrainConfig::merged(&flags, &["hidden".into()], Some(base.clone()), None, Some(path)).unwrap_err();
        assert!(e.to_string().contains("--hidden 64 contradicts the resumed run's hidden = 32"), "{e}");
        let ok = TrainConfig::merged(&flags, &["epochs".into()], Some(base.clone()), None, Some(path)).unwrap();
        assert_eq!((ok.hidden, ok.epochs), (32, 20));
        let fewer = TrainConfig { epochs: 5, ..flags };
        let e = TrainConfig::merged(&fewer, &["epochs".into()], Some(base), None, Some(path)).unwrap_err();
        assert!(e.to_string().contains("--epochs 5 contradicts"), "{e}");
    }
}
