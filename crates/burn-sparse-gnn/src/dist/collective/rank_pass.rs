//! The passes of the halo exchange of one rank without autodiff bookkeeping: rows sent and
//! received through the communicator or the backend's device transport.

use crate::dist::collective::comm::Comm;
use crate::dist::collective::comm::CommError;
use crate::dist::collective::comm::RowTransport;
use crate::dist::transfer::TransferOps;
use crate::ops::primitive::t2;
use crate::ops::rows::RowOps;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::BasicOps;
use burn::tensor::DType;
use burn::tensor::Tensor;
use burn::tensor::TensorMetadata;
use std::time::Instant;

/// What one rank sends and receives in a halo exchange (primitive level): per rank `q`, the
/// rows of this rank's state `q` reads (indices and their inverse, see [`RowIndex`]; `None`
/// for none) and the number of rows this rank receives from `q`, appended in rank order.
#[derive(Clone, Debug)]
pub struct RankRoutesPrim<B: Backend> {
    /// Own rows of the state.
    pub owned: usize,
    /// Per rank: the rows sent there.
    pub send: Vec<Option<(IntTensor<B>, IntTensor<B>)>>,
    /// Per rank: the rows received from it.
    pub recv: Vec<usize>,
    /// The transport.
    pub comm: Comm,
}

/// The values of `t` read back into a buffer of the pool (its dtype's little-endian bytes,
/// row-major), timed as read back.
pub(crate) fn read_back<B: Backend, K: BasicOps<B>>(t: Tensor<B, 2, K>, comm: &Comm) -> Result<Vec<u8>, CommError> {
    let start = Instant::now();
    let data = t.try_into_data().map_err(|e| CommError::Config(format!("reading rows back: {e:?}")))?;
    let len = data.as_bytes().len();
    let mut bytes = comm.pool().take(len).map_err(|e| CommError::Config(format!("a buffer of {len} bytes: {e}")))?;
    bytes.extend_from_slice(data.as_bytes());
    let seconds = start.elapsed().as_secs_f64();
    comm.record(|s| s.readback_seconds += seconds);
    Ok(bytes)
}

/// `rows` rows of `width` values of `dtype` from `bytes` sent by `peer`.
pub(crate) fn rows_from<B: TransferOps + RowOps>(
    bytes: Vec<u8>,
    [rows, width]: [usize; 2],
    dtype: DType,
    device: &B::Device,
    comm: &Comm,
    peer: usize,
) -> Result<FloatTensor<B>, CommError> {
    let expected = rows * width * dtype.size();
    if bytes.len() != expected {
        return Err(CommError::Size { rank: comm.rank(), peer, got: bytes.len(), expected });
    }
    let start = Instant::now();
    let t = B::float_from_host(&bytes, [rows, width], dtype, device);
    comm.pool().give(bytes);
    let seconds = start.elapsed().as_secs_f64();
    comm.record(|s| s.upload_seconds += seconds);
    Ok(t)
}

/// [`TransferOps::rank_transfer`](crate::dist::transfer::TransferOps::rank_transfer) of rows
/// `send[q]` to rank `q` and `recv[q]` rows from each: the received rows in rank order (`None`:
/// none), counted in the stats. A failure poisons the handle.
pub(crate) fn device_transfer<B: TransferOps + RowOps>(
    send: Vec<Option<FloatTensor<B>>>,
    recv: &[usize],
    width: usize,
    dtype: DType,
    device: &B::Device,
    comm: &Comm,
) -> Result<Option<FloatTensor<B>>, CommError> {
    let sent: usize = send.iter().flatten().map(|t| t.shape()[0]).sum();
    counted(sent, recv, width * dtype.size(), comm, || B::rank_transfer(send, recv, width, dtype, device, comm))
}

/// [`device_transfer`] of integer rows
/// ([`TransferOps::rank_transfer_ints`](crate::dist::transfer::TransferOps::rank_transfer_ints)).
pub(crate) fn device_transfer_ints<B: TransferOps + RowOps>(
    send: Vec<Option<IntTensor<B>>>,
    recv: &[usize],
    width: usize,
    dtype: DType,
    device: &B::Device,
    comm: &Comm,
) -> Result<Option<IntTensor<B>>, CommError> {
    let sent: usize = send.iter().flatten().map(|t| t.shape()[0]).sum();
    counted(sent, recv, width * dtype.size(), comm, || B::rank_transfer_ints(send, recv, width, dtype, device, comm))
}

/// Runs a device transfer of `sent` rows out and `recv` rows in, of `row` bytes each: counted
/// in the stats; `None` from the backend (it cannot) and failures are errors that poison the
/// handle.
pub(crate) fn counted<T>(
    sent: usize,
    recv: &[usize],
    row: usize,
    comm: &Comm,
    transfer: impl FnOnce() -> Option<Result<Option<T>, CommError>>,
) -> Result<Option<T>, CommError> {
    let received: usize = recv.iter().sum::<usize>() * row;
    let start = Instant::now();
    let out = transfer().unwrap_or_else(|| Err(CommError::Config("this backend cannot move rows through NCCL".into())));
    let out = out.inspect_err(|e| comm.poison(e.clone()))?;
    comm.record_device(sent * row, received, start.elapsed().as_secs_f64());
    Ok(out)
}

