"""Session J experiment: how much of the width-256 SpMM time do the most-read columns cost?

Writes, next to an R-MAT npy folder, structure-only copies without the edges that read the H
most-read columns ("cold"), with only those edges ("hot"), and with only those edges and the
hot columns renumbered 0..H-1 by rank ("hotr": the gathers then read a compact H-row block of
the features, which the L1 caches can hold at a narrow feature tile), and prints the fraction of edges
the top H columns receive. Usage: hot_split.py <graph folder> <H> [<H> ...]
"""
import os
import sys

import numpy as np

src = sys.argv[1]
hs = [int(h) for h in sys.argv[2:]]
indptr = np.load(os.path.join(src, "adj_indptr.npy"))
indices = np.load(os.path.join(src, "adj_indices.npy"))
n = int(np.load(os.path.join(src, "num_nodes.npy")))
counts = np.bincount(indices, minlength=n)
order = np.argsort(-counts, kind="stable")
nnz = len(indices)
for h in [256, 512, 1024, 1536, 2048, 3072, 4096, 8192, 16384]:
    print(f"top {h} columns: {counts[order[:h]].sum() / nnz:.4f} of {nnz} edges", flush=True)
for h in hs:
    hot = np.zeros(n, dtype=bool)
    hot[order[:h]] = True
    rank = np.zeros(n, dtype=indices.dtype)
    rank[order[:h]] = np.arange(h, dtype=indices.dtype)
    for name, keep in (("cold", ~hot[indices]), ("hot", hot[indices]), ("hotr", hot[indices])):
        c = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        cols = indices[keep]
        if name == "hotr":
            cols = rank[cols]
        dst = f"{src}-{name}{h}"
        os.makedirs(dst, exist_ok=True)
        np.save(os.path.join(dst, "adj_indptr.npy"), c[indptr].astype(indptr.dtype))
        np.save(os.path.join(dst, "adj_indices.npy"), cols)
        np.save(os.path.join(dst, "num_nodes.npy"), np.array(n, dtype=np.int64))
        print(f"wrote {dst}: {int(keep.sum())} edges", flush=True)
