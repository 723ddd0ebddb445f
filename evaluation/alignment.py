"""OpenLex3D mask alignment (official `core/align_masks.py`): which GT points each predicted instance covers.

A GT point joins a predicted instance when a point of that instance lies at squared distance below the threshold
(`per_mask`, the official default), or only the instance of its single nearest predicted point (`global`). One
kd-tree replaces the official FAISS index per predicted mask. In global alignment unassigned (-1) points can be the
nearest point and so withhold a GT point (`unassigned_compete=False` ignores them). Which of two exactly equidistant
predicted points is "nearest" is arbitrary in both (FAISS vs kd-tree). Squared distances are exact (float64 on
float32-cast coordinates); FAISS computes them in float32 from |x|^2 + |y|^2 - 2 x.y, an error that grows with the
coordinates: points up to 2.3e-5 m^2 from the 0.001 m^2 threshold were seen on the other side of it there. So masks
(and AP) can differ from the official ones where GT points lie that close to the threshold.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.spatial import cKDTree

from evaluation import arrays

ALIGNMENTS = ("per_mask", "global")
_EMPTY = np.zeros(0, np.int64)
_GRID_CELLS = 1 << 25  # per_mask alignment uses a dense cell lookup table up to this many cells


def _unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (a, b) pairs of non-negative ints, sorted by a, then b."""
    if len(a) == 0:
        return a, b
    span = int(b.max()) + 1
    if int(a.max()) < (1 << 62) // span:
        u = np.sort(a * span + b)
        u = u[np.r_[True, u[1:] != u[:-1]]]
        return u // span, u % span
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    first = np.ones(len(a), bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[first], b[first]


def _coherent_order(points: np.ndarray, block: float) -> np.ndarray:
    """Order grouping points by cubes of side `block`: kd-tree queries in this order stay cache-warm."""
    cells = np.floor((points - points.min(0)) / block).astype(np.int64)
    dims = cells.max(0) + 1
    if float(dims[0]) * float(dims[1]) * float(dims[2]) >= 2.0**62:
        return np.arange(len(points))
    return np.argsort((cells[:, 0] * dims[1] + cells[:, 1]) * dims[2] + cells[:, 2], kind="stable")


def _close(gt: np.ndarray, g: np.ndarray, pts: np.ndarray, nn: np.ndarray, thr: float) -> np.ndarray:
    """Which (gt[g], pts[nn]) pairs have squared distance strictly below thr (nn == len(pts): none found)."""
    found = nn < len(pts)
    d2 = np.full(len(g), np.inf)
    d2[found] = np.square(gt[g[found]] - pts[nn[found]]).sum(1)
    return d2 < thr


def align_global(gt: np.ndarray, pred: np.ndarray, index: np.ndarray, thr: float,
                  unassigned_compete: bool) -> tuple[np.ndarray, np.ndarray]:
    """(GT point, instance) pairs: each GT point joins the instance of its single nearest predicted point."""
    if not unassigned_compete:
        pred, index = pred[index >= 0], index[index >= 0]
    if len(pred) == 0 or len(gt) == 0:
        return _EMPTY, _EMPTY
    # get_pred_mask_indices_gt_aligned_global searches ALL predicted points, so an unassigned (-1) nearest
    # point withholds the GT point from every instance.
    g = _coherent_order(gt, 16 * math.sqrt(thr))
    tree = cKDTree(pred, balanced_tree=False)
    _, nn = tree.query(gt[g], k=1, distance_upper_bound=math.sqrt(thr) * (1 + 1e-6), workers=-1)
    keep = _close(gt, g, pred, nn, thr)
    g, inst = g[keep], index[nn[keep]]
    return g[inst >= 0], inst[inst >= 0]


def align_per_mask(gt: np.ndarray, pred: np.ndarray, index: np.ndarray, thr: float) -> tuple[np.ndarray, np.ndarray]:
    """(GT point, instance) pairs: a GT point joins every instance with a point at squared distance < thr."""
    pts, inst = pred[index >= 0], index[index >= 0]
    if len(pts) == 0 or len(gt) == 0:
        return _EMPTY, _EMPTY
    r = math.sqrt(thr)
    lo, hi = pts.min(0), pts.max(0)
    gidx = np.flatnonzero(np.all((gt > lo - 1.001 * r) & (gt < hi + 1.001 * r), axis=1))
    if len(gidx) == 0:
        return _EMPTY, _EMPTY
    # Candidate instances of a GT point: those with a point in its 3x3x3 block of cells of side >= r.
    c = max(1.01 * r, float((hi - lo).max() + 4 * r) / 2.0**20)  # 2**20 cells per axis keeps int64 keys
    origin = lo - 2 * c
    cp = np.floor((pts - origin) / c).astype(np.int64)
    cg = np.floor((gt[gidx] - origin) / c).astype(np.int64)
    dims = np.maximum(cp.max(0), cg.max(0)) + 2

    def key(cells: np.ndarray) -> np.ndarray:
        return (cells[:, 0] * dims[1] + cells[:, 1]) * dims[2] + cells[:, 2]

    pc_key, pc_inst = _unique_pairs(key(cp), inst)  # distinct (cell, instance), by cell
    first = np.flatnonzero(np.r_[True, pc_key[1:] != pc_key[:-1]])
    cells, c_start = pc_key[first], first
    c_count = np.diff(np.r_[first, len(pc_key)])
    c_state = np.where(c_count == 1, pc_inst[first], -2).astype(np.int32)  # the only instance, or -2: several
    if int(dims.prod()) <= _GRID_CELLS:
        grid = np.full(int(dims.prod()), -1, np.int32)
        grid[cells] = np.arange(len(cells), dtype=np.int32)

        def lookup(keys: np.ndarray) -> np.ndarray:
            return grid[keys]
    else:
        def lookup(keys: np.ndarray) -> np.ndarray:
            pos = np.minimum(np.searchsorted(cells, keys), len(cells) - 1)
            return np.where(cells[pos] == keys, pos, -1)

    order = np.argsort(key(cg // 16), kind="stable")  # blocks of 16^3 cells: cache-warm tree queries
    gidx, cg = gidx[order], cg[order]
    ukey, ginv = np.unique(key(cg), return_inverse=True)
    offsets = [(dx * dims[1] + dy) * dims[2] + dz for dx, dy, dz in itertools.product((-1, 0, 1), repeat=3)]
    nb = np.stack([lookup(ukey + o) for o in offsets], axis=1)  # (cells, 27) neighbour cell or -1
    state = np.append(c_state, -1)[nb]  # -1: empty cell
    occupied = state != -1
    hi_s = np.where(occupied, state, -3).max(1)
    lo_s = np.where(occupied, state, np.iinfo(state.dtype).max).min(1)
    pure = np.flatnonzero((hi_s >= 0) & (lo_s == hi_s))  # one instance around: nothing to deduplicate
    mixed = np.flatnonzero(occupied.any(1) & ((hi_s < 0) | (lo_s != hi_s)))
    nbm = nb[mixed]
    jm = nbm[nbm >= 0]
    mu, mi = _unique_pairs(np.repeat(np.repeat(mixed, (nbm >= 0).sum(1)), c_count[jm]),
                           pc_inst[arrays.ranges(c_start[jm], c_count[jm])])
    by_u = np.argsort(np.concatenate([pure, mu]), kind="stable")
    pair_u, pair_inst = np.concatenate([pure, mu])[by_u], np.concatenate([hi_s[pure], mi])[by_u]
    ucnt = np.bincount(pair_u, minlength=len(ukey))
    ustart = np.cumsum(ucnt) - ucnt
    g = np.repeat(gidx, ucnt[ginv])
    cand = pair_inst[arrays.ranges(ustart[ginv], ucnt[ginv])]
    # Nearest point of one given instance: the instance id as a 4th coordinate, spaced wider than the search bound.
    spacing = 2.0 ** math.ceil(math.log2(4 * r))
    tree = cKDTree(np.column_stack([pts, inst * spacing]), balanced_tree=False)
    _, nn = tree.query(np.column_stack([gt[g], cand * spacing]), k=1,
                       distance_upper_bound=r * (1 + 1e-6), workers=-1)
    keep = _close(gt, g, pts, nn, thr)
    return g[keep], cand[keep]