/// The forward pass on primitives: sends the rows every rank reads, appends those received.
pub(crate) fn rank_forward<B: TransferOps + RowOps>(
    state: FloatTensor<B>,
    r: &RankRoutesPrim<B>,
) -> Result<FloatTensor<B>, CommError> {
    let world = r.comm.world();
    let width = state.shape()[1];
    let dtype = state.dtype();
    let device = B::float_device(&state);
    if r.comm.row_transport() == RowTransport::Nccl {
        r.comm.check()?;
        let send =
            r.send.iter().map(|s| s.as_ref().map(|(indices, _)| B::float_select(state.clone(), 0, indices.clone())));
        let received = device_transfer::<B>(send.collect(), &r.recv, width, dtype, &device, &r.comm)?;
        return Ok(match received {
            Some(rows) => B::float_cat(vec![state, rows], 0),
            None => state,
        });
    }
    let mut out = vec![Vec::new(); world];
    for (q, s) in r.send.iter().enumerate() {
        if let Some((indices, _)) = s {
            out[q] = read_back(t2::<B>(B::float_select(state.clone(), 0, indices.clone())), &r.comm)?;
        }
    }
    let got = r.comm.all_to_all(out)?;
    let mut parts = vec![state];
    for (q, bytes) in got.into_iter().enumerate() {
        if r.recv[q] > 0 {
            parts.push(rows_from::<B>(bytes, [r.recv[q], width], dtype, &device, &r.comm, q)?);
        }
    }
    Ok(match parts.len() {
        1 => parts.remove(0),
        _ => B::float_cat(parts, 0),
    })
}

/// The backward pass on primitives: `dy` (`[owned + received, w]`) -> the gradient of the own
/// rows, the halo rows' gradients sent back to their owners and those received added to the
/// rows this rank sent ([`RowOps::add_rows`](crate::ops::rows::RowOps::add_rows): in place over the
/// sent rows where the backend has the kernel). A failed transfer poisons the handle and leaves the
/// own rows' gradient without the halo terms (the run stops at [`Comm::check`]).
pub(crate) fn rank_backward<B: TransferOps + RowOps>(dy: FloatTensor<B>, r: &RankRoutesPrim<B>) -> FloatTensor<B> {
    let world = r.comm.world();
    let width = dy.shape()[1];
    let dtype = dy.dtype();
    let device = B::float_device(&dy);
    let own = crate::ops::primitive::row_range::<B>(dy.clone(), 0, r.owned);
    if r.comm.row_transport() == RowTransport::Nccl {
        let received = (|| {
            r.comm.check()?;
            let mut send = vec![None; world];
            let mut start = r.owned;
            for (q, &rows) in r.recv.iter().enumerate() {
                if rows > 0 {
                    send[q] = Some(crate::ops::primitive::row_range::<B>(dy.clone(), start, rows));
                    start += rows;
                }
            }
            let counts: Vec<usize> = r.send.iter().map(|s| s.as_ref().map_or(0, |(i, _)| i.shape()[0])).collect();
            device_transfer::<B>(send, &counts, width, dtype, &device, &r.comm).map(|g| (g, counts))
        })();
        return match received {
            Ok((Some(g), counts)) => {
                let mut start = 0;
                let mut sum = own;
                for (q, s) in r.send.iter().enumerate() {
                    if let Some((indices, inverse)) = s {
                        let piece = crate::ops::primitive::row_range::<B>(g.clone(), start, counts[q]);
                        sum = B::add_rows(sum, piece, indices.clone(), inverse.clone());
                        start += counts[q];
                    }
                }
                sum
            }
            Ok((None, _)) => own,
            Err(e) => {
                r.comm.poison(e);
                own
            }
        };
    }
    let received = (|| {
        let mut out = vec![Vec::new(); world];
        let mut start = r.owned;
        for (q, &rows) in r.recv.iter().enumerate() {
            if rows > 0 {
                out[q] = read_back(t2::<B>(crate::ops::primitive::row_range::<B>(dy.clone(), start, rows)), &r.comm)?;
                start += rows;
            }
        }
        let mut pieces = Vec::new();
        for (q, bytes) in r.comm.all_to_all(out)?.into_iter().enumerate() {
            if let Some((indices, inverse)) = &r.send[q] {
                let g = rows_from::<B>(bytes, [indices.shape()[0], width], dtype, &device, &r.comm, q)?;
                pieces.push((g, indices.clone(), inverse.clone()));
            }
        }
        Ok::<_, CommError>(pieces)
    })();
    match received {
        Ok(pieces) => pieces.into_iter().fold(own, |sum, (g, indices, inverse)| B::add_rows(sum, g, indices, inverse)),
        Err(e) => {
            r.comm.poison(e);
            own
        }
    }
}
