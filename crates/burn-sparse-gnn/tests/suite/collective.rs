//! The TCP transport between ranks (threads of this test standing in for processes) and the
//! halo exchange of one rank: values and gradients against a reference computed on the host,
//! the rendezvous refusing ranks that do not belong, and a stopped peer ending in an error.

use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::collective::{
    rank_exchange, Comm, CommError, RankRoutes, RowTransport, RowTransportChoice, TcpComm, TcpCommConfig,
};
use burn_sparse_gnn::{Cpu, RowIndex};
use std::net::TcpListener;
use std::time::Duration;

type B = Autodiff<Cpu>;

/// Runs `f(comm)` on `world` ranks (threads), rank 0 hosting on a free port of 127.0.0.1.
fn ranks<T: Send + 'static>(
    world: usize,
    tags: Vec<u64>,
    f: impl Fn(Comm) -> T + Send + Sync + 'static,
) -> Vec<Result<T, CommError>> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("an address").to_string();
    let f = std::sync::Arc::new(f);
    let mut listener = Some(listener);
    let handles: Vec<_> = (0..world)
        .map(|rank| {
            let mut cfg = TcpCommConfig::new(rank, world, addr.clone());
            cfg.tag = tags[rank];
            cfg.connect_timeout = Duration::from_secs(20);
            let listener = if rank == 0 { listener.take() } else { None };
            let f = f.clone();
            std::thread::spawn(move || {
                let comm = match listener {
                    Some(l) => TcpComm::host(l, &cfg),
                    None => TcpComm::connect(&cfg),
                }?;
                Ok(f(Comm::new(comm)))
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
}

#[test]
fn all_to_all_hands_every_rank_its_buffers() {
    for world in [1usize, 2, 3, 5] {
        let got = ranks(world, vec![7; world], move |comm| {
            let r = comm.rank();
            // a long buffer to one rank, an empty one to another
            let out: Vec<Vec<u8>> = (0..world)
                .map(|q| match (r + q) % 3 {
                    0 => Vec::new(),
                    1 => vec![(r * 10 + q) as u8; 3],
                    _ => (0..100_000).map(|i| (i + r + q) as u8).collect(),
                })
                .collect();
            let first = comm.all_to_all(out).expect("exchange");
            let stats = comm.take_stats();
            let sum = comm.all_reduce_sum(&[r as f64, 1.0]).expect("all-reduce");
            let b = comm.broadcast(if r == 0 { vec![42, 43] } else { vec![1] }).expect("broadcast");
            comm.barrier().expect("barrier");
            let after = comm.take_stats();
            // f32 values sent as f32, summed in f64: 0.1 + 0.1 + ... as f64 sums of the f32 value
            let sum32 = comm.all_reduce_sum_f32(&[0.1, r as f32]).expect("all-reduce f32");
            assert_eq!(comm.take_stats().bytes_sent, (world as u64 - 1) * 8, "two f32 words to each other rank");
            assert_eq!(sum32, vec![f64::from(0.1f32) * world as f64, (0..world).sum::<usize>() as f64]);
            (first, sum, b, stats, after)
        });
        let len = |from: usize, to: usize| match (from + to) % 3 {
            0 => 0u64,
            1 => 3,
            _ => 100_000,
        };
        for (r, res) in got.into_iter().enumerate() {
            let (first, sum, b, stats, after) = res.expect("rank ran");
            // the first exchange's bytes, to and from the other ranks only
            let others = || (0..world).filter(move |&q| q != r);
            assert_eq!(stats.collectives, 1, "world {world} rank {r}");
            assert_eq!(stats.bytes_sent, others().map(|q| len(r, q)).sum::<u64>(), "world {world} rank {r}");
            assert_eq!(stats.bytes_received, others().map(|q| len(q, r)).sum::<u64>(), "world {world} rank {r}");
            assert!(stats.transport_seconds >= 0.0 && stats.readback_seconds == 0.0, "{stats:?}");
            // taken: the all-reduce, the broadcast and the barrier counted anew
            assert_eq!(after.collectives, 3, "world {world} rank {r}");
            assert_eq!(after.bytes_received, (world as u64 - 1) * 16 + u64::from(r != 0) * 2, "rank {r}");
            for (q, buf) in first.iter().enumerate() {
                let want: Vec<u8> = match (q + r) % 3 {
                    0 => Vec::new(),
                    1 => vec![(q * 10 + r) as u8; 3],
                    _ => (0..100_000).map(|i| (i + q + r) as u8).collect(),
                };
                assert_eq!(buf, &want, "world {world}: rank {r} from rank {q}");
            }
            let ranks_sum = (0..world).sum::<usize>() as f64;
            assert_eq!(sum, vec![ranks_sum, world as f64], "world {world} rank {r}");
            assert_eq!(b, vec![42, 43], "world {world} rank {r}");
        }
    }
}

#[test]
fn the_rendezvous_refuses_ranks_of_another_run() {
    // another configuration tag: rank 0 and the stranger both report it
    let got = ranks(2, vec![1, 2], |_| ());
    for res in &got {
        let e = res.as_ref().expect_err("refused");
        assert!(e.to_string().contains("another configuration"), "{e}");
    }
    // a rank outside the world fails before connecting
    let e = TcpComm::connect(&TcpCommConfig::new(3, 3, "127.0.0.1:1")).expect_err("rank 3 of 3");
    assert!(matches!(e, CommError::Config(_)), "{e}");
    // rank 0 gives up when nobody comes
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let mut cfg = TcpCommConfig::new(0, 2, listener.local_addr().expect("address").to_string());
    cfg.connect_timeout = Duration::from_millis(300);
    let e = TcpComm::host(listener, &cfg).expect_err("alone");
    assert!(e.to_string().contains("did not join"), "{e}");
}

#[test]
fn a_stopped_rank_ends_the_others_collectives_with_an_error() {
    let got = ranks(3, vec![0; 3], |comm| {
        if comm.rank() == 2 {
            return None; // stops: its connection closes
        }
        let e = comm.all_to_all(vec![vec![1u8; 8]; 3]).expect_err("rank 2 is gone");
        // the handle is poisoned: later collectives fail at once with the same error
        assert_eq!(comm.check().expect_err("poisoned"), e);
        Some(e)
    });
    for (r, res) in got.iter().take(2).enumerate() {
        let e = res.as_ref().expect("rank ran").clone().expect("an error");
        assert!(matches!(e, CommError::Io { .. } | CommError::Protocol { .. }), "rank {r}: {e}");
    }
}

/// Node `g` of a 3-rank layout: rank = g % 3, its local row g / 3. Rank p sends rank q the
/// rows whose global id is divisible by (q + 2) (q != p), in ascending order.
fn layout(world: usize, n: usize) -> Vec<(Vec<usize>, Vec<Vec<u32>>)> {
    (0..world)
        .map(|p| {
            let own: Vec<usize> = (0..n).filter(|g| g % world == p).collect();
            let send = (0..world)
                .map(|q| match q == p {
                    true => Vec::new(),
                    false => (0..own.len() as u32).filter(|&i| own[i as usize].is_multiple_of(q + 2)).collect(),
                })
                .collect();
            (own, send)
        })
        .collect()
}

/// This rank's routes in `lay`: the rows it sends every other rank, the rows it receives.
fn routes_of(lay: &[(Vec<usize>, Vec<Vec<u32>>)], comm: Comm, dev: &burn::tensor::Device<B>) -> RankRoutes<B> {
    let p = comm.rank();
    let (own, send) = &lay[p];
    let send_idx: Vec<Option<RowIndex<B>>> =
        send.iter().map(|s| (!s.is_empty()).then(|| RowIndex::new(s, own.len(), dev).expect("rows"))).collect();
    let recv: Vec<usize> = (0..lay.len()).map(|q| if q == p { 0 } else { lay[q].1[p].len() }).collect();
    RankRoutes::new(own.len(), send_idx, recv, comm).expect("routes")
}

/// The global ids of rank `p`'s rows after an exchange of `lay`: its own, then the rows each
/// other rank sends it, in rank order.
fn exchanged_nodes(lay: &[(Vec<usize>, Vec<Vec<u32>>)], p: usize) -> Vec<usize> {
    let mut nodes = lay[p].0.clone();
    for (_, (own, send)) in lay.iter().enumerate().filter(|&(q, _)| q != p) {
        nodes.extend(send[p].iter().map(|&i| own[i as usize]));
    }
    nodes
}

/// The rows rank `p` sends (`true`) or receives in a forward exchange of `lay`.
fn routes_rows(lay: &[(Vec<usize>, Vec<Vec<u32>>)], p: usize, sends: bool) -> usize {
    match sends {
        true => lay[p].1.iter().enumerate().filter(|&(q, _)| q != p).map(|(_, s)| s.len()).sum(),
        false => (0..lay.len()).filter(|&q| q != p).map(|q| lay[q].1[p].len()).sum(),
    }
}

#[test]
fn rank_exchange_moves_rows_forward_and_gradients_back() {
    let (world, n, w) = (3usize, 50usize, 5usize);
    let lay = std::sync::Arc::new(layout(world, n));
    // the value of node g, column c, and the weight of a received row in the loss
    let value = |g: usize, c: usize| (g * 10 + c) as f32 * 0.5;
    let coef = |g: usize, at: usize| 1.0 + g as f32 * 0.01 + at as f32;
    let lay2 = lay.clone();
    let got = ranks(world, vec![0; world], move |comm| {
        let p = comm.rank();
        let dev = Default::default();
        let own = &lay2[p].0;
        let routes = routes_of(&lay2, comm, &dev);
        let data: Vec<f32> = own.iter().flat_map(|&g| (0..w).map(move |c| value(g, c))).collect();
        let x = Tensor::<B, 2>::from_data(TensorData::new(data, [own.len(), w]), &dev).require_grad();
        let out = rank_exchange(x.clone(), &routes).expect("exchange");
        // the global ids of the output rows: own, then rank q's sent rows for each q
        let ids = exchanged_nodes(&lay2, p);
        let weights: Vec<f32> = ids.iter().map(|&g| coef(g, p)).collect();
        let wt = Tensor::<B, 1>::from_data(TensorData::new(weights, [ids.len()]), &dev);
        let loss = (out.clone() * wt.unsqueeze_dim::<2>(1)).sum();
        let grads = loss.backward();
        routes.comm().check().expect("no failed collective");
        let dx = x.grad(&grads).expect("a gradient").into_data().to_vec::<f32>().expect("f32");
        (ids, out.into_data().to_vec::<f32>().expect("f32"), dx, routes.comm().stats())
    });
    for (p, res) in got.into_iter().enumerate() {
        let (ids, out, dx, stats) = res.expect("rank ran");
        // one collective each way; the rows sent forward come back as gradients
        let (sent, received) = (routes_rows(&lay, p, true), routes_rows(&lay, p, false));
        assert_eq!(stats.collectives, 2, "rank {p}");
        assert_eq!(stats.bytes_sent, ((sent + received) * w * 4) as u64, "rank {p}");
        assert_eq!(stats.bytes_received, ((sent + received) * w * 4) as u64, "rank {p}");
        // forward: every row holds its node's values
        for (row, &g) in ids.iter().enumerate() {
            for c in 0..w {
                assert_eq!(out[row * w + c], value(g, c), "rank {p} row {row} (node {g})");
            }
        }
        // backward: the own weight plus the weight of every rank that received the row
        let (own, send) = &lay[p];
        for (i, &g) in own.iter().enumerate() {
            let mut want = coef(g, p);
            for (q, s) in send.iter().enumerate() {
                if s.contains(&(i as u32)) {
                    want += coef(g, q);
                }
            }
            for c in 0..w {
                assert!((dx[i * w + c] - want).abs() < 1e-5, "rank {p} node {g}: {} vs {want}", dx[i * w + c]);
            }
        }
    }
}

#[test]
fn rank_routes_refuse_lists_that_do_not_fit() {
    let got = ranks(2, vec![0; 2], |comm| {
        let dev = Default::default();
        let rows = RowIndex::<B>::new(&[0, 1], 4, &dev).expect("rows");
        // one list per rank, not three
        let e1 = RankRoutes::<B>::new(4, vec![None, None, None], vec![0, 0], comm.clone()).expect_err("3 lists");
        // a send list over 4 rows for a state of 5
        let mut send = vec![None, None];
        send[1 - comm.rank()] = Some(rows);
        let e2 = RankRoutes::<B>::new(5, send, vec![0, 0], comm.clone()).expect_err("4 rows for 5");
        // the state's rows must be the own rows
        let routes = RankRoutes::<B>::new(3, vec![None, None], vec![0, 0], comm).expect("no rows move");
        let e3 = rank_exchange(Tensor::<B, 2>::zeros([2, 3], &dev), &routes).expect_err("2 rows for 3");
        [e1, e2, e3].map(|e| e.to_string())
    });
    for res in got {
        let msgs = res.expect("rank ran");
        assert!(msgs[0].contains("3 send"), "{}", msgs[0]);
        assert!(msgs[1].contains("indexes 4 rows"), "{}", msgs[1]);
        assert!(msgs[2].contains("2 rows for routes over 3"), "{}", msgs[2]);
    }
}

#[test]
fn the_buffer_pool_hands_back_kept_buffers() {
    use burn_sparse_gnn::collective::BufferPool;
    let pool = BufferPool::default();
    let a = pool.take(1000).expect("memory");
    let mut big = pool.take(1 << 20).expect("memory");
    assert!(a.is_empty() && a.capacity() >= 1000 && big.capacity() >= 1 << 20);
    let ptr = a.as_ptr();
    big.extend_from_slice(&[7; 10]);
    pool.give(big);
    pool.give(a);
    // the smallest kept buffer that fits comes back, emptied
    let b = pool.take(500).expect("memory");
    assert_eq!(b.as_ptr(), ptr, "the 1000-byte buffer is the smallest that fits");
    let c = pool.take(2 << 20).expect("memory");
    assert!(c.is_empty() && c.capacity() >= 2 << 20, "the largest grown");
    assert_eq!(pool.take(0).expect("nothing").capacity(), 0, "an empty request takes no buffer");
    // at most 16 are kept
    for _ in 0..40 {
        pool.give(vec![0; 64]);
    }
    let kept = (0..40).filter_map(|_| pool.take(1).ok()).filter(|b| b.capacity() >= 64).count();
    assert_eq!(kept, 16);
}

#[test]
fn rank_exchange_ints_moves_id_rows() {
    use burn::tensor::Int;
    use burn_sparse_gnn::collective::rank_exchange_ints;
    let (world, n, w) = (3usize, 40usize, 3usize);
    let lay = std::sync::Arc::new(layout(world, n));
    let lay2 = lay.clone();
    // negative ids too: the sign survives the bytes
    let id = |g: usize, c: usize| (g * 7 + c) as i64 - 50;
    let got = ranks(world, vec![0; world], move |comm| {
        let p = comm.rank();
        let dev = Default::default();
        let own = &lay2[p].0;
        let routes = routes_of(&lay2, comm, &dev);
        let data: Vec<i64> = own.iter().flat_map(|&g| (0..w).map(move |c| id(g, c))).collect();
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(data, [own.len(), w]), &dev);
        let dtype = ids.dtype();
        let out = rank_exchange_ints(ids, &routes).expect("exchange");
        assert_eq!(out.dtype(), dtype, "the ids keep their dtype");
        let nodes = exchanged_nodes(&lay2, p);
        (nodes, out.into_data().convert::<i64>().to_vec::<i64>().expect("i64"))
    });
    for (p, res) in got.into_iter().enumerate() {
        let (nodes, out) = res.expect("rank ran");
        assert!(nodes.len() > lay[p].0.len(), "rank {p} receives rows");
        assert_eq!(out.len(), nodes.len() * w, "rank {p}");
        for (row, &g) in nodes.iter().enumerate() {
            for c in 0..w {
                assert_eq!(out[row * w + c], id(g, c), "rank {p} row {row} (node {g})");
            }
        }
    }
}

#[test]
fn ranks_without_a_cuda_device_keep_their_rows_on_the_host() {
    // the CPU backend has no CUDA device: every rank agrees on the host transport (auto), or
    // every rank reports why NCCL cannot run (asked for); the handle stays usable after both
    let got = ranks(3, vec![1; 3], |comm| {
        let none = <Cpu as burn_sparse_gnn::dist::transfer::TransferOps>::nccl_device(&Default::default());
        let host = comm.setup_rows(none, RowTransportChoice::Host).expect("host");
        let auto = comm.setup_rows(none, RowTransportChoice::Auto).expect("auto");
        let asked = comm.setup_rows(none, RowTransportChoice::Nccl);
        let sum = comm.all_reduce_sum(&[1.0]).expect("the handle still works");
        (host, auto, asked, sum[0], comm.row_transport())
    });
    for r in got {
        let (host, auto, asked, sum, now) = r.expect("rank");
        assert_eq!((host, auto, now), (RowTransport::Host, RowTransport::Host, RowTransport::Host));
        let e = asked.expect_err("NCCL refused").to_string();
        assert!(e.contains("rank(s) [0, 1, 2] cannot use NCCL") && e.contains("not on a CUDA device"), "{e}");
        assert_eq!(sum, 3.0);
    }
}
