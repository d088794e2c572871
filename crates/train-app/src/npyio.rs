//! Reading and writing `.npy` arrays (through `npyz`), with the dtype conversions the dataset
//! formats need and errors that name the file.

use crate::error::{AppError, Result};
use npyz::{DType, NpyFile, TypeChar, WriterBuilder};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::Path;

/// An array read from a file: values and shape.
pub struct Array<T> {
    pub data: Vec<T>,
    pub shape: Vec<usize>,
}

fn type_of(dtype: &DType) -> Option<(TypeChar, u64)> {
    match dtype {
        DType::Plain(ts) => Some((ts.type_char(), ts.size_field())),
        _ => None,
    }
}

fn describe(dtype: &DType) -> String {
    match dtype {
        DType::Plain(ts) => ts.to_string(),
        other => format!("{other:?}"),
    }
}

fn convert_ints<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Vec<i64>> {
    let dtype = npy.dtype();
    let bad = || AppError::Dtype { path: path.into(), found: describe(&dtype), expected: "integers" };
    let fmt = |e: std::io::Error| AppError::Format { path: path.into(), msg: e.to_string() };
    Ok(match type_of(&dtype).ok_or_else(bad)? {
        (TypeChar::Int, 8) => npy.into_vec::<i64>().map_err(fmt)?,
        (TypeChar::Int, 4) => npy.into_vec::<i32>().map_err(fmt)?.into_iter().map(i64::from).collect(),
        (TypeChar::Int, 2) => npy.into_vec::<i16>().map_err(fmt)?.into_iter().map(i64::from).collect(),
        (TypeChar::Int, 1) => npy.into_vec::<i8>().map_err(fmt)?.into_iter().map(i64::from).collect(),
        (TypeChar::Uint, 8) => npy
            .into_vec::<u64>()
            .map_err(fmt)?
            .into_iter()
            .map(|v| {
                i64::try_from(v)
                    .map_err(|_| AppError::Format { path: path.into(), msg: format!("value {v} does not fit i64") })
            })
            .collect::<Result<_>>()?,
        (TypeChar::Uint, 4) => npy.into_vec::<u32>().map_err(fmt)?.into_iter().map(i64::from).collect(),
        (TypeChar::Uint, 2) => npy.into_vec::<u16>().map_err(fmt)?.into_iter().map(i64::from).collect(),
        (TypeChar::Uint, 1) => npy.into_vec::<u8>().map_err(fmt)?.into_iter().map(i64::from).collect(),
        (TypeChar::Bool, 1) => npy.into_vec::<bool>().map_err(fmt)?.into_iter().map(i64::from).collect(),
        _ => return Err(bad()),
    })
}

fn convert_floats<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Vec<f32>> {
    let dtype = npy.dtype();
    let bad = || AppError::Dtype { path: path.into(), found: describe(&dtype), expected: "floats" };
    let fmt = |e: std::io::Error| AppError::Format { path: path.into(), msg: e.to_string() };
    Ok(match type_of(&dtype).ok_or_else(bad)? {
        (TypeChar::Float, 4) => npy.into_vec::<f32>().map_err(fmt)?,
        (TypeChar::Float, 8) => npy.into_vec::<f64>().map_err(fmt)?.into_iter().map(|v| v as f32).collect(),
        (TypeChar::Float, 2) => npy.into_vec::<half::f16>().map_err(fmt)?.into_iter().map(f32::from).collect(),
        (TypeChar::Int, _) | (TypeChar::Uint, _) | (TypeChar::Bool, _) => {
            convert_ints(path, npy)?.into_iter().map(|v| v as f32).collect()
        }
        _ => return Err(bad()),
    })
}

fn open(path: &Path) -> Result<NpyFile<BufReader<File>>> {
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AppError::Missing { path: path.into(), what: "npy array".into() },
        _ => AppError::io(path, e),
    })?;
    NpyFile::new(BufReader::with_capacity(1 << 20, file))
        .map_err(|e| AppError::Format { path: path.into(), msg: format!("not a valid .npy file: {e}") })
}

fn shape_of<R: Read>(npy: &NpyFile<R>) -> Vec<usize> {
    npy.shape().iter().map(|&d| d as usize).collect()
}

/// Reads an integer (or bool) array as i64.
pub fn read_ints(path: &Path) -> Result<Array<i64>> {
    let npy = open(path)?;
    let shape = shape_of(&npy);
    Ok(Array { data: convert_ints(path, npy)?, shape })
}

/// Reads a float (or integer) array as f32.
pub fn read_floats(path: &Path) -> Result<Array<f32>> {
    let npy = open(path)?;
    let shape = shape_of(&npy);
    Ok(Array { data: convert_floats(path, npy)?, shape })
}

/// Reads integers from an npy stream inside an archive.
pub fn ints_from<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Array<i64>> {
    let shape = shape_of(&npy);
    Ok(Array { data: convert_ints(path, npy)?, shape })
}

/// Reads floats from an npy stream inside an archive.
pub fn floats_from<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Array<f32>> {
    let shape = shape_of(&npy);
    Ok(Array { data: convert_floats(path, npy)?, shape })
}

/// Checks the rank (and, where given, the size of each dimension) of an array.
pub fn expect_shape(path: &Path, shape: &[usize], expected: &[Option<usize>]) -> Result<()> {
    let ok = shape.len() == expected.len() && shape.iter().zip(expected).all(|(s, e)| e.is_none_or(|e| e == *s));
    if ok {
        Ok(())
    } else {
        let want: Vec<String> =
            expected.iter().map(|e| e.map(|v| v.to_string()).unwrap_or_else(|| "_".into())).collect();
        Err(AppError::Shape { path: path.into(), found: shape.to_vec(), expected: format!("[{}]", want.join(", ")) })
    }
}

/// Writes `data` with `shape` to `path` (C order).
pub fn write<T: npyz::Serialize + npyz::AutoSerialize + Copy>(path: &Path, shape: &[usize], data: &[T]) -> Result<()> {
    let file = File::create(path).map_err(|e| AppError::io(path, e))?;
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(BufWriter::with_capacity(1 << 20, file))
        .begin_nd()
        .map_err(|e| AppError::io(path, e))?;
    w.extend(data.iter().copied()).map_err(|e| AppError::io(path, e))?;
    w.finish().map_err(|e| AppError::io(path, e))
}
