//! `Autodiff<B>` for every differentiable sparse op, with hand-written backward passes built
//! from `B`'s kernels. No backward needs float atomics: gradients that scatter to source nodes
//! are gathers over the transpose.
//!
//! | op | backward |
//! |---|---|
//! | SpMM sum / mean | `dx = A^T (dout / deg)` (SpMM over the transpose), `dw = SDDMM(dout / deg, x)` |
//! | SpMM max | `dx`, `dw` through the argmax (gather over the transpose, masked SDDMM) |
//! | SDDMM | `da = SpMM(A, ds, b)`, `db = SpMM(A^T, ds, a)` |
//! | edge softmax | `ds = y * (dy - sum_row y * dy)` |
//! | sampled SpMM | as SpMM, over the same sample (per-edge scale from the same hash) |
//! | MaxK / max-pooling | scatter of the value gradient through the kept positions |
//! | CBSR to dense | gather at the pattern |
//! | rows by distinct ids ([`crate::rows`]) | gather of `[dy; 0]` through the inverse map |
//! | ReLU + dropout ([`crate::dropout`]) | `dy` times the saved bit mask and `1 / (1 - p)` |
//! | CBSR SpGEMM | `dvalues = SSpMM(dy)`, `dw = sum_t dy[i, idx] * values` |
//! | mean / sum aggregation then two linear maps ([`crate::ops::aggregate_pair`]) | `t = A^T (dy / deg)`, `dx = t w_n^T + dy w_r^T` (in place), `dw_n = x^T t`, `dw_r = x^T dy` |
//! | matmul with a half-precision saved input | `dx = dy w^T`, `dw = sum over row chunks of (scale * x16)^T dy` |
//!
//! Each op family's `Autodiff<B>` implementation is in its folder (`ops/<family>/autodiff.rs`,
//! `dist/exchange/autodiff.rs`).
