//! Reading and writing `.npy` arrays (through `npyz`), with the dtype conversions the dataset
//! formats need and errors that name the file.
//!
//! Every read checks the header before anything is allocated: the element count must not
//! overflow, the declared data must be present in the file (or archive entry), and the decoded
//! array must fit in the host's available memory. Arrays stored in Fortran order (numpy's
//! `fortran_order: True`, column-major) are returned in C order, so callers always index
//! `data[i * cols + j]`.

use crate::error::{AppError, Result};
use crate::host_memory::host_available_bytes;
use npyz::{DType, NpyFile, NpyHeader, Order, TypeChar, WriterBuilder};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek};
use std::path::Path;

/// An array read from a file: values (C order) and shape.
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

/// Bytes of one element as stored (plain dtypes only; others are refused later by dtype).
fn item_bytes(dtype: &DType) -> u64 {
    match dtype {
        DType::Plain(ts) => ts.size_field().max(1),
        _ => 1,
    }
}

/// Checks a header against the bytes that hold its data (`stored`, when known) and the host's
/// memory (`out_elem` bytes per decoded element). Returns the element count.
fn check_header(path: &Path, header: &NpyHeader, stored: Option<u64>, out_elem: usize) -> Result<usize> {
    let shape = header.shape();
    let count = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).ok_or_else(|| AppError::Format {
        path: path.into(),
        msg: format!("header declares shape {shape:?}, whose element count overflows: corrupt file"),
    })?;
    let data_bytes = count.checked_mul(item_bytes(&header.dtype())).ok_or_else(|| AppError::Format {
        path: path.into(),
        msg: format!("header declares shape {shape:?}, more bytes than any file can hold: corrupt file"),
    })?;
    if let Some(stored) = stored {
        if data_bytes > stored {
            return Err(AppError::Format {
                path: path.into(),
                msg: format!(
                    "header declares shape {shape:?} ({data_bytes} bytes of data) but the file holds only \
                     {stored}: truncated or corrupt"
                ),
            });
        }
    }
    let need = count.saturating_mul(out_elem as u64);
    if let Some(avail) = host_available_bytes() {
        if need > avail {
            return Err(AppError::TooLarge {
                what: format!("{}: array of shape {shape:?}", path.display()),
                need_bytes: need,
                limit_bytes: avail,
                limit: "the host's available memory".into(),
            });
        }
    }
    usize::try_from(count).map_err(|_| AppError::Format {
        path: path.into(),
        msg: format!("shape {shape:?} has more elements than this machine can address"),
    })
}

