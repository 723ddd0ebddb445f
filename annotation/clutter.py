"""Clutter: objects whose oriented 3D boxes intersect (IoU > 0), from the GT cloud.

OpenLex3D assigns to an object's `clutter` every other object whose box has IoU > 0 with it (paper §3.1.2, the
official `clutter_category_adder.py`). IoU > 0 is the same as "the two box interiors overlap with positive volume",
so `clutter_pairs` does not compute IoUs: it runs an axis-aligned broad phase and then a vectorised separating-axis
test (SAT) over all candidate pairs at once. Two convex boxes are disjoint iff one of 15 axes separates them: the
3 face normals of each box and the 9 cross products of their edge directions (near-zero cross products, i.e.
parallel edges, are skipped: the face normals cover that case). The test is strict, so boxes that only touch
(a shared face, edge or corner) are separated, and boxes with a zero extent (flat boxes, no volume) never overlap —
the same answers as `box_iou(a, b) > 0`, which is kept as the exact reference (`clutter_pairs_exact`).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

from tiermap.formats.openlex3d import GTCategories

Box = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(center (3,), full extent (3,), R (3, 3) whose columns are the box axes)."""

SAT_TOL = 1e-9
"""Penetration (metres, relative to the boxes' size when larger than 1 m) below which boxes count as touching."""
_PARALLEL = 1e-6
"""Edge cross products shorter than this (unit edge directions) are parallel edges: that axis is skipped."""
_CHUNK = 65536


def _pca_box(pts: np.ndarray) -> Box:
    """Box along the principal axes of the points themselves (degenerate, e.g. planar, point sets)."""
    mean = pts.mean(0)
    _, vecs = np.linalg.eigh(np.cov((pts - mean).T, bias=True) if len(pts) > 1 else np.eye(3))
    R = vecs[:, ::-1].copy()
    if np.linalg.det(R) < 0:
        R[:, 2] *= -1
    local = (pts - mean) @ R
    lo, hi = local.min(0), local.max(0)
    return mean + R @ ((lo + hi) / 2), hi - lo, R


def boxes_from_cloud(points: np.ndarray, ids: np.ndarray) -> dict[int, Box]:
    """PCA oriented box (center, extent, R) per object id, as Open3D's create_from_points (the official choice).

    Open3D's box is the PCA box of the convex hull of the points. Point sets it cannot handle (fewer than 4 points,
    or all points in a plane, where Qhull fails) get the box along the principal axes of the points themselves.
    Grouping is a single stable sort (skipped when the ids are already sorted, as in a cloud written per object).
    """
    import open3d as o3d

    points = np.ascontiguousarray(points, dtype=np.float64)
    ids = np.asarray(ids)
    if len(ids) and not np.all(ids[1:] >= ids[:-1]):
        order = np.argsort(ids, kind="stable")
        points, ids = points[order], ids[order]
    if not len(ids):
        return {}
    starts = np.concatenate([[0], np.flatnonzero(ids[1:] != ids[:-1]) + 1, [len(ids)]])
    out: dict[int, Box] = {}
    create = o3d.geometry.OrientedBoundingBox.create_from_points
    for s, e in zip(starts[:-1].tolist(), starts[1:].tolist()):
        pts = points[s:e]
        oid = int(ids[s])
        if len(pts) >= 4:
            try:
                box = create(o3d.utility.Vector3dVector(pts))
                out[oid] = (np.asarray(box.center), np.asarray(box.extent), np.asarray(box.R))
                continue
            except RuntimeError:  # Qhull: degenerate (planar or collinear) point set
                pass
        out[oid] = _pca_box(pts)
    return out


def _halfspaces(c: np.ndarray, e: np.ndarray, R: np.ndarray) -> np.ndarray:
    """The 6 half-spaces A x + b <= 0 of a box."""
    normals = np.concatenate([R.T, -R.T])
    offsets = np.concatenate([-(R.T @ c) - e / 2, (R.T @ c) - e / 2])
    return np.column_stack([normals, offsets])


def box_iou(a: Box, b: Box) -> float:
    """Exact IoU of two oriented boxes (half-space intersection + convex hull); touching boxes give 0."""
    hs = np.concatenate([_halfspaces(*a), _halfspaces(*b)])
    norm = np.linalg.norm(hs[:, :3], axis=1)
    # Chebyshev centre: the deepest interior point; radius <= 0 means no volume in common.
    res = linprog(c=[0, 0, 0, -1], A_ub=np.column_stack([hs[:, :3], norm]), b_ub=-hs[:, 3],
                  bounds=[(None, None)] * 3 + [(0, None)], method="highs")
    if res.status != 0 or res.x[3] <= 1e-9:
        return 0.0
    try:
        inter = ConvexHull(HalfspaceIntersection(hs, res.x[:3]).intersections).volume
    except QhullError:
        return 0.0
    va, vb = float(np.prod(a[1])), float(np.prod(b[1]))
    return float(inter / (va + vb - inter)) if va + vb - inter > 0 else 0.0


