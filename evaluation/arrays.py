"""Checks and small vector helpers shared by every metric: in-memory arrays get the same one-line errors as files."""
from __future__ import annotations

from typing import Any

import numpy as np

from tiermap.formats.base import SchemaError


def points(a: Any, path: str, field: str, allow_empty: bool = False) -> np.ndarray:
    """An (N, 3) finite numeric array as float64, or SchemaError."""
    arr = np.asarray(a)
    if arr.ndim != 2 or arr.shape[1] != 3 or not (np.issubdtype(arr.dtype, np.number) and arr.dtype.kind != "c"):
        raise SchemaError(path, field, "an (N, 3) numeric array of points", f"shape {arr.shape}, dtype {arr.dtype}")
    if len(arr) == 0 and not allow_empty:
        raise SchemaError(path, field, "at least one point", "0 points")
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).any(axis=1).sum())
        raise SchemaError(path, field, "finite coordinates", f"{bad} non-finite points")
    return arr.astype(np.float64, copy=False)


def ints(a: Any, path: str, field: str, n: int | None = None) -> np.ndarray:
    """A 1-D integer array (of length n, one per point, if given) as int64, or SchemaError."""
    arr = np.asarray(a)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise SchemaError(path, field, "a 1-D integer array", f"shape {arr.shape}, dtype {arr.dtype}")
    if n is not None and len(arr) != n:
        raise SchemaError(path, field, f"{n} values (one per point)", len(arr))
    return arr.astype(np.int64, copy=False)


def matrix(a: Any, path: str, field: str, min_rows: int = 0) -> np.ndarray:
    """A finite 2-D numeric matrix with at least `min_rows` rows, in float32 or wider, or SchemaError."""
    arr = np.asarray(a)
    if arr.ndim != 2 or arr.shape[0] < min_rows or arr.shape[1] == 0 or not np.issubdtype(arr.dtype, np.number):
        raise SchemaError(path, field, "a non-empty 2-D numeric matrix", f"shape {arr.shape}, dtype {arr.dtype}")
    arr = arr.astype(np.result_type(arr.dtype, np.float32), copy=False)
    if not np.isfinite(arr).all():
        raise SchemaError(path, field, "finite values", "NaN or inf")
    return arr


def unit_rows(x: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """Rows divided by max(L2 norm, eps), keeping the float dtype (torch cosine_similarity semantics)."""
    x = np.asarray(x)
    x = x.astype(np.result_type(x.dtype, np.float32), copy=False)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), x.dtype.type(eps))


def lookup(values: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of each value in the unique array `table` (sorted or not), and whether it was found."""
    values, table = np.asarray(values), np.asarray(table)
    if not len(table):
        return np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    order = np.argsort(table, kind="stable")
    srt = table[order]
    pos = np.clip(np.searchsorted(srt, values), 0, len(srt) - 1)
    return order[pos], srt[pos] == values


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + c) for each (s, c)."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return offsets + np.arange(total)
