"""Sequences read by other projects' loaders land on the exact scene geometry (OpenCV intrinsics, integer pixel centres).

The loaders are written here from their documented conventions (outside-checks.md): gradslam / ConceptGraphs'
ReplicaDataset globs results/frame*.jpg and results/depth*.png, reads traj.txt as one row-major camera-to-world 4x4 per
line, divides depth by the dataconfig's png_depth_scale and back-projects integer pixel coordinates with its fx, fy,
cx, cy; NICE-SLAM does the same from its `cam:` block, after flipping the pose's y and z axes to OpenGL.
"""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import open3d as o3d
import pytest
import yaml
from PIL import Image

from generation.geometry import ray_scene, scene_geometry
from generation.procedural import generate_scene
from generation.sequence import render_sequence
from tests.conftest import small_params
from tiermap.formats.base import write_model

W, H = 320, 240


def gradslam_points(seq: Path, config: dict) -> list[np.ndarray]:
    """World points of every valid pixel per frame, as gradslam's Replica loader + PointFusion back-project them."""
    cp = config["camera_params"]
    assert config["dataset_name"] == "replica" and cp["crop_edge"] == 0
    colors = sorted(glob.glob(str(seq / "results" / "frame*.jpg")))
    depths = sorted(glob.glob(str(seq / "results" / "depth*.png")))
    lines = (seq / "traj.txt").read_text().splitlines()
    assert len(colors) == len(depths) == len(lines)
    K = np.array([[cp["fx"], 0, cp["cx"]], [0, cp["fy"], cp["cy"]], [0, 0, 1.0]])
    out = []
    for c, d, line in zip(colors, depths, lines):
        assert Image.open(c).size == (cp["image_width"], cp["image_height"])
        depth = np.asarray(Image.open(d), dtype=np.float64) / cp["png_depth_scale"]
        c2w = np.array(list(map(float, line.split()))).reshape(4, 4)
        v, u = np.nonzero(depth > 0)
        cam = (np.linalg.inv(K) @ np.stack([u, v, np.ones_like(u)]).astype(float)) * depth[v, u]
        out.append((c2w[:3, :3] @ cam).T + c2w[:3, 3])
    return out


def nice_slam_points(seq: Path, config: dict) -> list[np.ndarray]:
    """World points as NICE-SLAM's Replica dataset and get_rays compute them (OpenGL camera, dirs (i-cx)/fx, -(j-cy)/fy, -1)."""
    cam = config["cam"]
    depths = sorted(glob.glob(str(seq / "results" / "depth*.png")))
    out = []
    for d, line in zip(depths, (seq / "traj.txt").read_text().splitlines()):
        c2w = np.array(list(map(float, line.split()))).reshape(4, 4)
        c2w[:3, 1] *= -1
        c2w[:3, 2] *= -1
        depth = np.asarray(Image.open(d), dtype=np.float64) / cam["png_depth_scale"]
        j, i = np.nonzero(depth > 0)
        dirs = np.stack([(i - cam["cx"]) / cam["fx"], -(j - cam["cy"]) / cam["fy"], -np.ones(len(i))], 1)
        out.append(c2w[:3, 3] + (dirs @ c2w[:3, :3].T) * depth[j, i, None])
    return out


@pytest.fixture(scope="module")
def sequence(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """Three frames of the demo scene at 320x240 with the default renderer, and the scene's exact triangles."""
    root = tmp_path_factory.mktemp("loaders")
    scene = generate_scene("room0", 7, ["living room", "office"])
    write_model(scene, root / "scene.json")
    p = small_params(["baseline"])
    p["render"].update(width=W, height=H)
    render_sequence(root / "scene.json", "baseline", p, root / "seq", max_frames=3)
    return root / "seq", scene_geometry(scene, root)


def distance_to_mesh(points: np.ndarray, geometry: list) -> np.ndarray:
    """Exact distance of each point to the nearest scene triangle."""
    rc, _ = ray_scene(geometry)
    return rc.compute_distance(o3d.core.Tensor(points.astype(np.float32))).numpy()


def test_gradslam_and_nice_slam_land_on_the_exact_geometry(sequence: tuple[Path, list]) -> None:
    seq, geometry = sequence
    dataconfig = yaml.safe_load((seq / "dataconfig.yaml").read_text())
    nice = yaml.safe_load((seq / "nice_slam.yaml").read_text())
    cp = dataconfig["camera_params"]
    assert (cp["image_width"], cp["image_height"], cp["cx"], cp["cy"]) == (W, H, (W - 1) / 2, (H - 1) / 2)
    assert nice["inherit_from"] == "configs/Replica/replica.yaml" and nice["dataset"] == "replica"
    assert {k: nice["cam"][k] for k in ("fx", "fy", "cx", "cy")} == {k: cp[k] for k in ("fx", "fy", "cx", "cy")}
    assert (nice["cam"]["W"], nice["cam"]["H"], nice["cam"]["png_depth_scale"]) == (W, H, cp["png_depth_scale"])
    for read, cfg in ((gradslam_points, dataconfig), (nice_slam_points, nice)):
        pts = np.concatenate(read(seq, cfg))
        assert len(pts) > 0.5 * 3 * W * H
        dist = distance_to_mesh(pts, geometry)
        # depth PNGs hold whole millimetres: 0.25 mm median from quantisation alone; half a pixel off gives ~2.6 mm
        assert np.median(dist) < 0.0005 and np.percentile(dist, 95) < 0.0015, (read.__name__, np.median(dist), np.percentile(dist, 95))
        bound = np.asarray(nice["mapping"]["bound"])
        assert np.all(pts >= bound[:, 0]) and np.all(pts <= bound[:, 1])


def test_half_pixel_shift_is_detected(sequence: tuple[Path, list]) -> None:
    """The geometry check above fails for the old convention (principal point at w/2, h/2 read with integer pixels)."""
    seq, geometry = sequence
    cfg = yaml.safe_load((seq / "dataconfig.yaml").read_text())
    cfg["camera_params"].update(cx=W / 2, cy=H / 2)
    dist = distance_to_mesh(np.concatenate(gradslam_points(seq, cfg)), geometry)
    assert np.median(dist) > 0.0015