/// Reorders data stored with the header's strides (Fortran order) into C order.
fn to_c_order<T: Copy>(header: &NpyHeader, data: Vec<T>) -> Vec<T> {
    if header.order() == Order::C || header.shape().len() < 2 {
        return data;
    }
    let shape: Vec<usize> = header.shape().iter().map(|&d| d as usize).collect();
    let strides: Vec<usize> = header.strides().iter().map(|&s| s as usize).collect();
    if shape.len() == 2 {
        // the common case (masks [splits, N], edges [E, 2]): a transpose
        let (r, c) = (shape[0], shape[1]);
        let mut out = Vec::with_capacity(data.len());
        for i in 0..r {
            out.extend((0..c).map(|j| data[i * strides[0] + j * strides[1]]));
        }
        return out;
    }
    let mut out = Vec::with_capacity(data.len());
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..data.len() {
        out.push(data[idx.iter().zip(&strides).map(|(i, s)| i * s).sum::<usize>()]);
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

fn read_vec<T: npyz::Deserialize, R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Vec<T>> {
    npy.into_vec::<T>().map_err(|e| AppError::Format { path: path.into(), msg: format!("reading the data: {e}") })
}

fn convert_ints<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Vec<i64>> {
    let dtype = npy.dtype();
    let bad = || AppError::Dtype { path: path.into(), found: describe(&dtype), expected: "integers" };
    Ok(match type_of(&dtype).ok_or_else(bad)? {
        (TypeChar::Int, 8) => read_vec::<i64, _>(path, npy)?,
        (TypeChar::Int, 4) => read_vec::<i32, _>(path, npy)?.into_iter().map(i64::from).collect(),
        (TypeChar::Int, 2) => read_vec::<i16, _>(path, npy)?.into_iter().map(i64::from).collect(),
        (TypeChar::Int, 1) => read_vec::<i8, _>(path, npy)?.into_iter().map(i64::from).collect(),
        (TypeChar::Uint, 8) => read_vec::<u64, _>(path, npy)?
            .into_iter()
            .map(|v| {
                i64::try_from(v)
                    .map_err(|_| AppError::Format { path: path.into(), msg: format!("value {v} does not fit i64") })
            })
            .collect::<Result<_>>()?,
        (TypeChar::Uint, 4) => read_vec::<u32, _>(path, npy)?.into_iter().map(i64::from).collect(),
        (TypeChar::Uint, 2) => read_vec::<u16, _>(path, npy)?.into_iter().map(i64::from).collect(),
        (TypeChar::Uint, 1) => read_vec::<u8, _>(path, npy)?.into_iter().map(i64::from).collect(),
        (TypeChar::Bool, 1) => read_vec::<bool, _>(path, npy)?.into_iter().map(i64::from).collect(),
        _ => return Err(bad()),
    })
}

fn convert_floats<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Vec<f32>> {
    let dtype = npy.dtype();
    let bad = || AppError::Dtype { path: path.into(), found: describe(&dtype), expected: "floats" };
    Ok(match type_of(&dtype).ok_or_else(bad)? {
        (TypeChar::Float, 4) => read_vec::<f32, _>(path, npy)?,
        (TypeChar::Float, 8) => read_vec::<f64, _>(path, npy)?.into_iter().map(|v| v as f32).collect(),
        (TypeChar::Float, 2) => read_vec::<half::f16, _>(path, npy)?.into_iter().map(f32::from).collect(),
        (TypeChar::Int, _) | (TypeChar::Uint, _) | (TypeChar::Bool, _) => {
            convert_ints(path, npy)?.into_iter().map(|v| v as f32).collect()
        }
        _ => return Err(bad()),
    })
}

/// The first line of an error's text (npyz reports a malformed header with a multi-line
/// excerpt of the header text).
fn one_line(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    match text.split_once('\n') {
        Some((first, _)) => format!("{} (malformed header text)", first.trim_end()),
        None => text,
    }
}

/// Opens a regular file for reading (a FIFO, device or folder is refused: reading one could
/// block forever or never end).
pub fn open_regular(path: &Path, what: &str) -> Result<File> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AppError::Missing { path: path.into(), what: what.into() },
        _ => AppError::io(path, e),
    })?;
    if !meta.is_file() {
        return Err(AppError::Format { path: path.into(), msg: format!("not a regular file (expected {what})") });
    }
    File::open(path).map_err(|e| AppError::io(path, e))
}

/// Opens an `.npy` file and checks its header; returns the reader, its header and the checked
/// element count.
fn open(path: &Path, out_elem: usize) -> Result<(NpyFile<BufReader<File>>, usize)> {
    let file = open_regular(path, "npy array")?;
    let len = file.metadata().map_err(|e| AppError::io(path, e))?.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let header = NpyHeader::from_reader(&mut reader)
        .map_err(|e| AppError::Format { path: path.into(), msg: format!("not a valid .npy file: {}", one_line(&e)) })?;
    let pos = reader.stream_position().map_err(|e| AppError::io(path, e))?;
    let count = check_header(path, &header, Some(len.saturating_sub(pos)), out_elem)?;
    Ok((NpyFile::with_header(header, reader), count))
}