def boxes_overlap(c1: np.ndarray, e1: np.ndarray, R1: np.ndarray,
                  c2: np.ndarray, e2: np.ndarray, R2: np.ndarray, tol: float = SAT_TOL) -> np.ndarray:
    """Separating-axis test for P box pairs at once: True where the interiors overlap with positive volume.

    Shapes: centres (P, 3), full extents (P, 3), rotations (P, 3, 3) with the box axes as columns. Touching boxes
    (penetration <= tol along some axis) and boxes with an extent <= tol are reported as not overlapping.
    """
    c1, e1, R1, c2, e2, R2 = (np.asarray(x, dtype=np.float64) for x in (c1, e1, R1, c2, e2, R2))
    h1, h2 = e1 / 2, e2 / 2
    A1, A2 = np.swapaxes(R1, 1, 2), np.swapaxes(R2, 1, 2)  # rows = box axes (P, 3, 3)
    cross = np.cross(A1[:, :, None, :], A2[:, None, :, :]).reshape(-1, 9, 3)
    norm = np.linalg.norm(cross, axis=2)
    usable = norm > _PARALLEL
    cross = np.where(usable[..., None], cross / np.where(usable, norm, 1.0)[..., None], 0.0)
    axes = np.concatenate([A1, A2, cross], axis=1)  # (P, 15, 3); skipped axes are zero vectors
    dist = np.abs(np.einsum("pak,pk->pa", axes, c2 - c1))
    r1 = np.einsum("pab,pb->pa", np.abs(axes @ R1), h1)  # |axis · box axis_k| * half extent_k
    r2 = np.einsum("pab,pb->pa", np.abs(axes @ R2), h2)
    slack = tol * np.maximum(1.0, r1 + r2)
    separated = (dist >= r1 + r2 - slack) & np.concatenate([np.ones((len(c1), 6), bool), usable], axis=1)
    solid = (e1.min(1) > tol) & (e2.min(1) > tol)
    return ~separated.any(axis=1) & solid


def _stack(boxes: dict[int, Box]) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    ids = sorted(boxes)
    if not ids:
        return ids, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3, 3))
    c = np.array([boxes[i][0] for i in ids], dtype=np.float64).reshape(-1, 3)
    e = np.array([boxes[i][1] for i in ids], dtype=np.float64).reshape(-1, 3)
    R = np.array([boxes[i][2] for i in ids], dtype=np.float64).reshape(-1, 3, 3)
    return ids, c, e, R


def _broad_phase(c: np.ndarray, e: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (a < b) whose axis-aligned bounds overlap strictly (sweep along x, then y/z checks)."""
    half = np.einsum("nij,nj->ni", np.abs(R), e / 2)
    lo, hi = c - half, c + half
    order = np.argsort(lo[:, 0], kind="stable")
    lo, hi = lo[order], hi[order]
    # Sweep: for box k (sorted by lo.x), its candidates are the following boxes with lo.x < hi.x of k.
    end = np.searchsorted(lo[:, 0], hi[:, 0], side="left")
    counts = np.maximum(end - np.arange(len(lo)) - 1, 0)
    a = np.repeat(np.arange(len(lo)), counts)
    b = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + a + 1
    keep = np.all((lo[a] < hi[b]) & (lo[b] < hi[a]), axis=1)
    a, b = order[a[keep]], order[b[keep]]
    return np.minimum(a, b), np.maximum(a, b)


def _pairs_to_lists(ids: list[int], a: np.ndarray, b: np.ndarray) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {i: [] for i in ids}
    arr = np.asarray(ids)
    src = np.concatenate([a, b])
    dst = np.concatenate([b, a])
    order = np.lexsort((arr[dst], arr[src]))
    for s, d in zip(arr[src[order]].tolist(), arr[dst[order]].tolist()):
        out[s].append(d)
    return out


def clutter_pairs(boxes: dict[int, Box]) -> dict[int, list[int]]:
    """For every object, the other objects whose boxes have IoU > 0 (sorted ids), by broad phase + SAT."""
    ids, c, e, R = _stack(boxes)
    a, b = _broad_phase(c, e, R)
    hit = np.zeros(len(a), dtype=bool)
    for s in range(0, len(a), _CHUNK):
        i, j = a[s:s + _CHUNK], b[s:s + _CHUNK]
        hit[s:s + _CHUNK] = boxes_overlap(c[i], e[i], R[i], c[j], e[j], R[j])
    return _pairs_to_lists(ids, a[hit], b[hit])


def clutter_pairs_exact(boxes: dict[int, Box]) -> dict[int, list[int]]:
    """Reference path: the same broad phase, then the exact `box_iou(...) > 0` per candidate pair (slow)."""
    ids, c, e, R = _stack(boxes)
    a, b = _broad_phase(c, e, R)
    hit = np.array([box_iou(boxes[ids[i]], boxes[ids[j]]) > 0 for i, j in zip(a.tolist(), b.tolist())], dtype=bool)
    return _pairs_to_lists(ids, a[hit] if len(a) else a, b[hit] if len(b) else b)


def add_clutter(gt: GTCategories, clutter: dict[int, list[int]]) -> GTCategories:
    """Set each sample's clutter list (as strings) to its intersecting objects that have a sample."""
    present = {s.object_id for s in gt.dataset.samples}
    for s in gt.dataset.samples:
        s.labels.image_attributes.clutter = [str(o) for o in clutter.get(s.object_id, []) if o in present]
    return gt
