"""OpenLex3D ground truth: gt_categories.json, the query mappings, prompt_list.txt and the GT point cloud."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import field_validator, model_validator

from tiermap import atomic
from tiermap.formats.base import Model, SchemaError, read_model, read_npy

GT_CLOUD_FILE = "gt_cloud.ply"
PREPARED_SEMANTICS_DIR = "prepared_semantics"
"""gt/prepared_semantics/<scene>.pth: the GT cloud in ScanNet++'s prepared layout, which the official loaders read."""

PROMPT_LIST_FILE = "prompt_list.txt"

GT_CATEGORIES_FILE = "gt_categories.json"
QUERY_LEVELS = ("l0", "l1", "all")


def query_mapping_file(level: str) -> str:
    """gt_categories_query_to_object_mapping_<level>.json (level l0, l1 or all)."""
    return f"gt_categories_query_to_object_mapping_{level}.json"

CATEGORIES = ("synonyms", "depictions", "vis_sim")
"""Annotator-given label categories, in OpenLex3D's key names (clutter is computed, not labelled)."""
GT_CATEGORIES = (*CATEGORIES, "clutter")


class ImageAttributes(Model):
    """Tiered labels of one object; clutter holds other objects' ids as strings (official form)."""

    synonyms: list[str] = []
    depictions: list[str] = []
    vis_sim: list[str] = []
    clutter: list[str] = []

    @field_validator("clutter")
    @classmethod
    def _int_strings(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if not c.lstrip("-").isdigit()]
        if bad:
            raise ValueError(f"object ids written as strings of integers (bad: {bad[:3]})")
        return v


class SampleLabels(Model):
    """The `labels` block of a sample."""

    image_attributes: ImageAttributes
    flag: Literal["ambiguous"] | None = None


class Sample(Model):
    """One annotated object."""

    name: str
    object_id: int
    labels: SampleLabels


class GTSamples(Model):
    """The `dataset` block."""

    samples: list[Sample]

    @model_validator(mode="after")
    def _unique(self) -> GTSamples:
        ids = [s.object_id for s in self.samples]
        if len(ids) != len(set(ids)):
            raise ValueError("one sample per object_id")
        return self


class GTCategories(Model):
    """gt_categories.json in the official OpenLex3D schema."""

    dataset: GTSamples

    def by_id(self) -> dict[int, Sample]:
        """Samples keyed by object id."""
        return {s.object_id: s for s in self.dataset.samples}


class QueryMapping(Model):
    """gt_categories_query_to_object_mapping_{l0,l1,all}.json: query text → object ids."""

    level0: dict[str, list[int]] | None = None
    level1: dict[str, list[int]] | None = None


def read_gt_categories(path: Path | str) -> GTCategories:
    """gt_categories.json."""
    return read_model(GTCategories, path)


def check_ids_in_cloud(path: Path | str, ids: list[int] | set[int], cloud: Path | str, cloud_ids: np.ndarray, field: str) -> None:
    """Every object id a GT file names has points in the GT cloud (else it is scored as never seen, or shifts scores)."""
    absent = sorted(set(ids) - set(np.unique(cloud_ids).tolist()))
    if absent:
        raise SchemaError(path, field, f"ids of objects in {Path(cloud).name} ({len(absent)} absent)", absent[:5])


def read_query_mapping(path: Path | str) -> QueryMapping:
    """gt_categories_query_to_object_mapping_*.json."""
    return read_model(QueryMapping, path)


