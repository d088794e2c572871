//! A sampled block on the device (DGL's message-flow graph): the destination nodes, the
//! neighbours sampled for them ([`super::kernel`]), relabelled so that the destinations come
//! first among the sources and the other sources follow in ascending global id. Deterministic:
//! a node-sized mark array, a flag per newly reached node and an exclusive scan (no hashing, no
//! atomics); see [`super::reference::sample_block`].

use crate::device::cube_count;
use cubecl::prelude::*;

/// Threads per cube of the element-wise kernels here.
const THREADS: u32 = 256;
/// Threads of a scan cube, and entries each thread takes.
const SCAN_THREADS: u32 = 256;
const SCAN_PER: u32 = 4;
/// Entries per scan block.
pub const SCAN_BLOCK: usize = (SCAN_THREADS * SCAN_PER) as usize;

/// Inclusive scan of one value per thread of the cube (Hillis-Steele in shared memory).
#[cube]
fn cube_inclusive_scan(value: u32, smem: &mut SharedMemory<u32>) -> u32 {
    let t = UNIT_POS as usize;
    smem[t] = value;
    sync_cube();
    let mut off = 1u32;
    while off < SCAN_THREADS {
        let mut v = smem[t];
        if t >= off as usize {
            v += smem[t - off as usize];
        }
        sync_cube();
        smem[t] = v;
        sync_cube();
        off *= 2u32;
    }
    smem[t]
}

/// Each block of [`SCAN_BLOCK`] entries: the exclusive scan within the block into `out`, the
/// block's total into `sums`.
#[cube(launch)]
fn scan_blocks(input: &Array<u32>, out: &mut Array<u32>, sums: &mut Array<u32>, len: u32) {
    let b = CUBE_POS;
    let n_blocks = (len as usize + SCAN_BLOCK - 1) / SCAN_BLOCK;
    if b >= n_blocks {
        terminate!();
    }
    let mut smem = SharedMemory::<u32>::new(SCAN_THREADS as usize);
    let first = b * SCAN_BLOCK + UNIT_POS as usize * SCAN_PER as usize;
    let mut own = 0u32;
    #[unroll]
    for q in 0..SCAN_PER {
        let i = first + q as usize;
        if i < len as usize {
            own += input[i];
        }
    }
    let incl = cube_inclusive_scan(own, &mut smem);
    let mut run = incl - own;
    #[unroll]
    for q in 0..SCAN_PER {
        let i = first + q as usize;
        if i < len as usize {
            let v = input[i];
            out[i] = run;
            run += v;
        }
    }
    if UNIT_POS == SCAN_THREADS - 1 {
        sums[b] = incl;
    }
}

/// One cube: the block totals `sums` (`n` of them) become their exclusive scan; the grand total
/// goes to `total[0]`.
#[cube(launch)]
fn scan_sums(sums: &mut Array<u32>, total: &mut Array<u32>, n: u32) {
    let mut smem = SharedMemory::<u32>::new(SCAN_THREADS as usize);
    let chunk = (n + SCAN_THREADS - 1) / SCAN_THREADS;
    let start = UNIT_POS * chunk;
    let end = u32::min(start + chunk, n);
    let mut own = 0u32;
    let mut i = start;
    while i < end {
        own += sums[i as usize];
        i += 1u32;
    }
    let incl = cube_inclusive_scan(own, &mut smem);
    let mut run = incl - own;
    let mut i = start;
    while i < end {
        let v = sums[i as usize];
        sums[i as usize] = run;
        run += v;
        i += 1u32;
    }
    if UNIT_POS == SCAN_THREADS - 1 {
        total[0] = incl;
    }
}

#[cube(launch)]
fn add_block_offsets(out: &mut Array<u32>, offsets: &Array<u32>, len: u32) {
    let i = ABSOLUTE_POS;
    if i >= len as usize {
        terminate!();
    }
    out[i] += offsets[i / SCAN_BLOCK];
}

/// The exclusive scan of `input` (`len` u32 entries) into `out`, and its total into `total[0]`;
/// `sums` is a scratch of at least `len.div_ceil(SCAN_BLOCK)` entries (at least 1).
#[allow(clippy::too_many_arguments)]
pub fn launch_exclusive_scan<R: Runtime>(
    client: &ComputeClient<R>,
    input: TensorBinding<R>,
    out: TensorBinding<R>,
    sums: TensorBinding<R>,
    total: TensorBinding<R>,
    len: usize,
) {
    let n_blocks = len.div_ceil(SCAN_BLOCK);
    if n_blocks > 0 {
        scan_blocks::launch::<R>(
            client,
            cube_count(client, n_blocks),
            CubeDim::new_1d(SCAN_THREADS),
            input.into_array_arg(),
            out.clone().into_array_arg(),
            sums.clone().into_array_arg(),
            len as u32,
        );
    }
    scan_sums::launch::<R>(
        client,
        CubeCount::Static(1, 1, 1),
        CubeDim::new_1d(SCAN_THREADS),
        sums.clone().into_array_arg(),
        total.into_array_arg(),
        n_blocks as u32,
    );
    if n_blocks > 1 {
        add_block_offsets::launch::<R>(
            client,
            cube_count(client, len.div_ceil(THREADS as usize)),
            CubeDim::new_1d(THREADS),
            out.into_array_arg(),
            sums.into_array_arg(),
            len as u32,
        );
    }
}

/// `mark[dst[k]] = k` for the destinations.
#[cube(launch)]
fn mark_destinations(dst: &Array<u32>, mark: &mut Array<u32>, n_dst: u32) {
    let k = ABSOLUTE_POS;
    if k >= n_dst as usize {
        terminate!();
    }
    let v = dst[k] as usize;
    mark[v] = k as u32;
}

