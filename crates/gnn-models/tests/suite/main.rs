//! The integration tests of `gnn-models` in one test binary (one link, the backends' generic
//! code generated once): the layers against dense references and finite differences
//! (`layers`), and the partitioned (`distributed`) and multi-process (`ranks`) forward and
//! backward passes against the whole graph's.

mod common;
mod distributed;
mod layers;
mod ranks;
