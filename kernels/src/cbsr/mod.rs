//! CBSR operations of MaxK-GNN, trained end to end: SpGEMM forward and its edge-weight gradient
//! ([`spgemm`]), SSpMM backward ([`sspmm`]), scatter / gather / index packing ([`convert`]), on
//! a device CBSR matrix ([`CbsrDev`]); [`reference`] is the CPU meaning of each.

pub mod convert;
mod matrix;
pub mod reference;
pub mod spgemm;
pub mod sspmm;

pub use matrix::{cbsr_col, CbsrDev};
