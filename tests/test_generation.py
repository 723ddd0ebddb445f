"""Generation pieces: deterministic scenes, trajectories and their failures, renderers, habitat mappings."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from generation import habitat
from generation.conditions import load_condition, resolve_lights
from generation.geometry import scene_geometry
from generation.procedural import generate_scene
from generation.sequence import make_renderer, render_sequence
from generation.trajectory import NoPathError, free_space, plan_path, sample_poses
from tests.conftest import small_params
from tiermap.formats.base import write_model
from tiermap.formats.scene import OBB
from tiermap.formats.sequence import CameraParams


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    a = write_model(generate_scene("r", 11), tmp_path / "a.json").read_bytes()
    b = write_model(generate_scene("r", 11), tmp_path / "b.json").read_bytes()
    c = write_model(generate_scene("r", 12), tmp_path / "c.json").read_bytes()
    assert a == b and a != c


def test_library_rooms_and_depictions() -> None:
    from generation.library import LIBRARY, ROOM_KINDS

    assert len(LIBRARY) >= 30 and {"living room", "bedroom", "office", "kitchen", "meeting room"} <= set(ROOM_KINDS)
    sc = generate_scene("r", 5, ["bedroom", "kitchen", "meeting room"])
    classes = {o.class_name for o in sc.objects}
    assert {"door", "window", "bed", "fridge", "meeting table"} <= classes and len(sc.rooms) == 3
    textured = [o for o in sc.objects if o.appearance.texture]
    assert textured and all(set(o.lexicon.depictions) & {o.appearance.texture, o.appearance.text} for o in textured)
    assert any(len(o.parts) > 1 for o in sc.objects)  # parametric multi-part furniture
    with pytest.raises(ValueError, match="unknown room kind 'garage'"):
        generate_scene("r", 5, ["garage"])


def test_supported_objects_rest_on_their_hosts() -> None:
    from generation.library import TOPS

    sc = generate_scene("r", 3, ["office", "kitchen", "living room"])
    checked = 0
    for o in sc.objects:
        if o.parent is None or sc.object(o.parent).class_name not in TOPS:
            continue
        checked += 1
        host = sc.object(o.parent)
        bottom = o.obb.center[2] - o.obb.extent[2] / 2
        assert bottom == pytest.approx(host.obb.center[2] + host.obb.extent[2] / 2, abs=1e-3), o.class_name
    assert checked >= 3


def test_pose_sampling_speeds() -> None:
    path = np.array([[0.0, 0.0], [3.0, 0.0]])
    poses = sample_poses(path, linear=0.75, angular=0.8, fps=10)
    steps = np.linalg.norm(np.diff(poses[:, :3, 3], axis=0), axis=1)
    assert steps.max() == pytest.approx(0.075, abs=1e-9) and len(poses) == 41
    fast = sample_poses(path, linear=1.5, angular=1.6, fps=10)
    assert len(fast) == 21
    R = poses[0, :3, :3]
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-9)
    # OpenCV camera axes in the world: z (forward) along +x, the path direction, pitched 0.25 rad down; x (right) is -y
    np.testing.assert_allclose(R[:, 2], [np.cos(0.25), 0.0, -np.sin(0.25)], atol=1e-9)
    np.testing.assert_allclose(R[:, 0], [0.0, -1.0, 0.0], atol=1e-9)


def test_no_free_space_and_no_path_are_clear() -> None:
    sc = generate_scene("r", 1)
    with pytest.raises(ValueError, match="no free space at robot height"):
        free_space(sc, robot_radius=5.0)
    blocker = sc.model_copy(deep=True)
    blocker.rooms = []
    with pytest.raises(ValueError, match="no rooms"):
        plan_path(blocker, seed=0)
    with pytest.raises(NoPathError, match="fewer than two distinct points"):
        sample_poses(np.array([[1.0, 1.0], [1.0, 1.0]]), 0.75, 0.8, 10)


def test_pyrender_and_raycast_agree_on_depth_and_ids(tmp_path: Path) -> None:
    params = small_params()
    sc = generate_scene("room0", 7)
    write_model(sc, tmp_path / "scene.json")
    metas = {}
    for r in ("pyrender", "raycast"):
        metas[r] = render_sequence(tmp_path / "scene.json", "baseline", params, tmp_path / r, max_frames=3, renderer_name=r)
    assert metas["pyrender"].renderer == "pyrender-egl" and metas["raycast"].renderer == "open3d-raycast"
    from PIL import Image

    for i in range(3):
        for sub in (f"results/depth{i:06d}.png", f"instance/{i:06d}.png"):
            assert np.array_equal(np.asarray(Image.open(tmp_path / "pyrender" / sub)), np.asarray(Image.open(tmp_path / "raycast" / sub)))
        rgb = np.asarray(Image.open(tmp_path / "pyrender" / f"results/frame{i:06d}.jpg"))
        assert rgb.shape == (36, 48, 3) and rgb.mean() > 20


def test_unknown_renderer_and_missing_habitat() -> None:
    sc = scene_geometry(generate_scene("room0", 7), ".")
    cam = CameraParams(w=8, h=6, fx=4, fy=4, cx=4, cy=3, depth_scale=1000)
    with pytest.raises(ValueError, match="unknown renderer 'blender'"):
        make_renderer("blender", sc, cam)
    with pytest.raises(RuntimeError, match="habitat-sim is not installed.*conda install habitat-sim"):
        make_renderer("habitat", sc, cam)


def test_habitat_light_setups_follow_the_schedule() -> None:
    params = small_params()
    sc = generate_scene("room0", 7)
    dyn = resolve_lights(load_condition("dynamic_lights", params["lighting"]), sc)
    setups = habitat.light_setups(dyn, n_segments=4)
    assert [len(s) for s in setups] == [1, 1, 1, 1]
    a, b = (resolve_lights(load_condition("dynamic_lights", params["lighting"]), sc)[i] for i in (1, 2))
    assert setups[0][0]["vector"] == [*habitat.z_up_to_y_up(a.position), 1.0]
    assert setups[3][0]["vector"] == [*habitat.z_up_to_y_up(b.position), 1.0]
    assert setups[0][0]["model"] == "GLOBAL" and setups[0][0]["color"] == [a.intensity] * 3
    cam = resolve_lights(load_condition("camera_light", params["lighting"]), sc)
    assert habitat.light_setups(cam, 1)[0] == [{"vector": [0.0, 0.0, 0.0, 1.0], "color": [2.5, 2.5, 2.5], "model": "CAMERA"}]
    assert habitat.light_setups(resolve_lights(load_condition("nominal", params["lighting"]), sc), 2) == [[], []]


def test_habitat_sensor_specs() -> None:
    cam = CameraParams(w=640, h=480, fx=320, fy=320, cx=320, cy=240, depth_scale=1000)
    specs = habitat.sensor_specs(cam, height=1.2)
    assert [s["sensor_type"] for s in specs] == ["COLOR", "DEPTH", "SEMANTIC"]
    assert specs[0]["hfov"] == pytest.approx(90.0) and specs[0]["resolution"] == [480, 640]


def test_habitat_camera_pose_maps_axes_and_points() -> None:
    from generation.trajectory import look_at_pose

    pose = look_at_pose(np.array([1.0, 2.0, 1.2]), yaw=0.7, pitch=-0.25)
    position, R = habitat.habitat_camera_pose(pose)
    assert position == pytest.approx([1.0, 1.2, -2.0])
    assert np.allclose(R @ R.T, np.eye(3)) and np.linalg.det(R) == pytest.approx(1.0)
    # OpenGL camera: it looks along -z and y is up; both must be the OpenCV camera's +z and -y, taken to y-up.
    to_yup = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])
    assert np.allclose(R @ [0, 0, -1], to_yup @ pose[:3, 2]) and np.allclose(R @ [0, 1, 0], to_yup @ -pose[:3, 1])
    # A world point seen at pixel (u, v) by the tiermap camera is seen at the same place by the habitat camera.
    p = pose[:3, 3] + 2.0 * pose[:3, 2] + 0.3 * pose[:3, 0]
    cv = pose[:3, :3].T @ (p - pose[:3, 3])
    gl = R.T @ (to_yup @ p - np.asarray(position))
    assert np.allclose(gl, [cv[0], -cv[1], -cv[2]])
    assert [habitat.segment_of(t, 4) for t in (0.0, 0.24, 0.25, 0.99, 1.0)] == [0, 0, 1, 3, 3]


def test_box_textures_read_upright_and_unmirrored_from_outside() -> None:
    from scipy.spatial.transform import Rotation

    from generation.geometry import textured_box

    for seed in range(20):
        rng = np.random.default_rng(seed)
        R = Rotation.from_euler("z", rng.uniform(-np.pi, np.pi)).as_matrix() if seed % 2 else Rotation.random(random_state=seed).as_matrix()
        obb = OBB(center=rng.uniform(-2, 2, 3).tolist(), extent=rng.uniform(0.1, 1.5, 3).tolist(), R=R.tolist())
        v, _, uv = textured_box(obb)
        for k in range(6):
            q, t = v[4 * k:4 * k + 4], uv[4 * k:4 * k + 4]
            assert sorted(map(tuple, t)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
            at = {tuple(x): p for x, p in zip(t, q)}
            du, dv = at[(1, 0)] - at[(0, 0)], at[(0, 1)] - at[(0, 0)]
            n = q.mean(0) - np.asarray(obb.center)
            assert np.dot(np.cross(du, dv), n) > 0  # seen from outside: u to the right of v, not mirrored
            if abs(n[2]) / np.linalg.norm(n) < 0.99:
                assert dv[2] >= -1e-9  # side faces: the texture's top is up


RENDER_ONCE = """
import sys, yaml
import os
from pathlib import Path
from generation.sequence import render_sequence
p = yaml.safe_load(Path(sys.argv[1]).read_text())
render_sequence(Path(sys.argv[2]), sys.argv[3], p, Path(sys.argv[4]), max_frames=12)
"""


@pytest.mark.parametrize("condition", ["camera_light", "dynamic_lights"])
def test_rerender_is_byte_identical(tmp_path: Path, condition: str) -> None:
    """Two renders of one scene and condition, in processes that differ in hash seed, llvmpipe threads and SIMD width."""
    import subprocess
    import sys

    import yaml

    write_model(generate_scene("room0", 7, ["living room", "office"]), tmp_path / "scene.json")
    p = small_params([condition])
    p["render"].update(width=160, height=120)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    envs = [{"PYTHONHASHSEED": "1", "LP_NUM_THREADS": "2"}, {"PYTHONHASHSEED": "2", "LP_NUM_THREADS": "1", "LP_NATIVE_VECTOR_WIDTH": "128"}]
    for k, env in enumerate(envs):  # the same output path both times (nice_slam.yaml names it)
        subprocess.run([sys.executable, "-c", RENDER_ONCE, str(tmp_path / "params.yaml"), str(tmp_path / "scene.json"), condition,
                        str(tmp_path / "out" / condition)], check=True, cwd=tmp_path, env={**os.environ, **env}, capture_output=True)
        (tmp_path / "out").rename(tmp_path / f"run{k}")
    a, b = (sorted(p.relative_to(tmp_path / f"run{k}") for p in (tmp_path / f"run{k}").rglob("*") if p.is_file()) for k in (0, 1))
    assert a == b and len([f for f in a if f.suffix == ".jpg"]) == 12
    differ = [str(f) for f in a if (tmp_path / "run0" / f).read_bytes() != (tmp_path / "run1" / f).read_bytes()]
    assert not differ
