"""Coverage-driven camera paths: the demo scene seen whole, determinism, mesh scenes, and the visibility ray test."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from generation.coverage import View, greedy_cover, sweep, visibility_matrix
from generation.geometry import ObjectGeometry, scene_geometry, textured_box
from generation.procedural import generate_scene
from generation.sequence import render_sequence, scene_poses
from generation.trajectory import STRUCTURE_CLASSES
from tests.conftest import REPO
from tests.mesh_fixtures import write_replica
from tiermap.formats.base import write_model
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.scene import OBB, Scene, read_scene
from tiermap.formats.sequence import read_meta, read_traj, write_traj


def demo_params() -> dict:
    """The repo's params at 64×48 with min_pixels scaled by the pixel count (50 at 320×240 → 2), real planner."""
    p = yaml.safe_load((REPO / "params.yaml").read_text())
    scale = 64 * 48 / (p["render"]["width"] * p["render"]["height"])
    p["gt"]["min_pixels"] = max(int(round(p["gt"]["min_pixels"] * scale)), 1)
    p["render"].update(width=64, height=48, renderer="raycast")
    return p


@pytest.fixture(scope="module")
def demo_sequence(tmp_path_factory: pytest.TempPathFactory) -> tuple[Scene, Path, dict]:
    """The demo scene (params `scene.room0`) rendered at 64×48 along its planned path."""
    p = demo_params()
    spec = p["scene"]["room0"]
    tmp = tmp_path_factory.mktemp("demo")
    scene = generate_scene("room0", spec["seed"], spec["rooms"])
    write_model(scene, tmp / "scene.json")
    render_sequence(tmp / "scene.json", p["reference_condition"], p, tmp / "seq")
    return scene, tmp / "seq", p


@pytest.mark.slow
def test_demo_path_enters_every_room_and_sees_the_objects(demo_sequence: tuple[Scene, Path, dict]) -> None:
    scene, seq, p = demo_sequence
    meta = read_meta(seq / "meta.json")
    objects = {o.id for o in scene.objects if o.class_name not in STRUCTURE_CLASSES}
    seen: set[int] = set()
    for f in sorted((seq / "instance").glob("*.png")):
        ids, counts = np.unique(np.asarray(Image.open(f)), return_counts=True)
        seen |= set(ids[counts >= p["gt"]["min_pixels"]].tolist())
    xy = read_traj(seq / "traj.txt")[:, :2, 3]
    entered = {r.name for r in scene.rooms if ((xy >= r.min[:2]) & (xy <= r.max[:2])).all(1).any()}
    assert entered == {r.name for r in scene.rooms}
    assert len(seen & objects) / len(objects) >= 0.95, sorted(objects - seen)
    cov = meta.coverage
    assert cov is not None and cov.min_pixels == p["gt"]["min_pixels"]
    assert (cov.objects_seen, cov.objects_total, set(cov.rooms_entered), cov.rooms_total) == (len(seen & objects), len(objects), entered, 2)
    assert cov.fraction == pytest.approx(len(seen & objects) / len(objects), abs=1e-4) and set(cov.unseen) == objects - seen
    assert meta.frame_count <= 150 * p["trajectory"]["fps"] / 4


def test_same_seed_same_traj(demo_sequence: tuple[Scene, Path, dict], tmp_path: Path) -> None:
    scene, seq, p = demo_sequence
    again = scene_poses(scene, p, 1.0, scene_geometry(scene, seq.parent))
    assert write_traj(tmp_path / "traj.txt", again).read_bytes() == (seq / "traj.txt").read_bytes()
    fast = scene_poses(scene, p, 2.0, scene_geometry(scene, seq.parent))
    np.testing.assert_allclose(fast[0], again[0])  # velocity: same path, fewer frames
    assert len(fast) < len(again)


def test_coverage_for_a_mesh_scene(tmp_path: Path) -> None:
    from tiermap.app.stages import make_scene

    p = demo_params()
    ds = DatasetPaths(tmp_path / "ds", "d")
    make_scene(ds, "office0", p, source="replica", seed=3, input_path=write_replica(tmp_path / "office_0"))
    sc = read_scene(ds.scene_dir("office0") / "scene.json")
    poses = scene_poses(sc, p, 1.0, scene_geometry(sc, ds.scene_dir("office0")))
    xy = poses[:, :2, 3]
    r = p["trajectory"]["robot_radius"]
    assert len(poses) > 1 and (xy > r - 0.1).all() and (xy < np.array([4.0, 3.0]) - r + 0.1).all()
    yaw = np.unwrap(np.arctan2(poses[:, 1, 2], poses[:, 0, 2]))
    assert np.abs(np.diff(yaw)).max() <= p["trajectory"]["angular_speed"] / p["trajectory"]["fps"] + 1e-9


def box(oid: int, center: tuple[float, float, float], extent: tuple[float, float, float]) -> ObjectGeometry:
    """An axis-aligned box as render geometry."""
    v, f, _ = textured_box(OBB(center=list(center), extent=list(extent), R=np.eye(3).tolist()))
    return ObjectGeometry(oid, v, f, np.ones((len(v), 3)))


def test_an_object_behind_a_wall_is_not_seen() -> None:
    # A 0.3 m cube at x = 3, a full wall at x = 2 (id 1), a second cube at x = 1: cameras at x = 0.5 and x = 3.8.
    geo = [box(1, (2.0, 0.0, 1.25), (0.1, 6.0, 2.5)), box(2, (3.0, 0.0, 1.0), (0.3, 0.3, 0.3)), box(3, (1.0, 0.0, 1.0), (0.3, 0.3, 0.3))]
    cams = np.array([[0.5, 0.0, 1.2], [3.8, 0.0, 1.2], [0.5, 0.0, 1.2]])
    view = View(view_range=4.0, min_solid_angle=0.003)
    sees = visibility_matrix(geo, cams, [2, 3], view)
    assert sees.tolist() == [[False, True], [True, False], [False, True]]
    # The same cube out of range, or too small to reach the solid angle, is not seen either.
    assert not visibility_matrix(geo, cams[:1], [3], View(view_range=0.3)).any()
    assert not visibility_matrix(geo, cams[:1], [3], View(min_solid_angle=2.0)).any()
    # Straight below the camera is out of the vertical field of view at the sequence's pitch.
    under = [box(4, (0.5, 0.0, 0.1), (0.3, 0.3, 0.2))]
    assert not visibility_matrix(under, cams[:1], [4], view).any()


def test_greedy_cover_and_sweep() -> None:
    sets = np.array([[1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]], bool)
    assert [(r, e.tolist()) for r, e in greedy_cover(sets)] == [(1, [1, 2, 3]), (0, [0])]
    assert sweep(np.array([0.1, 0.3]), np.radians(35), 0.0) == pytest.approx([0.2])
    yaws = sweep(np.array([0.0, np.pi]), np.radians(35), np.pi)  # from the end nearest the arrival heading
    assert yaws[0] == pytest.approx(np.pi + np.radians(35)) and yaws[-1] == pytest.approx(2 * np.pi - np.radians(35))
    assert (np.abs(np.diff(yaws)) <= np.pi / 2 + 1e-9).all()


def test_meta_without_coverage_still_reads(demo_sequence: tuple[Scene, Path, dict], tmp_path: Path) -> None:
    import json

    old = json.loads((demo_sequence[1] / "meta.json").read_text())
    del old["coverage"]
    (tmp_path / "meta.json").write_text(json.dumps(old))
    assert read_meta(tmp_path / "meta.json").coverage is None