/// Reads only the header of an `.npy` file and returns its shape: nothing of the data is read
/// or allocated (used to check a declared size against the arrays that must match it).
pub fn peek_shape(path: &Path) -> Result<Vec<usize>> {
    peek_header(path).map(|h| shape_of(&h))
}

/// [`peek_shape`] of an array that [`read_ints`] must be able to read: a dtype that is not an
/// integer (or bool) type is the same error as `read_ints` gives.
pub fn peek_int_shape(path: &Path) -> Result<Vec<usize>> {
    let header = peek_header(path)?;
    let dtype = header.dtype();
    let ints =
        matches!(type_of(&dtype), Some((TypeChar::Int | TypeChar::Uint, 1 | 2 | 4 | 8)) | Some((TypeChar::Bool, 1)));
    if !ints {
        return Err(AppError::Dtype { path: path.into(), found: describe(&dtype), expected: "integers" });
    }
    Ok(shape_of(&header))
}

fn peek_header(path: &Path) -> Result<NpyHeader> {
    let file = open_regular(path, "npy array")?;
    let mut reader = BufReader::with_capacity(4096, file);
    NpyHeader::from_reader(&mut reader)
        .map_err(|e| AppError::Format { path: path.into(), msg: format!("not a valid .npy file: {}", one_line(&e)) })
}

fn shape_of(header: &NpyHeader) -> Vec<usize> {
    header.shape().iter().map(|&d| d as usize).collect()
}

/// Reads an integer (or bool) array as i64.
pub fn read_ints(path: &Path) -> Result<Array<i64>> {
    let (npy, _) = open(path, 8)?;
    ints_checked(path, npy)
}

/// [`read_ints`], and whether the file stores numpy bools (a mask rather than numbers).
pub fn read_ints_or_bools(path: &Path) -> Result<(Array<i64>, bool)> {
    let (npy, _) = open(path, 8)?;
    let bools = matches!(type_of(&npy.dtype()), Some((TypeChar::Bool, _)));
    Ok((ints_checked(path, npy)?, bools))
}

/// Reads an integer array of node ids (edge columns) as u32: u32 and i32 files without a
/// widened copy (a graph's column ids are its largest array), other integer types through i64.
/// A value that is negative or past `u32::MAX` is refused, naming its entry.
pub fn read_ids(path: &Path) -> Result<Array<u32>> {
    let (npy, count) = open(path, 4)?;
    let header = npy.header().clone();
    let dtype = npy.dtype();
    let refuse = |entry: usize, v: i64| AppError::Format {
        path: path.into(),
        msg: format!("entry {entry} is {v}, not a node id (0 to {})", u32::MAX),
    };
    let data: Vec<u32> = match type_of(&dtype) {
        Some((TypeChar::Uint, 4)) => read_vec::<u32, _>(path, npy)?,
        Some((TypeChar::Int, 4)) => {
            let v = read_vec::<i32, _>(path, npy)?;
            if let Some((entry, &x)) = v.iter().enumerate().find(|(_, &x)| x < 0) {
                return Err(refuse(entry, x as i64));
            }
            // same size and alignment: `collect` reuses the allocation
            v.into_iter().map(|x| x as u32).collect()
        }
        _ => {
            crate::host_memory::check_fits((count as u64).saturating_mul(8), || {
                format!("{}: the {count} ids read as i64", path.display())
            })?;
            let v = convert_ints(path, npy)?;
            if let Some((entry, &x)) = v.iter().enumerate().find(|(_, &x)| u32::try_from(x).is_err()) {
                return Err(refuse(entry, x));
            }
            v.into_iter().map(|x| x as u32).collect()
        }
    };
    Ok(Array { data: to_c_order(&header, data), shape: shape_of(&header) })
}

/// Reads a float (or integer) array as f32.
pub fn read_floats(path: &Path) -> Result<Array<f32>> {
    let (npy, _) = open(path, 4)?;
    floats_checked(path, npy)
}

