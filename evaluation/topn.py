"""OpenLex3D Top-N frequency (official `category_frequency_topn`), vectorised over (prediction row, object) pairs."""
from __future__ import annotations

import numpy as np

from evaluation.labels import CATEGORIES, MISSING, NONE


def pair_categories(category: np.ndarray, pair_obj: np.ndarray, top_prompts: np.ndarray) -> np.ndarray:
    """Category code of each pair: the first of S, D, VS, C, I among its top-N prompts (codes are in that order)."""
    return category[pair_obj[:, None], top_prompts].min(axis=1)


def point_categories(pair_code: np.ndarray, pair_of_point: np.ndarray, missing: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Per GT point: its pair's code, MISSING beyond 5 cm, NONE when not counted (no entry, excluded, -100)."""
    codes = np.full(len(pair_of_point), NONE, dtype=np.int8)
    ok = counted & ~missing
    codes[ok] = pair_code[pair_of_point[ok]]
    codes[counted & missing] = MISSING
    return codes


def frequency(codes: np.ndarray, obj_row: np.ndarray, n_objects: int) -> dict[str, float]:
    """Per-object normalised frequency of each category, averaged over the objects that were scored."""
    counted = codes != NONE
    count = np.bincount(obj_row[obj_row >= 0], minlength=n_objects).astype(np.float64)
    hits = np.bincount(obj_row[counted] * len(CATEGORIES) + codes[counted], minlength=n_objects * len(CATEGORIES))
    per_obj = hits.reshape(n_objects, len(CATEGORIES)) / np.maximum(count, 1)[:, None]
    scored = np.zeros(n_objects, bool)
    scored[obj_row[counted]] = True
    if not scored.any():
        return {c: float("nan") for c in CATEGORIES}
    freq = per_obj[scored].sum(axis=0) / scored.sum()
    return {c: float(freq[i]) for i, c in enumerate(CATEGORIES)}