def read_prompt_list(path: Path | str) -> list[str]:
    """prompt_list.txt: one label per line; blank and repeated lines are errors (the official code silently scores them)."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            raise SchemaError(path, f"line {n}", "a non-blank prompt")
        if line.strip() in seen:
            raise SchemaError(path, f"line {n}", f"each prompt once (already on line {seen[line.strip()]})", line.strip())
        seen[line.strip()] = n
    return [ln.strip() for ln in lines]


def write_prompt_list(path: Path | str, labels: list[str] | set[str]) -> Path:
    """Write the sorted unique union of labels, one per line, no blank lines."""
    uniq = sorted({lbl.strip() for lbl in labels if lbl.strip()})
    return atomic.write_text(path, "".join(f"{lbl}\n" for lbl in uniq))


def write_gt_cloud(path: Path | str, points: np.ndarray, ids: np.ndarray, colors: np.ndarray | None = None) -> Path:
    """Binary PLY with float32 x, y, z, uint8 red, green, blue and int32 object_id per point."""
    import io

    from plyfile import PlyData, PlyElement

    points = np.asarray(points, dtype=np.float32)
    ids = np.asarray(ids)
    if points.ndim != 2 or points.shape[1] != 3:
        raise SchemaError(path, "points", "an array of shape (N, 3)", points.shape)
    if ids.shape != (len(points),):
        raise SchemaError(path, "object_id", f"one id per point ({len(points)})", ids.shape)
    if colors is None:
        colors = np.full((len(points), 3), 128, dtype=np.uint8)
    dtype = [("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1"), ("object_id", "i4")]
    arr = np.empty(len(points), dtype=dtype)
    arr["x"], arr["y"], arr["z"] = points.T
    arr["red"], arr["green"], arr["blue"] = np.asarray(colors, dtype=np.uint8).T
    arr["object_id"] = ids.astype(np.int32)
    buf = io.BytesIO()
    PlyData([PlyElement.describe(arr, "vertex")]).write(buf)
    return atomic.write_bytes(path, buf.getvalue())


def read_gt_cloud(path: Path | str, ids_path: Path | str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GT cloud → (points (N, 3) float64, ids (N,) int64): a PLY/PCD with an object_id field, or points.npy + ids.npy."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    if ids_path is not None:
        points, ids = read_npy(path, "points"), read_npy(ids_path, "ids")
        if points.ndim != 2 or points.shape[1] != 3:
            raise SchemaError(path, "points", "an array of shape (N, 3)", points.shape)
        if ids.shape != (len(points),):
            raise SchemaError(ids_path, "ids", f"shape ({len(points)},)", ids.shape)
    elif path.suffix.lower() == ".pcd":
        import open3d as o3d

        pc = o3d.t.io.read_point_cloud(str(path))
        if "positions" not in pc.point:
            raise SchemaError(path, "positions", "a PCD file with x, y, z fields")
        if "object_id" not in pc.point:
            raise SchemaError(path, "object_id", "a per-point object_id field (or pass points.npy ids.npy)", sorted(pc.point))
        points, ids = pc.point.positions.numpy(), pc.point["object_id"].numpy().reshape(-1)
    else:
        from plyfile import PlyData

        try:
            v = PlyData.read(str(path))["vertex"]
        except Exception as err:
            raise SchemaError(path, "<file>", f"a PLY file with a vertex element ({type(err).__name__})") from None
        names = v.data.dtype.names
        if "object_id" not in names:
            raise SchemaError(path, "vertex.object_id", "a per-point object_id property", list(names))
        points = np.stack([v["x"], v["y"], v["z"]], axis=1)
        ids = v["object_id"]
    points = np.asarray(points, dtype=np.float64)
    if not np.isfinite(points).all():
        raise SchemaError(path, "points", "finite coordinates (found NaN/inf)")
    return points, np.asarray(ids, dtype=np.int64)


def read_gt_cloud_colors(path: Path | str) -> np.ndarray:
    """uint8 RGB (N, 3) of a GT cloud PLY (grey where it has none)."""
    from plyfile import PlyData

    v = PlyData.read(str(path))["vertex"]
    if not {"red", "green", "blue"} <= set(v.data.dtype.names):
        return np.full((len(v.data), 3), 128, np.uint8)
    return np.stack([v["red"], v["green"], v["blue"]], axis=1).astype(np.uint8)


def prepared_semantics_file(scene: str) -> str:
    """Where a scene's ScanNet++-style GT lies under gt/."""
    return f"{PREPARED_SEMANTICS_DIR}/{scene}.pth"


def write_prepared_semantics(path: Path | str, points: np.ndarray, ids: np.ndarray, colors: np.ndarray) -> Path:
    """The GT cloud as ScanNet++'s prepared_semantics/<scene>.pth, read by OpenLex3D's unmodified `scannetpp` loaders.

    A torch-saved dict of numpy arrays: sampled_coords (N, 3) float64 (the PLY's float32 values), sampled_colors (N, 3)
    float64 in 0..1, sampled_instance_anno_id (N,) int64. Saved through a buffer so the archive name, and the bytes, do
    not depend on the file name.
    """
    import io

    import torch

    points, ids, colors = np.asarray(points, np.float64), np.asarray(ids, np.int64), np.asarray(colors)
    if points.ndim != 2 or points.shape[1] != 3 or ids.shape != (len(points),) or colors.shape != points.shape:
        raise SchemaError(path, "sampled_coords", "points (N, 3) with one id and one RGB colour each", (points.shape, ids.shape, colors.shape))
    buf = io.BytesIO()
    torch.save({"sampled_coords": points, "sampled_colors": colors.astype(np.float64) / 255.0, "sampled_instance_anno_id": ids}, buf)
    return atomic.write_bytes(path, buf.getvalue())
