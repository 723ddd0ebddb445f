"""OpenLex3D retrieval confidences and predicted instances, bit for bit as the official toolkit computes them.

Official chain: `core/evaluation.py::compute_feature_to_prompt_similarity` (`torch.nn.functional.cosine_similarity`
of embedding rows and float32 text features, in the embeddings' dtype), `core/cosine_similarity.py` ((sim + 1)/2,
then per-query min-max over all embedding rows, in float64), then `scripts/evaluate_queries.py`: top-k
(`np.argsort(-s, axis=0)[:k]`, rank = position in `np.argsort(-s[:, q])`) or every confidence above a threshold.

torch's cosine divides each row by max(norm, 1e-8) and sums the element products along the feature axis. A matrix
product sums in another order (up to ~2.4e-7 apart in float32) and can split equal rows, which changes top-k sets,
ranks and the PR curve; so every value that reaches the output comes from torch's own kernels. The matrix product
only screens: with the rigorous bound of any float summation order, it finds the few candidates for each query's
top k + 1 and minimum, and those are computed exactly. A query whose top k + 1 exact confidences are not all
distinct gets its whole column computed exactly and sorted by the same `np.argsort` call as the official code,
since the order an unstable sort gives equal values depends on every value of the column. Bytewise equal embedding
rows have equal similarities, so each distinct row is computed once.
"""
from __future__ import annotations

import numpy as np
import torch

EPS = 1e-8  # torch.nn.functional.cosine_similarity's default eps
RANGE_EPS = 1e-8  # compute_normalized_cosine_similarities' floor on max - min
_TILE = 1 << 21  # elements of one (rows, queries, features) product tile: 8 MB in float32
_EMPTY = np.zeros(0, np.int64)


def unit_rows(x: np.ndarray) -> torch.Tensor:
    """Rows divided by max(L2 norm, 1e-8) with torch's kernels, as inside torch.nn.functional.cosine_similarity."""
    t = torch.from_numpy(np.ascontiguousarray(x))
    return t / torch.linalg.vector_norm(t, 2, dim=-1, keepdim=True).clamp_min(EPS)


