//! Edge softmax over the edges of each CSR row, per head, and its backward.

pub mod kernel;
pub mod reference;
