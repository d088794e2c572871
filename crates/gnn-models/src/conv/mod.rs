//! Graph convolutions.

pub mod gat;
pub mod gcn;
pub mod gin;
pub mod sage;