/// `flag[v] = 1` for every sampled `v` that is not a destination (every writer stores the same
/// value, so the result does not depend on their order).
#[cube(launch)]
fn flag_new_sources(picks: &Array<u32>, mark: &Array<u32>, flag: &mut Array<u32>, len: u32) {
    let i = ABSOLUTE_POS;
    if i >= len as usize {
        terminate!();
    }
    let v = picks[i];
    if v != u32::MAX && mark[v as usize] == u32::MAX {
        flag[v as usize] = 1u32;
    }
}

/// The block's column of each sampled slot, packed by the row pointer (`row_ptr[s]` is the
/// exclusive scan of the counts).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn relabel_picks(
    picks: &Array<u32>,
    counts: &Array<u32>,
    row_ptr: &Array<u32>,
    mark: &Array<u32>,
    rank: &Array<u32>,
    col_idx: &mut Array<u32>,
    n_dst: u32,
    fanout: u32,
) {
    let i = ABSOLUTE_POS;
    if i >= (n_dst * fanout) as usize {
        terminate!();
    }
    let s = i / fanout as usize;
    let q = (i % fanout as usize) as u32;
    if q < counts[s] {
        let v = picks[i] as usize;
        let mut local = mark[v];
        if local == u32::MAX {
            local = n_dst + rank[v];
        }
        let at = row_ptr[s] as usize + q as usize;
        col_idx[at] = local;
    }
}

/// The sources' global ids: the destinations, then each flagged node at `n_dst + rank`.
#[cube(launch)]
fn write_sources(
    dst: &Array<u32>,
    flag: &Array<u32>,
    rank: &Array<u32>,
    src: &mut Array<u32>,
    n_dst: u32,
    n_nodes: u32,
) {
    let v = ABSOLUTE_POS;
    if v < n_dst as usize {
        src[v] = dst[v];
    }
    if v < n_nodes as usize && flag[v] == 1u32 {
        let at = (n_dst + rank[v]) as usize;
        src[at] = v as u32;
    }
}

/// The node-sized state of [`launch_block_marks`]: `mark` (all `u32::MAX` on entry), `flag`
/// (all 0 on entry), and `rank`, `sums`, `total` for the scan of `flag`.
pub struct BlockScratch<R: Runtime> {
    /// `[n_nodes]`.
    pub mark: TensorBinding<R>,
    /// `[n_nodes]`.
    pub flag: TensorBinding<R>,
    /// `[n_nodes]`.
    pub rank: TensorBinding<R>,
    /// `[max(1, n_nodes.div_ceil(SCAN_BLOCK))]`.
    pub sums: TensorBinding<R>,
    /// `[1]`: the number of new sources.
    pub total: TensorBinding<R>,
}

/// First half of a block: marks the destinations, flags the new sources among `picks`
/// (`[n_dst * fanout]`, `u32::MAX` unused) and ranks them; `total[0]` is then the number of
/// sources that are not destinations.
#[allow(clippy::too_many_arguments)]
pub fn launch_block_marks<R: Runtime>(
    client: &ComputeClient<R>,
    dst: TensorBinding<R>,
    picks: TensorBinding<R>,
    s: &BlockScratch<R>,
    n_dst: usize,
    fanout: usize,
    n_nodes: usize,
) {
    if n_dst > 0 {
        mark_destinations::launch::<R>(
            client,
            cube_count(client, n_dst.div_ceil(THREADS as usize)),
            CubeDim::new_1d(THREADS),
            dst.into_array_arg(),
            s.mark.clone().into_array_arg(),
            n_dst as u32,
        );
        flag_new_sources::launch::<R>(
            client,
            cube_count(client, (n_dst * fanout).div_ceil(THREADS as usize)),
            CubeDim::new_1d(THREADS),
            picks.into_array_arg(),
            s.mark.clone().into_array_arg(),
            s.flag.clone().into_array_arg(),
            (n_dst * fanout) as u32,
        );
    }
    launch_exclusive_scan::<R>(client, s.flag.clone(), s.rank.clone(), s.sums.clone(), s.total.clone(), n_nodes);
}

/// Second half of a block: the columns (`col_idx`, `[nnz]`, from the row pointer `row_ptr`, the
/// counts' exclusive scan) and the sources' global ids (`src`, `[n_dst + new sources]`).
#[allow(clippy::too_many_arguments)]
pub fn launch_block_columns<R: Runtime>(
    client: &ComputeClient<R>,
    dst: TensorBinding<R>,
    picks: TensorBinding<R>,
    counts: TensorBinding<R>,
    row_ptr: TensorBinding<R>,
    s: &BlockScratch<R>,
    col_idx: TensorBinding<R>,
    src: TensorBinding<R>,
    n_dst: usize,
    fanout: usize,
    n_nodes: usize,
) {
    if n_dst > 0 && fanout > 0 {
        relabel_picks::launch::<R>(
            client,
            cube_count(client, (n_dst * fanout).div_ceil(THREADS as usize)),
            CubeDim::new_1d(THREADS),
            picks.into_array_arg(),
            counts.into_array_arg(),
            row_ptr.into_array_arg(),
            s.mark.clone().into_array_arg(),
            s.rank.clone().into_array_arg(),
            col_idx.into_array_arg(),
            n_dst as u32,
            fanout as u32,
        );
    }
    let n = n_dst.max(n_nodes);
    if n > 0 {
        write_sources::launch::<R>(
            client,
            cube_count(client, n.div_ceil(THREADS as usize)),
            CubeDim::new_1d(THREADS),
            dst.into_array_arg(),
            s.flag.clone().into_array_arg(),
            s.rank.clone().into_array_arg(),
            src.into_array_arg(),
            n_dst as u32,
            n_nodes as u32,
        );
    }
}