fn ints_checked<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Array<i64>> {
    let header = npy.header().clone();
    let data = convert_ints(path, npy)?;
    Ok(Array { data: to_c_order(&header, data), shape: shape_of(&header) })
}

fn floats_checked<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Array<f32>> {
    let header = npy.header().clone();
    let data = convert_floats(path, npy)?;
    Ok(Array { data: to_c_order(&header, data), shape: shape_of(&header) })
}

/// Parses the header of an npy stream whose data holds `stored` bytes (an archive entry's
/// declared size, when known) and checks it.
pub fn npy_from<R: Read>(path: &Path, mut reader: R, stored: Option<u64>, out_elem: usize) -> Result<NpyFile<R>> {
    let header = NpyHeader::from_reader(&mut reader).map_err(|e| AppError::Format {
        path: path.into(),
        msg: format!("not a valid .npy array: {}", one_line(&e)),
    })?;
    let header_len = header_bytes(&header);
    check_header(path, &header, stored.map(|s| s.saturating_sub(header_len)), out_elem)?;
    Ok(NpyFile::with_header(header, reader))
}

/// Lower bound of the header's length (the magic string, version and length field; the text
/// itself is at least 10 bytes): used only to bound what an archive entry can hold.
fn header_bytes(_header: &NpyHeader) -> u64 {
    20
}

/// Reads integers from an npy stream inside an archive (header checked by [`npy_from`]).
pub fn ints_from<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Array<i64>> {
    ints_checked(path, npy)
}

