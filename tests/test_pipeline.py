"""The DVC pipeline on the procedural default: outputs, cross-condition invariants, geometry, selective re-runs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image
from scipy.spatial import cKDTree

from annotation import ls_server
from tests.conftest import BIN, run
from tiermap.formats.benchbot import read_benchbot_gt
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.openlex3d import (
    read_gt_categories,
    read_gt_cloud,
    read_prompt_list,
    read_query_mapping,
)
from tiermap.formats.scene import OBB, read_scene
from tiermap.formats.sequence import read_camera, read_meta, read_traj

pytestmark = pytest.mark.slow
DVC = str(BIN / "dvc")


def seq(repo: Path, cond: str) -> Path:
    return repo / "datasets/demo/sequences/room0" / cond


def test_sequences_share_geometry_across_lighting(built_repo: Path) -> None:
    base, nom, vel = seq(built_repo, "baseline"), seq(built_repo, "nominal"), seq(built_repo, "velocity")
    mb, mn, mv = (read_meta(s / "meta.json") for s in (base, nom, vel))
    assert mb.frame_count == mn.frame_count > 4
    assert abs(mv.frame_count - mb.frame_count / 2) <= 1 and mv.speed.linear == 2 * mb.speed.linear
    np.testing.assert_array_equal(read_traj(base / "traj.txt"), read_traj(nom / "traj.txt"))
    diff_rgb = 0
    for i in range(mb.frame_count):
        for sub in ("instance/%06d.png", "results/depth%06d.png"):
            a, b = (np.asarray(Image.open(s / (sub % i))) for s in (base, nom))
            assert a.dtype == np.uint16 and np.array_equal(a, b)
        ra, rb = (np.asarray(Image.open(s / f"results/frame{i:06d}.jpg"), dtype=float) for s in (base, nom))
        diff_rgb += np.abs(ra - rb).mean() > 2
    assert diff_rgb == mb.frame_count  # lighting changes every RGB frame


def backproject(s: Path, i: int) -> tuple[np.ndarray, np.ndarray]:
    """ConceptGraphs/NICE-SLAM-style loader: frame/depth/instance names, traj.txt camera-to-world, intrinsics."""
    cam = read_camera(s / "camera_params.json")
    depth = np.asarray(Image.open(s / f"results/depth{i:06d}.png"), dtype=float) / cam.depth_scale
    ids = np.asarray(Image.open(s / f"instance/{i:06d}.png")).astype(int)
    pose = read_traj(s / "traj.txt")[i]
    v, u = np.nonzero(depth > 0)
    z = depth[v, u]
    pc = np.stack([(u - cam.cx) / cam.fx * z, (v - cam.cy) / cam.fy * z, z], 1)  # integer pixel centres (OpenCV)
    return pc @ pose[:3, :3].T + pose[:3, 3], ids[v, u]


def box_surface_distance(p: np.ndarray, obb: OBB) -> np.ndarray:
    """Exact distance of points to an oriented box's surface."""
    q = np.abs((p - np.asarray(obb.center)) @ np.asarray(obb.R))
    h = np.asarray(obb.extent) / 2
    outside = np.linalg.norm(np.maximum(q - h, 0), axis=1)
    inside = np.min(h - q, axis=1)
    return np.where(outside > 0, outside, np.maximum(inside, 0))


def test_backprojection_matches_gt_cloud(built_repo: Path) -> None:
    s = seq(built_repo, "baseline")
    gt_pts, gt_ids = read_gt_cloud(built_repo / "datasets/demo/gt/room0/gt_cloud.ply")
    n = read_meta(s / "meta.json").frame_count
    scene = read_scene(built_repo / "datasets/demo/scenes/room0/scene.json")
    p0, i0 = backproject(s, 0)
    p1, i1 = backproject(s, n - 1)
    checked = 0
    for oid in sorted(set(i0.tolist()) & set(i1.tolist())):
        a, b = p0[i0 == oid], p1[i1 == oid]
        if len(a) < 5 or len(b) < 5:
            continue
        gt = cKDTree(gt_pts[gt_ids == oid])
        # Points of the same object seen from two poses lie on its GT surface (the union of the boxes it is built from)
        # and near its GT cloud points.
        o = scene.object(oid)
        for pts in (a, b):
            surface = np.min([box_surface_distance(pts, part) for part in (o.parts or [o.obb])], axis=0)
            assert np.percentile(surface, 95) < 0.02
            assert np.median(gt.query(pts)[0]) < 0.02
        checked += 1
    assert checked >= 2
    # Frame 0's points, projected into frame 1, land where frame 1 measures the same object at the same depth.
    cam = read_camera(s / "camera_params.json")
    T1 = read_traj(s / "traj.txt")[1]
    pc = (p0 - T1[:3, 3]) @ T1[:3, :3]
    front = pc[:, 2] > 0.1
    u = np.rint(pc[front, 0] / pc[front, 2] * cam.fx + cam.cx).astype(int)
    v = np.rint(pc[front, 1] / pc[front, 2] * cam.fy + cam.cy).astype(int)
    inside = (u >= 0) & (u < cam.w) & (v >= 0) & (v < cam.h)
    depth1 = np.asarray(Image.open(s / "results/depth000001.png"), dtype=float) / cam.depth_scale
    ids1 = np.asarray(Image.open(s / "instance/000001.png")).astype(int)
    same = ids1[v[inside], u[inside]] == i0[front][inside]
    err = np.abs(depth1[v[inside], u[inside]] - pc[front][inside, 2])[same]
    assert same.sum() > 100 and np.median(err) < 0.02


