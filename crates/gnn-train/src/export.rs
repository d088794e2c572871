//! A module's parameters by their Burn module paths: shapes (to check a record against a
//! model) and safetensors export (to read the weights from Python).

use crate::atomic::write_atomic;
use crate::error::TrainError;
use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::Backend;
use burn::tensor::Tensor;
use std::path::Path;

/// One float parameter: its module path (`convs.0.lin_neigh.weight`) and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamShape {
    pub path: String,
    pub shape: Vec<usize>,
}

/// Visits float parameters with their module paths. Enum variants (`Conv::Sage`) add no path
/// segment, so paths read as the fields that hold them.
struct Collector {
    path: Vec<Option<String>>,
    shapes: Vec<ParamShape>,
    values: Option<Vec<Vec<f32>>>,
}

impl Collector {
    fn path(&self) -> String {
        self.path.iter().flatten().cloned().collect::<Vec<_>>().join(".")
    }
}

impl<B: Backend> ModuleVisitor<B> for Collector {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.path.push((!container_type.starts_with("Enum:")).then(|| name.to_string()));
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let value = param.val();
        self.shapes.push(ParamShape { path: self.path(), shape: value.dims().to_vec() });
        if let Some(values) = self.values.as_mut() {
            values.push(value.into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default());
        }
    }
}

/// The float parameters of a module, in visiting order.
pub fn param_shapes<B: Backend, M: Module<B>>(module: &M) -> Vec<ParamShape> {
    let mut c = Collector { path: Vec::new(), shapes: Vec::new(), values: None };
    module.visit(&mut c);
    c.shapes
}

/// The metadata key of [`write_safetensors`]'s files that describes the linear weights' layout.
pub const LAYOUT_KEY: &str = "linear_weight_layout";

/// The value of [`LAYOUT_KEY`]: linear weights are `[in, out]`.
pub const LINEAR_LAYOUT: &str = "[in, out]: y = x @ W + b (PyTorch nn.Linear.weight is W.T)";

/// Writes the module's float parameters as f32 tensors named by their module paths to a
/// safetensors file (atomically).
///
/// Every tensor keeps the shape Burn holds it in. A linear map's weight (`*.weight` of a
/// `Linear`: `lin_in`, `lin_out`, `convs.{l}.linear`, `lin_neigh`, `lin_root`, `lin_pool`, GIN's
/// `mlp_in` / `mlp_out`, GAT's `lin`) is stored `[in, out]`, applied as `y = x @ W + b`; PyTorch's
/// `nn.Linear.weight` is `[out, in]` (`y = x @ W.T + b`), so loading one into PyTorch takes
/// `W.T` (`torch.from_numpy(w).T.contiguous()`). Biases are `[out]`, GAT's `att_src` / `att_dst`
/// `[heads, d_head]`, GIN's `eps` `[1]`, a layer norm's `gamma` / `beta` `[hidden]`: the same
/// in both conventions. The file's metadata says so too: [`LAYOUT_KEY`] maps to
/// [`LINEAR_LAYOUT`].
pub fn write_safetensors<B: Backend, M: Module<B>>(module: &M, path: &Path) -> Result<(), TrainError> {
    let mut c = Collector { path: Vec::new(), shapes: Vec::new(), values: Some(Vec::new()) };
    module.visit(&mut c);
    let values = c.values.unwrap_or_default();
    let bytes: Vec<Vec<u8>> = values.iter().map(|v| v.iter().flat_map(|x| x.to_le_bytes()).collect()).collect();
    let write_err = |msg: String| TrainError::Write { path: path.to_path_buf(), msg };
    let mut views = Vec::with_capacity(bytes.len());
    for (p, b) in c.shapes.iter().zip(&bytes) {
        let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, p.shape.clone(), b)
            .map_err(|e| write_err(format!("tensor {}: {e}", p.path)))?;
        views.push((p.path.clone(), view));
    }
    let metadata = std::collections::HashMap::from([(LAYOUT_KEY.to_string(), LINEAR_LAYOUT.to_string())]);
    let data = safetensors::serialize(views, Some(metadata)).map_err(|e| write_err(e.to_string()))?;
    write_atomic(path, &data)
}
