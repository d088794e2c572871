//! A CBSR matrix on the device and what its kernels share: the column of an entry (packed or
//! not), the barrier between the steps of a slot, and the choice of plane operations.

use crate::config::PlaneUse;
use crate::device::{has_plane_ops, plane_size};
use cubecl::prelude::*;

/// A CBSR matrix on the device.
#[derive(Clone)]
pub struct CbsrDev<R: Runtime> {
    /// `[n * k]` values.
    pub values: TensorBinding<R>,
    /// `[n * k]` u32 column ids, or `[n * ceil(k / 4)]` packed words.
    pub indices: TensorBinding<R>,
    /// Rows.
    pub n: usize,
    /// Entries per row.
    pub k: usize,
    /// Dense width.
    pub dim: usize,
    /// Packed indices.
    pub packed: bool,
}

/// Column of entry `t` of row `row`.
#[cube]
pub fn cbsr_col(idx: &Array<u32>, row: usize, t: usize, #[comptime] k: usize, #[comptime] packed: bool) -> usize {
    if comptime!(packed) {
        let words = comptime!(k.div_ceil(4));
        let w = idx[row * words + t / 4];
        ((w >> (8 * (t % 4) as u32)) & 0xffu32) as usize
    } else {
        idx[row * k + t] as usize
    }
}

/// Barrier between the steps of a slot: the plane's in plane mode, else the cube's (one slot per
/// cube).
#[cube]
pub(super) fn sync_slot(#[comptime] plane: bool) {
    if comptime!(plane) {
        sync_plane();
    } else {
        sync_cube();
    }
}

/// Whether the kernels run in plane mode: plane operations allowed and available, 32 lanes.
pub(super) fn plane_mode<R: Runtime>(client: &ComputeClient<R>, planes: PlaneUse) -> bool {
    has_plane_ops(client, planes) && plane_size(client) == 32
}

/// [`plane_mode`] with plane barriers available too (the kernels that sync a slot's plane).
pub(super) fn sync_plane_mode<R: Runtime>(client: &ComputeClient<R>, planes: PlaneUse) -> bool {
    plane_mode(client, planes) && client.properties().features.plane.contains(cubecl::features::Plane::Sync)
}