def cosine_matrix(u: torch.Tensor, v: torch.Tensor) -> np.ndarray:
    """(len(u), len(v)) similarities of unit rows, the official cosine_similarity values as float64."""
    n, m, d = len(u), len(v), max(u.shape[1], 1)
    out = np.empty((n, m))
    cols = max(1, min(m, 64))
    rows = max(1, _TILE // (cols * d))
    for i in range(0, n, rows):
        for j in range(0, m, cols):
            out[i:i + rows, j:j + cols] = (u[i:i + rows, None, :] * v[None, j:j + cols, :]).sum(-1).numpy()
    return out


def cosine_pairs(u: torch.Tensor, v: torch.Tensor, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Similarities of the pairs (u[i], v[j]), the same values as cosine_matrix(u, v)[i, j]."""
    out = np.empty(len(i))
    step = max(1, _TILE // max(u.shape[1], 1))
    for s in range(0, len(i), step):
        ii, jj = torch.from_numpy(i[s:s + step]), torch.from_numpy(j[s:s + step])
        out[s:s + step] = (u[ii] * v[jj]).sum(-1).numpy()
    return out


def confidences(sim: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """compute_normalized_cosine_similarities given each query's min and max similarity (same float64 steps)."""
    lo_s, hi_s = (lo + 1) / 2.0, (hi + 1) / 2.0
    return ((sim + 1) / 2.0 - lo_s) / np.maximum(hi_s - lo_s, RANGE_EPS)


def _screen_bound(u: torch.Tensor, v: torch.Tensor) -> float:
    """Bound on |torch cosine - matrix-product cosine|: d rounded products summed in any order, for both."""
    d = u.shape[1]
    norms = float(torch.linalg.vector_norm(u.double(), dim=1).max() * torch.linalg.vector_norm(v.double(), dim=1).max())
    unit = np.finfo(np.result_type(u.numpy().dtype, v.numpy().dtype)).eps / 2
    gamma = (d + 1) * unit / (1 - (d + 1) * unit)
    return 2 * gamma * norms * (1 + 1e-6)


def _official_top_k(s: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """create_pred_instances_top_k on a full confidence block: (query, instance, confidence, rank), query-major."""
    sel = np.argsort(-s, axis=0)[:k].T
    q = np.repeat(np.arange(s.shape[1]), sel.shape[1])
    i = sel.ravel()
    return q, i, s[i, q], np.tile(np.arange(1, sel.shape[1] + 1), s.shape[1])


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytewise distinct rows of x and, for each row of x, its index among them."""
    x = np.ascontiguousarray(x)
    keys = x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return x[first], inverse.ravel()


def _top_k_block(u: torch.Tensor, rows: np.ndarray, v: torch.Tensor, k: int, bound: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Top-k predictions of the queries v against the rows u[rows], exactly as the official code orders them."""
    n, m = len(rows), len(v)
    if n <= k + 1:
        sim = cosine_matrix(u, v)[rows]
        return _official_top_k(confidences(sim, sim.min(0), sim.max(0)), k)
    a = (u.numpy() @ v.numpy().T).astype(np.float64)[rows]
    tau = np.partition(a, n - k - 1, axis=0)[n - k - 1]  # (k+1)-th largest screened value per query
    ti, tj = np.nonzero(a >= tau - 2 * bound)  # holds every row that can be among the exact top k + 1
    li, lj = np.nonzero(a <= a.min(0) + 2 * bound)  # holds the exact minimum
    t_top, t_low = cosine_pairs(u, v, rows[ti], tj), cosine_pairs(u, v, rows[li], lj)
    lo, hi = np.full(m, np.inf), np.full(m, -np.inf)
    np.minimum.at(lo, lj, t_low)
    np.maximum.at(hi, tj, t_top)
    s = confidences(t_top, lo[tj], hi[tj])
    order = np.lexsort((-s, tj))
    ti, tj, s = ti[order], tj[order], s[order]
    pos = np.arange(len(tj)) - np.searchsorted(tj, tj)
    equal = (pos[1:] >= 1) & (pos[1:] <= k) & (s[1:] == s[:-1])
    tied = np.zeros(m, bool)
    tied[tj[1:][equal]] = True
    keep = (pos < k) & ~tied[tj]
    q, i, conf, rank = tj[keep], ti[keep], s[keep], pos[keep] + 1
    if tied.any():
        cols = np.flatnonzero(tied)
        sim = cosine_matrix(u, v[torch.from_numpy(cols)])[rows]
        cq, ci, cc, cr = _official_top_k(confidences(sim, sim.min(0), sim.max(0)), k)
        q, i = np.concatenate([q, cols[cq]]), np.concatenate([i, ci])
        conf, rank = np.concatenate([conf, cc]), np.concatenate([rank, cr])
    order = np.lexsort((rank, q))
    return q[order], i[order], conf[order], rank[order]


def _threshold_block(u: torch.Tensor, rows: np.ndarray, v: torch.Tensor, threshold: float
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """create_pred_instances: every confidence above the threshold, with its rank among all rows."""
    sim = cosine_matrix(u, v)[rows]
    s = confidences(sim, sim.min(0), sim.max(0))
    order = np.argsort(-s, axis=0)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, len(s) + 1)[:, None], axis=0)
    i, q = np.nonzero(s > threshold)
    return q, i, s[i, q], ranks[i, q]


def predictions(emb: np.ndarray, text: np.ndarray, aligned: np.ndarray, criteria: str, top_k: int,
                threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Predicted instances (query, instance, confidence, rank) of aligned rows, in the official creation order."""
    n_inst, n_q = emb.shape[0], text.shape[0]
    if n_q == 0:
        return _EMPTY, _EMPTY, np.zeros(0), _EMPTY
    distinct, rows = _distinct_rows(emb)
    # The official text features are float32 (encode_text(...).float()); the embeddings keep their own dtype.
    u, v = unit_rows(distinct), unit_rows(np.asarray(text, np.float32))
    bound = _screen_bound(u, v)
    step = max(1, (_TILE * 2) // n_inst)
    parts = []
    for q0 in range(0, n_q, step):
        vb = v[q0:q0 + step]
        q, i, conf, rank = (_top_k_block(u, rows, vb, top_k, bound) if criteria == "top_k"
                            else _threshold_block(u, rows, vb, threshold))
        keep = aligned[i]  # top-k rows without an aligned mask are dropped (fewer than k predictions)
        parts.append((q[keep] + q0, i[keep], conf[keep], rank[keep]))
    q, i, conf, rank = (np.concatenate(p) for p in zip(*parts))
    if criteria == "clip_threshold":  # create_pred_instances loops instances, then queries
        order = np.lexsort((q, i))
        q, i, conf, rank = q[order], i[order], conf[order], rank[order]
    return q, i, conf, rank
