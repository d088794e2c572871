//! The halo exchange of one rank as a differentiable op, at the tensor level, and other
//! collectives of tensors.

use crate::dist::collective::comm::Comm;
use crate::dist::collective::comm::CommError;
use crate::dist::collective::comm::RowTransport;
use crate::dist::collective::rank_pass::RankRoutesPrim;
use crate::dist::collective::rank_pass::*;
use crate::dist::exchange::ExchangeOps;
use crate::ops::cbsr::Cbsr;
use crate::ops::cbsr::CbsrOps;
use crate::ops::primitive::CbsrPrim;
use crate::ops::rows::RowIndex;
use burn::tensor::backend::Backend;
use burn::tensor::Int;
use burn::tensor::Tensor;
use burn::tensor::TensorData;
use burn::tensor::TensorPrimitive;
use std::time::Instant;

/// [`RankRoutesPrim`] at the tensor level.
#[derive(Clone, Debug)]
pub struct RankRoutes<B: Backend> {
    owned: usize,
    send: Vec<Option<RowIndex<B>>>,
    recv: Vec<usize>,
    comm: Comm,
}

impl<B: Backend> RankRoutes<B> {
    /// The routes of this rank (`comm.rank()`) over a state of `owned` rows: `send[q]` the rows
    /// rank `q` reads (on this rank's device), `recv[q]` the rows it receives from `q`. Errors
    /// when the lists are not one per rank, a list names this rank itself, or a send list does
    /// not fit `owned` rows.
    pub fn new(owned: usize, send: Vec<Option<RowIndex<B>>>, recv: Vec<usize>, comm: Comm) -> Result<Self, CommError> {
        let (rank, world) = (comm.rank(), comm.world());
        if send.len() != world || recv.len() != world {
            return Err(CommError::Config(format!(
                "routes of rank {rank}: {} send and {} receive lists for {world} ranks",
                send.len(),
                recv.len()
            )));
        }
        if send[rank].is_some() || recv[rank] != 0 {
            return Err(CommError::Config(format!("routes of rank {rank} name the rank itself")));
        }
        if let Some(bad) = send.iter().flatten().find(|r| r.source_rows() != owned) {
            return Err(CommError::Config(format!(
                "a send list of rank {rank} indexes {} rows, the state has {owned}",
                bad.source_rows()
            )));
        }
        Ok(Self { owned, send, recv, comm })
    }

    /// Own rows.
    pub fn owned(&self) -> usize {
        self.owned
    }

    /// Rows received per exchange.
    pub fn received(&self) -> usize {
        self.recv.iter().sum()
    }

    /// Rows sent per exchange.
    pub fn sent(&self) -> usize {
        self.send.iter().flatten().map(RowIndex::len).sum()
    }

    /// The transport.
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The routes without autodiff (for the `valid()` copy of a model).
    pub fn inner(&self) -> RankRoutes<B::InnerBackend>
    where
        B: burn::tensor::backend::AutodiffBackend,
    {
        RankRoutes {
            owned: self.owned,
            send: self.send.iter().map(|s| s.as_ref().map(RowIndex::inner)).collect(),
            recv: self.recv.clone(),
            comm: self.comm.clone(),
        }
    }

    fn prim(&self) -> RankRoutesPrim<B> {
        RankRoutesPrim {
            owned: self.owned,
            send: self
                .send
                .iter()
                .map(|s| s.as_ref().map(|r| (r.indices().into_primitive(), r.inverse().into_primitive())))
                .collect(),
            recv: self.recv.clone(),
            comm: self.comm.clone(),
        }
    }
}

/// The halo exchange of this rank (differentiable, see the module docs): `[state; rows of
/// rank q for each q with rows]`. Every rank must call it with its own routes of the same
/// exchange. Errors when the state's rows are not the routes' own rows, or the transport
/// fails.
pub fn rank_exchange<B: ExchangeOps>(state: Tensor<B, 2>, routes: &RankRoutes<B>) -> Result<Tensor<B, 2>, CommError> {
    if state.dims()[0] != routes.owned {
        return Err(CommError::Config(format!(
            "rank {}: a state of {} rows for routes over {} own rows",
            routes.comm.rank(),
            state.dims()[0],
            routes.owned
        )));
    }
    let out = B::ad_rank_exchange(state.into_primitive().tensor(), &routes.prim())?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(out)))
}

