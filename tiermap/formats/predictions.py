"""What evaluators hand in: the official OpenLex3D predictions layout and precomputed text features."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tiermap import atomic
from tiermap.formats.base import SchemaError, read_npy

TEXT_FEATURES_FILE = "text_features.npz"

EMBEDDINGS_FILE = "embeddings.npy"
POINT_LABELS_FILE = "labels.npy"
"""Per-point class ids (OSMa-Bench predictions) beside the prediction cloud."""

POINT_CLOUD_SUFFIXES = (".pcd", ".ply")
PREDICTION_CLOUD_FILE = "point_cloud.pcd"
"""The name both official evaluations read: queries take exactly point_cloud.pcd (or input.ply), segmentation any *.pcd."""
POINT_INDEX_FILE = "index.npy"


def read_point_positions(path: Path | str) -> np.ndarray:
    """Positions of a PCD/PLY point cloud as stored (float32 stays float32), shape (N, 3)."""
    import open3d as o3d

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing point cloud file")
    pc = o3d.t.io.read_point_cloud(str(path))
    if "positions" not in pc.point or pc.point.positions.shape[0] == 0:
        raise SchemaError(path, "positions", "a non-empty point cloud (PCD or PLY with x, y, z)")
    pts = pc.point.positions.numpy()
    if not np.isfinite(pts).all():
        raise SchemaError(path, "positions", "finite coordinates (found NaN/inf)")
    return pts


def find_prediction_cloud(folder: Path | str) -> Path:
    """The prediction cloud of a folder: point_cloud.pcd|ply, input.ply, else the only *.pcd/*.ply."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SchemaError(folder, "<folder>", "an existing predictions folder (point_cloud.pcd|ply, embeddings.npy, index.npy)")
    for name in (PREDICTION_CLOUD_FILE, "point_cloud.ply", "input.ply"):
        if (folder / name).is_file():
            return folder / name
    found = sorted(p for p in folder.iterdir() if p.suffix in POINT_CLOUD_SUFFIXES)
    if len(found) != 1:
        raise SchemaError(folder, "point_cloud.pcd", "one point cloud file (point_cloud.pcd or .ply)", [p.name for p in found])
    return found[0]


def check_features(path: Path | str, field: str, feats: np.ndarray) -> np.ndarray:
    """A finite (rows, D) float feature matrix, or a SchemaError naming the file."""
    if feats.ndim != 2 or feats.shape[1] == 0:
        raise SchemaError(path, field, "a 2-D array (rows, feature dimension)", feats.shape)
    if not np.issubdtype(feats.dtype, np.floating):
        raise SchemaError(path, field, "floating-point features", str(feats.dtype))
    bad = ~np.isfinite(feats).all(axis=1)
    if bad.any():
        raise SchemaError(path, field, "finite features (no NaN/inf)", f"{int(bad.sum())} bad rows, first row {int(np.flatnonzero(bad)[0])}")
    return feats


class Predictions:
    """A method's output in the official layout: points (M, 3), embeddings (K, D), index (M,) point → row."""

    def __init__(self, folder: Path, cloud: Path, points: np.ndarray, embeddings: np.ndarray, index: np.ndarray) -> None:
        self.folder, self.cloud, self.points, self.embeddings, self.index = folder, cloud, points, embeddings, index


def read_predictions(folder: Path | str, allow_unassigned: bool = True) -> Predictions:
    """point_cloud.pcd|ply + embeddings.npy + index.npy, checked: index length, range, finite features."""
    folder = Path(folder)
    cloud = find_prediction_cloud(folder)
    points = read_point_positions(cloud)
    for name in (EMBEDDINGS_FILE, POINT_INDEX_FILE):
        if not (folder / name).is_file():
            raise SchemaError(folder / name, "<file>", "an existing file (official OpenLex3D predictions layout)")
    emb = read_npy(folder / EMBEDDINGS_FILE, "embeddings")
    index = read_npy(folder / POINT_INDEX_FILE, "index")
    check_features(folder / EMBEDDINGS_FILE, "embeddings", emb)
    ipath = folder / POINT_INDEX_FILE
    if index.ndim != 1 or index.shape[0] != len(points):
        raise SchemaError(ipath, "index", f"shape ({len(points)},), one row per point of {cloud.name}", index.shape)
    if not np.issubdtype(index.dtype, np.integer):
        raise SchemaError(ipath, "index", "integer rows of embeddings.npy", str(index.dtype))
    low = -1 if allow_unassigned else 0
    bad = (index < low) | (index >= len(emb))
    if bad.any():
        v = int(index[np.flatnonzero(bad)[0]])
        # The official code silently reads index -1 as the last embedding row; refuse instead of scoring it.
        raise SchemaError(ipath, "index", f"rows in [{low}, {len(emb) - 1}] of embeddings.npy" + (" (-1 = no embedding)" if low < 0 else ""),
                          f"{int(bad.sum())} bad values, e.g. {v}")
    return Predictions(folder, cloud, points, emb, index.astype(np.int64))


def write_predictions(folder: Path | str, points: np.ndarray, embeddings: np.ndarray, index: np.ndarray,
                      colors: np.ndarray | None = None) -> Path:
    """Write predictions in the official layout (binary PCD point_cloud.pcd, embeddings.npy, index.npy) atomically."""
    import open3d as o3d

    folder = Path(folder)
    points = np.ascontiguousarray(points, dtype=np.float32)
    colors = np.full((len(points), 3), 128, np.uint8) if colors is None else np.ascontiguousarray(colors, np.uint8)
    if points.ndim != 2 or points.shape[1] != 3 or colors.shape != points.shape:
        raise SchemaError(folder / PREDICTION_CLOUD_FILE, "positions", "points (N, 3) with one RGB colour each", (points.shape, colors.shape))
    pc = o3d.t.geometry.PointCloud()
    pc.point.positions = o3d.core.Tensor(points)
    pc.point.colors = o3d.core.Tensor(colors)
    with atomic.atomic_dir(folder) as tmp:
        if not o3d.t.io.write_point_cloud(str(tmp / PREDICTION_CLOUD_FILE), pc, write_ascii=False, compressed=False):
            raise OSError(f"{tmp / PREDICTION_CLOUD_FILE}: open3d could not write the point cloud")
        np.save(tmp / EMBEDDINGS_FILE, np.asarray(embeddings, dtype=np.float32))
        np.save(tmp / POINT_INDEX_FILE, np.asarray(index, dtype=np.int64))
    return folder


def read_text_features(path: Path | str) -> dict[str, np.ndarray]:
    """Precomputed text features: an .npz with `texts` (P,) strings and `feats` (P, D) floats → {text: feature}."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing .npz file with arrays 'texts' and 'feats'")
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise SchemaError(path, "<file>", f"a numpy .npz archive ({type(err).__name__})") from None
    if isinstance(z, np.ndarray):
        raise SchemaError(path, "<file>", "a numpy .npz archive with arrays 'texts' and 'feats'", f"one .npy array {z.shape}")
    try:
        with z:
            arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError) as err:
        raise SchemaError(path, "<file>", f"a numpy .npz archive ({type(err).__name__})") from None
    for key in ("texts", "feats"):
        if key not in arrays:
            raise SchemaError(path, key, "an array named 'texts' (P,) and one named 'feats' (P, D)", sorted(arrays))
    texts, feats = arrays["texts"], arrays["feats"]
    if texts.ndim != 1 or texts.dtype.kind not in "US":
        raise SchemaError(path, "texts", "a 1-D array of strings", f"{texts.dtype} {texts.shape}")
    check_features(path, "feats", feats)
    if len(texts) != len(feats):
        raise SchemaError(path, "feats", f"one row per text ({len(texts)})", feats.shape)
    return {str(t): feats[i] for i, t in enumerate(texts)}


def write_text_features(path: Path | str, texts: list[str], feats: np.ndarray) -> Path:
    """Write an .npz of text features (`texts`, `feats`) atomically."""
    import io

    buf = io.BytesIO()
    np.savez(buf, texts=np.asarray(texts, dtype=str), feats=np.asarray(feats, dtype=np.float32))
    return atomic.write_bytes(path, buf.getvalue())


def read_point_labels(folder: Path | str) -> tuple[np.ndarray, np.ndarray]:
    """A folder's prediction cloud and its labels.npy → (points (M, 3), integer class id per point (M,))."""
    folder = Path(folder)
    points = read_point_positions(find_prediction_cloud(folder))
    path = folder / POINT_LABELS_FILE
    labels = read_npy(path, "labels")
    if labels.shape != (len(points),) or not np.issubdtype(labels.dtype, np.integer):
        raise SchemaError(path, "labels", f"integer class ids, shape ({len(points)},)", f"{labels.dtype} {labels.shape}")
    return points, labels
