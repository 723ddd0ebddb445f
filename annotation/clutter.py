"""Clutter: objects whose oriented 3D boxes intersect (IoU > 0), from the GT cloud."""
from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

from tiermap import schema

_UNIT = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])


def boxes_from_cloud(points: np.ndarray, ids: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """PCA oriented box (center, extent, R) per object id, as Open3D's create_from_points (the official choice)."""
    import open3d as o3d

    out = {}
    order = np.argsort(ids, kind="stable")
    uniq, starts = np.unique(ids[order], return_index=True)
    for oid, pts in zip(uniq.tolist(), np.split(points[order], starts[1:])):
        if len(pts) < 4:
            lo, hi = pts.min(0), pts.max(0)
            out[oid] = ((lo + hi) / 2, hi - lo, np.eye(3))
            continue
        try:
            box = o3d.geometry.OrientedBoundingBox.create_from_points(o3d.utility.Vector3dVector(pts))
            out[oid] = (np.asarray(box.center), np.asarray(box.extent), np.asarray(box.R))
        except RuntimeError:  # degenerate (planar) point sets: fall back to the axis-aligned box
            lo, hi = pts.min(0), pts.max(0)
            out[oid] = ((lo + hi) / 2, hi - lo, np.eye(3))
    return out


def _halfspaces(c: np.ndarray, e: np.ndarray, R: np.ndarray) -> np.ndarray:
    """The 6 half-spaces A x + b <= 0 of a box."""
    normals = np.concatenate([R.T, -R.T])
    offsets = np.concatenate([-(R.T @ c) - e / 2, (R.T @ c) - e / 2])
    return np.column_stack([normals, offsets])


def box_iou(a: tuple[np.ndarray, np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray, np.ndarray]) -> float:
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


def clutter_pairs(boxes: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[int, list[int]]:
    """For every object, the other objects whose boxes have IoU > 0 (axis-aligned broad phase first)."""
    ids = sorted(boxes)
    lo, hi = [], []
    for i in ids:
        c, e, R = boxes[i]
        half = np.abs(R) @ (e / 2)
        lo.append(c - half)
        hi.append(c + half)
    lo_a, hi_a = np.asarray(lo), np.asarray(hi)
    overlap = np.all((lo_a[:, None] < hi_a[None]) & (lo_a[None] < hi_a[:, None]), axis=2)
    np.fill_diagonal(overlap, False)
    out: dict[int, list[int]] = {i: [] for i in ids}
    for a, b in zip(*np.nonzero(np.triu(overlap))):
        if box_iou(boxes[ids[a]], boxes[ids[b]]) > 0:
            out[ids[a]].append(ids[b])
            out[ids[b]].append(ids[a])
    return {k: sorted(v) for k, v in out.items()}


def add_clutter(gt: schema.GTCategories, clutter: dict[int, list[int]]) -> schema.GTCategories:
    """Set each sample's clutter list (as strings) to its intersecting objects that have a sample."""
    present = {s.object_id for s in gt.dataset.samples}
    for s in gt.dataset.samples:
        s.labels.image_attributes.clutter = [str(o) for o in clutter.get(s.object_id, []) if o in present]
    return gt
