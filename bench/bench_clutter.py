"""Clutter and label-aggregation speed on a synthetic 1,000-object scene; prints figures, asserts nothing.

    python bench/bench_clutter.py [--objects 1000] [--annotators 4] [--seed 0]

Scene: rooms of 6 x 5 m side by side, furniture-sized boxes on the floor (random yaw, some overlapping each
other), small objects stacked on them (touching their tops, a few sunk in) and a few hanging on the walls; each box
is sampled as a surface point cloud (about 1,000 points per object). Measured in the same run:
- boxes_from_cloud (Open3D PCA boxes per object) and the previous version (argsort + unique + split + the same fits);
- clutter_pairs (broad phase + vectorised SAT) vs clutter_pairs_exact (the same broad phase + exact box_iou per
  candidate pair, the previous path) — and whether both give the same pairs;
- a Label Studio export of the objects with simulated annotators: tidy_export, then aggregate_dataset_with_report.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.aggregate import aggregate_dataset_with_report  # noqa: E402
from annotation.clutter import boxes_from_cloud, clutter_pairs, clutter_pairs_exact  # noqa: E402
from annotation.noise import SAMPLE_LEXICONS, NoiseProfile, sample_objects, simulate_export  # noqa: E402
from annotation.tidy import tidy_export  # noqa: E402

FURNITURE = ((0.4, 2.2), (0.4, 1.2), (0.4, 2.0))
SMALL = ((0.06, 0.45), (0.06, 0.4), (0.03, 0.4))


def _rotz(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def synthetic_boxes(n: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """n boxes: 40 % furniture on the floor, 50 % small objects on top of furniture, 10 % on walls."""
    n_furn = max(1, int(0.4 * n))
    rooms = max(1, n_furn // 12)
    boxes = []
    for i in range(n_furn):
        e = np.array([rng.uniform(*r) for r in FURNITURE])
        room = i % rooms
        c = np.array([room * 6.0 + rng.uniform(0.5, 5.5), rng.uniform(0.5, 4.5), e[2] / 2])
        yaw = rng.choice([0.0, np.pi / 2]) if rng.random() < 0.6 else rng.uniform(0, np.pi)
        boxes.append((c, e, _rotz(yaw)))
    while len(boxes) < n:
        if rng.random() < 0.85:  # on top of a piece of furniture: touching, sometimes sunk in by 1 cm
            pc, pe, pR = boxes[int(rng.integers(n_furn))]
            e = np.array([rng.uniform(*r) for r in SMALL])
            off = pR @ np.array([rng.uniform(-0.4, 0.4) * pe[0], rng.uniform(-0.4, 0.4) * pe[1], 0.0])
            z = pc[2] + pe[2] / 2 + e[2] / 2 - (0.01 if rng.random() < 0.2 else 0.0)
            boxes.append((np.array([pc[0] + off[0], pc[1] + off[1], z]), e, pR @ _rotz(rng.uniform(0, np.pi))))
        else:  # on a wall (y = 0), touching it
            e = np.array([rng.uniform(0.3, 1.2), rng.uniform(0.01, 0.05), rng.uniform(0.3, 1.0)])
            room = int(rng.integers(rooms))
            boxes.append((np.array([room * 6.0 + rng.uniform(0.5, 5.5), e[1] / 2, rng.uniform(1.0, 2.0)]), e, np.eye(3)))
    return boxes


def surface_points(box: tuple[np.ndarray, np.ndarray, np.ndarray], k: int, rng: np.random.Generator) -> np.ndarray:
    """k points uniformly on the surface of a box (area-weighted faces)."""
    c, e, R = box
    areas = np.array([e[1] * e[2], e[0] * e[2], e[0] * e[1]])
    axis = rng.choice(3, size=k, p=np.repeat(areas, 1) / areas.sum())
    local = rng.uniform(-0.5, 0.5, (k, 3)) * e
    local[np.arange(k), axis] = np.where(rng.random(k) < 0.5, -0.5, 0.5) * e[axis]
    return local @ R.T + c


def old_boxes_from_cloud(points: np.ndarray, ids: np.ndarray) -> dict:
    """The previous boxes_from_cloud (argsort + unique + split, then the same Open3D fit per object)."""
    import open3d as o3d

    out = {}
    order = np.argsort(ids, kind="stable")
    uniq, starts = np.unique(ids[order], return_index=True)
    for oid, pts in zip(uniq.tolist(), np.split(points[order], starts[1:])):
        try:
            box = o3d.geometry.OrientedBoundingBox.create_from_points(o3d.utility.Vector3dVector(pts))
            out[oid] = (np.asarray(box.center), np.asarray(box.extent), np.asarray(box.R))
        except RuntimeError:
            lo, hi = pts.min(0), pts.max(0)
            out[oid] = ((lo + hi) / 2, hi - lo, np.eye(3))
    return out


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--annotators", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.objects

    boxes = synthetic_boxes(n, rng)
    counts = rng.integers(500, 1500, size=n)
    points = np.concatenate([surface_points(b, int(k), rng) for b, k in zip(boxes, counts)])
    ids = np.repeat(np.arange(1, n + 1), counts)
    shuffle = rng.permutation(len(ids))
    print(f"scene: {n} objects, {len(points):,} points")

    t = time.perf_counter()
    importlib.import_module("open3d")  # imported once here, so its import time is not in the figures below
    print(f"import open3d: {time.perf_counter() - t:.3f} s")
    fitted, t_fit = timed(boxes_from_cloud, points, ids)
    _, t_fit_shuffled = timed(boxes_from_cloud, points[shuffle], ids[shuffle])
    _, t_old = timed(old_boxes_from_cloud, points[shuffle], ids[shuffle])
    print(f"boxes_from_cloud: {t_fit:.3f} s (ids sorted), {t_fit_shuffled:.3f} s (ids shuffled); "
          f"previous version {t_old:.3f} s (ids shuffled); the Open3D/Qhull fits are most of it")

    fast, t_sat = timed(clutter_pairs, fitted)
    exact, t_exact = timed(clutter_pairs_exact, fitted)
    n_pairs = sum(len(v) for v in fast.values()) // 2
    print(f"clutter_pairs (SAT): {t_sat:.3f} s, {n_pairs} intersecting pairs")
    print(f"clutter_pairs_exact (box_iou per candidate): {t_exact:.3f} s  -> speed-up x{t_exact / max(t_sat, 1e-9):.0f}; "
          f"same pairs: {fast == exact}")

    objects = sample_objects(n, scenes=[f"scene_{i:03d}" for i in range(max(1, n // 100))], seed=args.seed)
    tasks, t_sim = timed(simulate_export, objects, args.annotators, NoiseProfile(), args.seed)
    _, t_tidy_first = timed(tidy_export, tasks, Path("<memory>"))
    (labels, flagged), t_tidy = timed(tidy_export, tasks, Path("<memory>"))
    names = {s: {o: c for o, (c, _) in objs.items()} for s, objs in objects.items()}
    vocab = [w for lex in SAMPLE_LEXICONS.values() for ws in (lex.synonyms, lex.depictions, lex.vis_sim) for w in ws]
    (gts, report), t_agg = timed(aggregate_dataset_with_report, labels, names, vocab)
    lex = {(s, o): lx for s, objs in objects.items() for o, (_, lx) in objs.items()}
    found = [w in gts[s].by_id()[o].labels.image_attributes.synonyms for (s, o), lx in lex.items() for w in lx.synonyms]
    print(f"labels: {n} objects x {args.annotators} annotators (simulated in {t_sim:.3f} s): "
          f"tidy_export {t_tidy:.3f} s (first call {t_tidy_first:.3f} s; {len(labels)} labels, {len(flagged)} flagged), "
          f"aggregate_dataset_with_report {t_agg:.3f} s ({len(report)} spelling corrections); "
          f"lexicon synonyms recovered: {np.mean(found):.1%}")


if __name__ == "__main__":
    main()
