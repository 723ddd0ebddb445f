"""View selection for annotators: score every frame for every object from the instance images, pick the best K views.

One pass over the reference sequence's instance images gives, per frame and object, the visible pixel area, the
mask's bounding box and whether that box touches the image border. Per object the first view is the largest
visible one (views cut by the border count `border_penalty` less); each further view trades area against the
smallest angle between its object-to-camera direction and those of the views already chosen (greedy spread).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from tiermap.formats.sequence import Sequence, read_instance


@dataclass(frozen=True)
class FrameStats:
    """Per frame × object: visible pixels (F, N), mask box [x0, y0, x1, y1) (F, N, 4; zeros if absent), border cut (F, N)."""

    ids: np.ndarray
    area: np.ndarray
    bbox: np.ndarray
    border: np.ndarray


def label_stats(labels: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixels, box [x0, y0, x1, y1) and border contact of labels 0..n-1 in a label image (label n = anything else)."""
    h, w = labels.shape
    area = np.bincount(labels.ravel(), minlength=n + 1)[:n]
    rows = np.zeros((n + 1, h), dtype=bool)
    cols = np.zeros((n + 1, w), dtype=bool)
    rows[labels, np.arange(h)[:, None]] = True
    cols[labels, np.arange(w)[None, :]] = True
    rows, cols = rows[:n], cols[:n]
    box = np.stack([cols.argmax(1), rows.argmax(1), w - cols[:, ::-1].argmax(1), h - rows[:, ::-1].argmax(1)], axis=1)
    present = area > 0
    box[~present] = 0
    border = present & ((box[:, 0] == 0) | (box[:, 1] == 0) | (box[:, 2] == w) | (box[:, 3] == h))
    return area, box, border


def score_frames(seq: Sequence, ids: list[int] | np.ndarray, progress: bool | None = None) -> FrameStats:
    """Area, box and border contact of each object id in each frame, reading every instance image once."""
    ids = np.asarray(ids, dtype=np.int64)
    n, f = len(ids), len(seq.frames)
    lut = np.full(65536, n, dtype=np.intp)
    lut[ids] = np.arange(n)
    area = np.zeros((f, n), dtype=np.int64)
    bbox = np.zeros((f, n, 4), dtype=np.int64)
    border = np.zeros((f, n), dtype=bool)
    disable = None if progress is None else not progress
    for row, path in enumerate(tqdm(seq.instance, desc=f"views {seq.dir.parent.name}/{seq.dir.name}", unit="frame",
                                    leave=False, disable=disable)):
        area[row], bbox[row], border[row] = label_stats(lut[read_instance(path, seq.shape)], n)
    return FrameStats(ids, area, bbox, border)


def view_directions(poses: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Unit directions (F, 3) from an object centre to each camera position of camera-to-world poses (F, 4, 4)."""
    d = poses[:, :3, 3] - np.asarray(center, dtype=float)[None, :]
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    return np.divide(d, norm, out=np.zeros_like(d), where=norm > 1e-12)


def select_views(area: np.ndarray, border: np.ndarray, dirs: np.ndarray, k: int = 3, min_pixels: int = 50,
                 border_penalty: float = 0.5, spread_weight: float = 0.5, spread_angle_deg: float = 45.0) -> list[int]:
    """Rows of the best k views of one object: largest (border-penalised) area first, then area traded for viewpoint spread."""
    ok = area >= max(int(min_pixels), 1)
    if k < 1 or not ok.any():
        return []
    eff = np.where(border, area * (1.0 - border_penalty), area).astype(float)
    quality = np.where(ok, eff / max(eff[ok].max(), 1e-12), -np.inf)
    chosen = [int(np.argmax(quality))]
    min_angle = np.full(len(area), np.inf)
    spread_rad = np.radians(spread_angle_deg)
    for _ in range(1, min(k, int(ok.sum()))):
        cos = np.clip(dirs @ dirs[chosen[-1]], -1.0, 1.0)
        min_angle = np.minimum(min_angle, np.arccos(cos))
        score = (1.0 - spread_weight) * quality + spread_weight * np.minimum(min_angle / spread_rad, 1.0)
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return chosen


def select_all(stats: FrameStats, poses: np.ndarray, centers: dict[int, np.ndarray], k: int = 3, min_pixels: int = 50,
               **weights: float) -> dict[int, list[int]]:
    """Chosen rows per object id (objects with no frame of at least min_pixels pixels are left out)."""
    out = {}
    for col, oid in enumerate(stats.ids.tolist()):
        rows = select_views(stats.area[:, col], stats.border[:, col], view_directions(poses, centers[oid]), k, min_pixels, **weights)
        if rows:
            out[oid] = rows
    return out
