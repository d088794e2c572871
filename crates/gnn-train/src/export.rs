//! A module's parameters by their Burn module paths: shapes (to check a record against a
//! model) and safetensors export (to read the weights from Python).

use crate::error::TrainError;
use crate::record::write_atomic;
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

/// Writes the module's float parameters as f32 tensors named by their module paths to a
/// safetensors file (atomically).
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
    let data = safetensors::serialize(views, None).map_err(|e| write_err(e.to_string()))?;
    write_atomic(path, &data)
}
