//! Dense linear transforms over all nodes of a graph.
//!
//! A GNN's linear layers multiply an `[n, d_in]` node matrix (n in the hundreds of thousands or
//! millions) by a small `[d_in, d_out]` weight. The weight gradient of that product is
//! `x^T dy`: a `[d_in, d_out]` output with a reduction over all `n` rows. A tiled matmul kernel
//! gives such a product only `(d_in / tile) * (d_out / tile)` cubes (16 for 256 x 256 with
//! 64-wide tiles), so most of the GPU idles while each cube walks the whole `n`.
//!
//! [`linear`] computes the forward product as a batched matmul over row chunks with the weight
//! broadcast along the batch. Autodiff then computes the weight gradient as one partial product
//! per chunk followed by a sum over the chunks (split-K), which fills the device. The forward
//! result and the input gradient are the same products as a plain `x.matmul(w)`, and the weight
//! gradient differs only in the order of its additions.

use burn::nn::Linear;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// Rows per chunk used by [`linear`].
pub const DEFAULT_CHUNK_ROWS: usize = 2048;

/// Rows per chunk of the node-wise products ([`DEFAULT_CHUNK_ROWS`]).
pub fn chunk_rows() -> usize {
    DEFAULT_CHUNK_ROWS
}

/// `x @ w` for an `[n, d_in]` node matrix and a `[d_in, d_out]` weight, computed over chunks of
/// `chunk` rows so that the backward pass splits the weight gradient across the device. Inputs
/// with fewer than two chunks of rows, or `chunk == 0`, use a plain matmul.
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// let dev = Default::default();
/// let x = Tensor::<NdArray, 2>::ones([10, 3], &dev);
/// let w = Tensor::<NdArray, 2>::ones([3, 2], &dev);
/// let y = gnn_models::linear::matmul_rows(x, w, 4);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![3.0; 20]);
/// ```
pub fn matmul_rows<B: Backend>(x: Tensor<B, 2>, w: Tensor<B, 2>, chunk: usize) -> Tensor<B, 2> {
    let [n, d_in] = x.dims();
    let d_out = w.dims()[1];
    if chunk == 0 || n < 2 * chunk {
        return x.matmul(w);
    }
    let chunks = n / chunk;
    let main = chunks * chunk;
    let head = if main == n { x.clone() } else { x.clone().slice([0..main]) };
    let head = head.reshape([chunks, chunk, d_in]).matmul(w.clone().unsqueeze::<3>()).reshape([main, d_out]);
    if main == n {
        return head;
    }
    let tail = x.slice([main..n]).matmul(w);
    Tensor::cat(vec![head, tail], 0)
}

/// `x @ w` over all nodes through [`matmul_rows`] with [`chunk_rows`] rows per chunk.
pub fn matmul_nodes<B: Backend>(x: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    matmul_rows(x, w, chunk_rows())
}

/// `y + b` with the bias `b` broadcast over the `n` rows of `y` ([`burn_sparse_gnn::ops::add_bias`]).
///
/// The gradient of a broadcast bias is a column sum of `dy` over all rows; Burn computes it as
/// a reduction along the strided axis, which ran at under 10 GB/s on the H200 (28 ms for a
/// `[232965, 256]` f32 gradient). The op computes it as the product `ones^T dy` and passes
/// `dy` on to `y` as it is. (The same product composed from Burn's tensor ops, `y + ones[n, 1]
/// @ b[1, d]`, keeps one `[n, d]` tensor per layer alive until the end of the backward pass.)
pub fn add_bias<B: burn_sparse_gnn::SparseGnnBackend>(y: Tensor<B, 2>, b: Tensor<B, 1>) -> Tensor<B, 2> {
    burn_sparse_gnn::ops::add_bias(y, b)
}

/// A Burn [`Linear`] applied to an `[n, d_in]` node matrix in full precision with `math` (exact
/// f32 or TF32; [`burn_sparse_gnn::ops::linear`]: cuBLAS on CUDA).
pub fn linear<B: burn_sparse_gnn::SparseGnnBackend>(
    lin: &Linear<B>,
    x: Tensor<B, 2>,
    math: burn_sparse_gnn::dense::ProductMath,
) -> Tensor<B, 2> {
    let precision = match math {
        burn_sparse_gnn::dense::ProductMath::F32 => burn_sparse_gnn::dense::LinearPrecision::F32,
        burn_sparse_gnn::dense::ProductMath::Tf32 => burn_sparse_gnn::dense::LinearPrecision::Tf32,
    };
    burn_sparse_gnn::ops::linear(x, lin.weight.val(), lin.bias.as_ref().map(|b| b.val()), precision)
}
