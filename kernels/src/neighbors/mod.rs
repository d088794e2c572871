//! Neighbour sampling for mini-batch training: for each seed node, a uniform sample without
//! replacement of at most `fanout` of its neighbours (all of them where the degree is lower),
//! drawn with Floyd's algorithm from a counter-based hash of the key, the node and the step, so
//! that the host reference and every device draw the same sample.
//!
//! The sample of a node depends only on the key, the node and the fan-out, not on the batch it
//! is drawn in or on the thread that draws it.

pub mod block;
pub mod kernel;
pub mod norms;
pub mod reference;
pub mod structure;

/// The key of one sampling step (one layer of one batch) from a 64-bit seed, the layer and the
/// batch (splitmix64 of the three).
pub fn step_key(seed: u64, layer: u32, batch: u64) -> [u32; 2] {
    let mut s = seed ^ (u64::from(layer) << 48) ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as u32
    };
    [next(), next()]
}

/// The draw of step `j` for `node`: a 32-bit hash, reduced `mod (j + 1)` by the callers.
#[inline]
pub fn draw(key: [u32; 2], node: u32, j: u32) -> u32 {
    use crate::dropout::mix32;
    mix32(mix32(key[0] ^ node) ^ j.wrapping_mul(0x9E37_79B9) ^ key[1])
}
