//! GAT's attention coefficients from per-node scores in one op: the per-edge score
//! `leaky_relu(s_dst[row] + s_src[col])` and its softmax over each row's edges, per head, with a
//! backward that recomputes the scores instead of storing them.

pub mod kernel;
pub mod reference;
