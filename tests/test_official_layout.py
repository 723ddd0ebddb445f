"""Files the unmodified official OpenLex3D toolkit reads: ScanNet++-style GT and predictions named as both evaluations want.

The loaders below follow the official code (openlex3d/datasets/scannetpp.py, core/io.py; ../shared/notes): the GT is
`<path>/prepared_semantics/<scene>.pth`, torch-loaded, with sampled_coords / sampled_colors / sampled_instance_anno_id
turned into an open3d cloud; query evaluation reads exactly `<scene>/point_cloud.pcd` (else input.ply) and segmentation
the first *.pcd, then *.ply, of the folder. Like ScanNet++'s own prepared files, the .pth holds numpy arrays, so with
torch >= 2.6 it loads with `weights_only=False`, as the official query loader calls it.
"""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import open3d as o3d
import torch

from tiermap.formats.openlex3d import read_gt_cloud, read_gt_cloud_colors, write_gt_cloud, write_prepared_semantics
from tiermap.formats.predictions import read_predictions, write_predictions


def official_scannetpp_gt(base: Path, scene: str) -> tuple[o3d.t.geometry.PointCloud, np.ndarray, o3d.t.geometry.PointCloud]:
    """(segmentation cloud, ids, query cloud) as the official scannetpp loaders build them."""
    data = torch.load(str(base / "prepared_semantics" / f"{scene}.pth"), weights_only=False)
    seg = o3d.t.geometry.PointCloud()
    seg.point.positions = o3d.core.Tensor(data["sampled_coords"])
    seg.point.colors = o3d.core.Tensor(data["sampled_colors"])
    ids = data["sampled_instance_anno_id"]
    assert isinstance(ids, np.ndarray)  # load_dataset asserts it
    query = o3d.t.geometry.PointCloud()
    query.point.positions = o3d.core.Tensor(data["sampled_coords"])
    query.point.colors = o3d.core.Tensor(data["sampled_colors"])
    return seg, np.array(ids), query


def test_prepared_semantics_read_by_the_official_loader(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    pts = rng.uniform(-2, 2, (500, 3))
    ids = rng.integers(1, 9, 500)
    cols = rng.integers(0, 256, (500, 3)).astype(np.uint8)
    ply = write_gt_cloud(tmp_path / "gt_cloud.ply", pts, ids, cols)
    points, gt_ids = read_gt_cloud(ply)
    (tmp_path / "gt" / "prepared_semantics").mkdir(parents=True)
    path = write_prepared_semantics(tmp_path / "gt" / "prepared_semantics" / "room0.pth", points, gt_ids, read_gt_cloud_colors(ply))
    seg, off_ids, query = official_scannetpp_gt(tmp_path / "gt", "room0")
    assert np.array_equal(seg.point.positions.numpy(), points) and np.array_equal(query.point.positions.numpy(), points)
    assert np.array_equal(off_ids, gt_ids) and np.array_equal(np.rint(seg.point.colors.numpy() * 255).astype(np.uint8), cols)
    again = write_prepared_semantics(tmp_path / "other.pth", points, gt_ids, read_gt_cloud_colors(ply))
    assert again.read_bytes() == path.read_bytes()  # no file-name-dependent archive name


def test_predictions_named_as_both_official_evaluations_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    pts = rng.uniform(-2, 2, (300, 3)).astype(np.float32)
    emb = rng.normal(size=(4, 8)).astype(np.float32)
    index = rng.integers(0, 4, 300)
    folder = write_predictions(tmp_path / "method" / "room0", pts, emb, index)
    query_cloud = folder / "point_cloud.pcd"  # load_all_predictions: exactly this name, else input.ply
    assert query_cloud.is_file() and not (folder / "input.ply").exists()
    seg_cloud = (sorted(glob.glob(str(folder / "*.pcd"))) or sorted(glob.glob(str(folder / "*.ply"))))[0]
    assert Path(seg_cloud) == query_cloud
    legacy = o3d.io.read_point_cloud(str(query_cloud))
    assert np.array_equal(np.asarray(legacy.points), pts.astype(np.float64))
    tensor = o3d.t.io.read_point_cloud(seg_cloud)
    assert np.array_equal(tensor.point.positions.numpy(), pts)
    assert len(np.load(folder / "index.npy")) == len(pts)
    ours = read_predictions(folder)
    assert np.array_equal(ours.points, pts) and np.array_equal(ours.embeddings, emb)
