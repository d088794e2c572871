//! MaxK (MaxK-GNN): top-k of every feature row into the CBSR format.

pub mod kernel;
pub mod reference;
