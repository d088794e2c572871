//! CBSR operations of MaxK-GNN: SpGEMM forward, SSpMM backward, scatter and gather.

pub mod kernel;
pub mod reference;