/// The element-wise sum over the ranks of `values` (a vector on this rank's device, the same
/// length and dtype on every rank) on the devices, where the halo rows move through NCCL: every
/// rank's values gathered (`ncclAllGather`) and added in rank order on the device, so every
/// rank gets the same bits. `None` where the rows take the host transport or the backend
/// cannot (sum through [`Comm::all_reduce_sum`] then). Not differentiable.
pub fn device_all_reduce_sum<B: ExchangeOps>(
    values: Tensor<B, 1>,
    comm: &Comm,
) -> Option<Result<Tensor<B, 1>, CommError>> {
    if comm.row_transport() != RowTransport::Nccl {
        return None;
    }
    if let Err(e) = comm.check() {
        return Some(Err(e));
    }
    let n = values.dims()[0];
    let world = comm.world();
    let bytes = n * values.dtype().size();
    let start = Instant::now();
    let flat = values.reshape([1, n]).into_primitive().tensor();
    let all = match B::rank_all_gather(flat, comm)? {
        Ok(t) => Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(t)),
        Err(e) => {
            comm.poison(e.clone());
            return Some(Err(e));
        }
    };
    let sum = (1..world).fold(all.clone().slice([0..1, 0..n]), |s, q| s + all.clone().slice([q..q + 1, 0..n]));
    comm.record_device(bytes * (world - 1), bytes * (world - 1), start.elapsed().as_secs_f64());
    Some(Ok(sum.reshape([n])))
}

/// The halo exchange of an integer matrix (not differentiable): `[ids; rows of rank q for
/// each q with rows]`, as [`rank_exchange`] moves a state's rows, in the ids' dtype (on the
/// devices through NCCL where the rows take it, else through the host). Every rank must call
/// it with its own routes. Errors when `ids` does not have the routes' own rows, or
/// the transport fails.
pub fn rank_exchange_ints<B: ExchangeOps>(
    ids: Tensor<B, 2, Int>,
    routes: &RankRoutes<B>,
) -> Result<Tensor<B, 2, Int>, CommError> {
    let comm = &routes.comm;
    let [rows, width] = ids.dims();
    if rows != routes.owned {
        return Err(CommError::Config(format!(
            "rank {}: an id matrix of {rows} rows for routes over {} own rows",
            comm.rank(),
            routes.owned
        )));
    }
    let (device, dtype) = (ids.device(), ids.dtype());
    if comm.row_transport() == RowTransport::Nccl {
        comm.check()?;
        let send =
            routes.send.iter().map(|s| s.as_ref().map(|index| ids.clone().select(0, index.indices()).into_primitive()));
        let received = device_transfer_ints::<B>(send.collect(), &routes.recv, width, dtype, &device, comm)?;
        return Ok(match received {
            Some(rows) => Tensor::cat(vec![ids, Tensor::from_primitive(rows)], 0),
            None => ids,
        });
    }
    let mut out = vec![Vec::new(); comm.world()];
    for (q, s) in routes.send.iter().enumerate() {
        if let Some(index) = s {
            out[q] = read_back(ids.clone().select(0, index.indices()), comm)?;
        }
    }
    let mut parts = vec![ids];
    for (q, bytes) in comm.all_to_all(out)?.into_iter().enumerate() {
        let n = routes.recv[q];
        if n == 0 {
            continue;
        }
        let expected = n * width * dtype.size();
        if bytes.len() != expected {
            return Err(CommError::Size { rank: comm.rank(), peer: q, got: bytes.len(), expected });
        }
        let start = Instant::now();
        let data = TensorData::from_bytes_vec(bytes.to_vec(), [n, width], dtype);
        parts.push(Tensor::from_data(data, (&device, dtype)));
        comm.pool().give(bytes);
        let seconds = start.elapsed().as_secs_f64();
        comm.record(|st| st.upload_seconds += seconds);
    }
    Ok(Tensor::cat(parts, 0))
}

/// The halo exchange of CBSR rows (MaxK, max-pool states): the values through
/// [`rank_exchange`] (their gradients return) and the column ids through
/// [`rank_exchange_ints`], as they are stored (packed or not).
pub fn rank_exchange_cbsr<B: ExchangeOps + CbsrOps>(c: &Cbsr<B>, routes: &RankRoutes<B>) -> Result<Cbsr<B>, CommError> {
    let values = rank_exchange(c.values(), routes)?;
    let ids = rank_exchange_ints(Tensor::<B, 2, Int>::from_primitive(c.prim().indices.clone()), routes)?;
    Ok(Cbsr::from_prim(CbsrPrim {
        n: values.dims()[0],
        values: values.into_primitive().tensor(),
        indices: ids.into_primitive(),
        ..c.prim().clone()
    }))
}