/// Reads floats from an npy stream inside an archive (header checked by [`npy_from`]).
pub fn floats_from<R: Read>(path: &Path, npy: NpyFile<R>) -> Result<Array<f32>> {
    floats_checked(path, npy)
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

/// Writes `data` with `shape` to `path` (C order), atomically: a temporary file beside it is
/// written, synced and renamed over `path`.
pub fn write<T: npyz::Serialize + npyz::AutoSerialize + Copy>(path: &Path, shape: &[usize], data: &[T]) -> Result<()> {
    crate::fsutil::write_atomic_with(path, |file| {
        let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&shape)
            .writer(BufWriter::with_capacity(1 << 20, file))
            .begin_nd()?;
        w.extend(data.iter().copied())?;
        w.finish()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An npy file of `shape` in the given order with `data` listed in that order.
    fn raw_npy(descr: &str, shape: &[usize], fortran: bool, payload: &[u8]) -> Vec<u8> {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let shape_txt = if shape.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
        let mut text = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape_txt}, }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + text.len() + 1) % 64 != 0 {
            text.push(' ');
        }
        text.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(text.len() as u16).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("npyio-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn fortran_order_is_returned_in_c_order() {
        // the 2 x 3 matrix [[0, 1, 2], [3, 4, 5]] stored column by column
        let col_major: Vec<u8> = [0i64, 3, 1, 4, 2, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
        let p = tmp("f").join("m.npy");
        std::fs::write(&p, raw_npy("<i8", &[2, 3], true, &col_major)).unwrap();
        let a = read_ints(&p).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.data, vec![0, 1, 2, 3, 4, 5]);
        let f = read_floats(&p).unwrap();
        assert_eq!(f.data, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        // three dimensions: element (i, j, k) of a 2 x 2 x 3 array is i * 6 + j * 3 + k
        let mut col3 = Vec::new();
        for k in 0..3i64 {
            for j in 0..2i64 {
                for i in 0..2i64 {
                    col3.extend_from_slice(&(i * 6 + j * 3 + k).to_le_bytes());
                }
            }
        }
        std::fs::write(&p, raw_npy("<i8", &[2, 2, 3], true, &col3)).unwrap();
        assert_eq!(read_ints(&p).unwrap().data, (0..12).collect::<Vec<i64>>());
    }

    #[test]
    fn c_order_is_unchanged() {
        let rows: Vec<u8> = [0i32, 1, 2, 3, 4, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
        let p = tmp("c").join("m.npy");
        std::fs::write(&p, raw_npy("<i4", &[2, 3], false, &rows)).unwrap();
        assert_eq!(read_ints(&p).unwrap().data, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn overflowing_and_truncated_headers_are_errors_before_any_allocation() {
        let p = tmp("h").join("m.npy");
        std::fs::write(&p, raw_npy("<i8", &[2, 1 << 63], false, &[0; 16])).unwrap();
        let e = read_ints(&p).err().unwrap().to_string();
        assert!(e.contains("overflows") || e.contains("more bytes"), "{e}");
        std::fs::write(&p, raw_npy("<f4", &[2708, 2_000_000_000], false, &[0; 64])).unwrap();
        let e = read_floats(&p).err().unwrap().to_string();
        assert!(e.contains("truncated"), "{e}");
        std::fs::write(&p, raw_npy("<i8", &[4], false, &[0; 24])).unwrap();
        assert!(read_ints(&p).err().unwrap().to_string().contains("truncated"));
    }

    #[test]
    fn ids_are_read_as_u32_from_any_integer_type_and_bad_ones_refused() {
        let p = tmp("ids").join("m.npy");
        let bytes = |v: &[i64], w: usize| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()[..w].to_vec()).collect() };
        for (descr, w) in [("<u4", 4), ("<i4", 4), ("<i8", 8), ("<u2", 2)] {
            std::fs::write(&p, raw_npy(descr, &[4], false, &bytes(&[0, 7, 3, 65_535], w))).unwrap();
            let a = read_ids(&p).unwrap();
            assert_eq!((a.data, a.shape), (vec![0, 7, 3, 65_535], vec![4]), "{descr}");
        }
        std::fs::write(&p, raw_npy("<i4", &[3], false, &bytes(&[1, 2, -1], 4))).unwrap();
        let e = read_ids(&p).err().expect("an error").to_string();
        assert!(e.contains("entry 2 is -1, not a node id"), "{e}");
        std::fs::write(&p, raw_npy("<i8", &[2], false, &bytes(&[1, 1 << 32], 8))).unwrap();
        let e = read_ids(&p).err().expect("an error").to_string();
        assert!(e.contains("entry 1 is 4294967296, not a node id"), "{e}");
        std::fs::write(&p, raw_npy("<f4", &[1], false, &[0; 4])).unwrap();
        assert!(read_ids(&p).is_err());
        std::fs::write(&p, raw_npy("<u4", &[4], false, &[0; 8])).unwrap();
        assert!(read_ids(&p).err().expect("an error").to_string().contains("truncated"));
    }

    #[test]
    fn peek_shape_reads_the_header_only() {
        let p = tmp("peek").join("m.npy");
        // declares 2e9 elements but holds none: the header alone is fine to read
        std::fs::write(&p, raw_npy("<i8", &[2_000_000_000], false, &[])).unwrap();
        assert_eq!(peek_shape(&p).unwrap(), vec![2_000_000_000]);
        assert_eq!(peek_int_shape(&p).unwrap(), vec![2_000_000_000]);
        std::fs::write(&p, raw_npy("<U3", &[1], false, &[])).unwrap();
        assert!(peek_int_shape(&p).unwrap_err().to_string().contains("dtype <U3 cannot be read as integers"));
        std::fs::write(&p, b"not npy").unwrap();
        assert!(peek_shape(&p).unwrap_err().to_string().contains("not a valid .npy"));
    }

    #[test]
    fn a_folder_is_not_read_as_an_array() {
        let d = tmp("dir");
        let e = read_ints(&d).err().unwrap().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn write_then_read_round_trips_and_leaves_no_temporary_file() {
        let d = tmp("w");
        let p = d.join("x.npy");
        write(&p, &[2, 2], &[1.5f32, 2.5, 3.5, 4.5]).unwrap();
        assert_eq!(read_floats(&p).unwrap().data, vec![1.5, 2.5, 3.5, 4.5]);
        let names: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