def test_scene_gt_files(built_repo: Path) -> None:
    gt = built_repo / "datasets/demo/gt"
    cats = read_gt_categories(gt / "room0/gt_categories.json")
    vis = json.loads((gt / "room0/visibility.json").read_text())
    assert {s.object_id for s in cats.dataset.samples} == {int(k) for k, v in vis.items() if v["frames"] >= 1}
    objs = read_benchbot_gt(gt / "room0/objects.json")
    assert len(objs.ground_truth.objects) == len(read_scene(built_repo / "datasets/demo/scenes/room0/scene.json").objects)
    prompts = read_prompt_list(gt / "prompt_list.txt")
    assert prompts == sorted(set(prompts))
    l0 = read_query_mapping(gt / "room0/gt_categories_query_to_object_mapping_l0.json").level0
    assert "wall" not in l0 and "floor" not in l0  # excluded labels never become queries
    assert json.loads((built_repo / "datasets/demo/validation.json").read_text())["success"] is True
    # the official scannetpp loader's view of the GT (tests/test_official_layout.py) is the GT cloud, point for point
    import torch

    data = torch.load(str(gt / "prepared_semantics/room0.pth"), weights_only=False)
    points, ids = read_gt_cloud(gt / "room0/gt_cloud.ply")
    assert np.array_equal(data["sampled_coords"], points) and np.array_equal(data["sampled_instance_anno_id"], ids)
    seq_dir = seq(built_repo, "baseline")
    assert yaml.safe_load((seq_dir / "dataconfig.yaml").read_text())["camera_params"]["cx"] == read_camera(seq_dir / "camera_params.json").cx


def stages_run(out: str) -> set[str]:
    return {ln.split("'")[1] for ln in out.splitlines() if ln.startswith("Running stage")}


def test_changing_one_condition_reruns_only_its_stages(pipeline_repo: Path) -> None:
    repo = pipeline_repo
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["lighting"]["nominal"]["ambient"] = 0.9
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    status = json.loads(run([DVC, "status", "--json"], repo).stdout)
    assert set(status) == {"sequence@room0-nominal"}
    before = (seq(repo, "baseline") / "results/frame000000.jpg").stat().st_mtime_ns
    res = run([DVC, "repro"], repo)
    assert stages_run(res.stdout) == {"sequence@room0-nominal", "preview@room0"}
    assert (seq(repo, "baseline") / "results/frame000000.jpg").stat().st_mtime_ns == before
    assert json.loads(run([DVC, "status", "--json"], repo).stdout) == {}

    # The reference condition feeds the scene GT, the close-ups and the crops annotators see, so changing it re-runs that
    # chain: the crops change, push updates the tasks (Label Studio must run), pull re-reads the same annotations.
    params["lighting"]["baseline"]["ambient"] = 0.3
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    ds = DatasetPaths(repo / "datasets", "demo")
    before = json.loads((ds.labels / "tasks.json").read_text())
    ls_server.start(ds)
    try:
        res = run([DVC, "repro"], repo)
    finally:
        ls_server.stop(ds)
    # Labels and GT content are unchanged by lighting, so aggregate, clutter and validate are not re-run.
    assert stages_run(res.stdout) == {"sequence@room0-baseline", "scene_gt@room0", "preview@room0", "closeups@room0", "crops@room0",
                                      "push", "pull"}
    assert "updated: " + str(4 * len(before["crop_hashes"])) in res.stdout  # every task on each of the 4 seats
    after = json.loads((ds.labels / "tasks.json").read_text())
    assert after["seats"] == before["seats"]  # same task ids
    assert all(after["crop_hashes"][k] != v for k, v in before["crop_hashes"].items())
    assert len(list((ds.labels / "raw").glob("*-export.json"))) == 2 * 4


def test_label_studio_secrets_never_tracked(built_repo: Path) -> None:
    ds = DatasetPaths(built_repo / "datasets", "demo")
    cred = ls_server.read_credentials(ds)
    assert len(cred.seats) == 4
    secrets = [s.token for s in cred.seats] + [s.admin_password for s in cred.seats] + list(ls_server.read_simulated(ds).values())
    tracked = run(["git", "ls-files"], built_repo).stdout.splitlines()
    assert tracked and not any("labelstudio" in f for f in tracked)
    for secret in secrets:
        assert run(["git", "grep", "-l", secret], built_repo, check=False).stdout == ""
    # ...nor in the DVC-tracked outputs (raw exports, task record, ledger).
    for f in [*(ds.labels / "raw").glob("*"), ds.labels / "tasks.json", ds.labels / "ledger.json"]:
        assert not any(s in f.read_text() for s in secrets)


def test_unknown_condition_is_a_clear_error(pipeline_repo: Path) -> None:
    res = run([str(BIN / "tiermap"), "generate", "sequence", "--scene", "room0", "--condition", "night"], pipeline_repo, check=False)
    assert res.returncode == 2
    assert "unknown condition 'night'" in res.stderr and "baseline" in res.stderr
    assert not (seq(pipeline_repo, "night")).exists()


def test_new_condition_is_data_not_code(pipeline_repo: Path) -> None:
    repo = pipeline_repo
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["conditions"].append("night")
    params["lighting"]["night"] = {"ambient": 0.02, "lights": [{"name": "lamp", "type": "point", "at": [0.5, 0.5, 0.3], "intensity": 0.4}]}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    res = run([DVC, "repro"], repo)
    assert stages_run(res.stdout) == {"sequence@room0-night", "preview@room0"}
    assert (repo / "datasets/demo/previews/room0/contact_sheet.png").is_file()
    night = np.asarray(Image.open(seq(repo, "night") / "results/frame000000.jpg"), dtype=float).mean()
    base = np.asarray(Image.open(seq(repo, "baseline") / "results/frame000000.jpg"), dtype=float).mean()
    assert night < base
