//! Cross-lane reductions with a comptime switch: plane (warp) shuffles where the device has
//! them, shared memory and cube barriers where it does not (lavapipe). Callers keep control flow
//! uniform: every lane of the cube (shared-memory path) or of the plane (shuffle path) reaches
//! each reduction.

use cubecl::prelude::*;

/// Sum of `value` over aligned segments of `seg` consecutive lanes along x (`seg` a power of
/// two dividing `CUBE_DIM_X`); every lane of a segment gets the total.
#[cube]
pub fn segment_sum(value: f32, smem: &mut SharedMemory<f32>, #[comptime] seg: u32, #[comptime] plane: bool) -> f32 {
    let mut total = value;
    if comptime!(plane) {
        let mut m = 1u32;
        while m < seg {
            total += plane_shuffle_xor(total, m);
            m *= 2;
        }
    } else {
        let u = UNIT_POS as usize;
        smem[u] = value;
        sync_cube();
        let lane = UNIT_POS_X % seg;
        let mut jump = 1u32;
        while jump < seg {
            if lane % (2 * jump) == 0 {
                smem[u] += smem[u + jump as usize];
            }
            sync_cube();
            jump *= 2;
        }
        total = smem[u - lane as usize];
        sync_cube();
    }
    total
}

/// Maximum of `value` over aligned segments of `seg` lanes (see [`segment_sum`]).
#[cube]
pub fn segment_max(value: f32, smem: &mut SharedMemory<f32>, #[comptime] seg: u32, #[comptime] plane: bool) -> f32 {
    let mut total = value;
    if comptime!(plane) {
        let mut m = 1u32;
        while m < seg {
            total = f32::max(total, plane_shuffle_xor(total, m));
            m *= 2;
        }
    } else {
        let u = UNIT_POS as usize;
        smem[u] = value;
        sync_cube();
        let lane = UNIT_POS_X % seg;
        let mut jump = 1u32;
        while jump < seg {
            if lane % (2 * jump) == 0 {
                smem[u] = f32::max(smem[u], smem[u + jump as usize]);
            }
            sync_cube();
            jump *= 2;
        }
        total = smem[u - lane as usize];
        sync_cube();
    }
    total
}

/// Sum of a u32 over aligned segments of `seg` lanes.
#[cube]
pub fn segment_sum_u32(value: u32, smem: &mut SharedMemory<u32>, #[comptime] seg: u32, #[comptime] plane: bool) -> u32 {
    let mut total = value;
    if comptime!(plane) {
        let mut m = 1u32;
        while m < seg {
            total += plane_shuffle_xor(total, m);
            m *= 2;
        }
    } else {
        let u = UNIT_POS as usize;
        smem[u] = value;
        sync_cube();
        let lane = UNIT_POS_X % seg;
        let mut jump = 1u32;
        while jump < seg {
            if lane % (2 * jump) == 0 {
                smem[u] += smem[u + jump as usize];
            }
            sync_cube();
            jump *= 2;
        }
        total = smem[u - lane as usize];
        sync_cube();
    }
    total
}

/// Exclusive prefix sum of a u32 over the `seg` lanes of a segment (lane order), by a
/// Hillis-Steele scan in shared memory or plane shuffles.
#[cube]
pub fn segment_exclusive_sum_u32(
    value: u32,
    smem: &mut SharedMemory<u32>,
    #[comptime] seg: u32,
    #[comptime] plane: bool,
) -> u32 {
    let lane = UNIT_POS_X % seg;
    let mut incl = value;
    if comptime!(plane) {
        let mut d = 1u32;
        while d < seg {
            let other = plane_shuffle_up(incl, d);
            if lane >= d {
                incl += other;
            }
            d *= 2;
        }
    } else {
        let u = UNIT_POS as usize;
        smem[u] = value;
        sync_cube();
        let mut d = 1u32;
        while d < seg {
            let mut add = 0u32;
            if lane >= d {
                add = smem[u - d as usize];
            }
            sync_cube();
            smem[u] += add;
            sync_cube();
            d *= 2;
        }
        incl = smem[u];
        sync_cube();
    }
    incl - value
}
