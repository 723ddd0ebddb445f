"""ReplicaCAD scene source: exact object placement (COM / asset_local, scale, quaternions, URDF chains), classes,
scene lights in the baseline conditions, renders → GT → crops, and one-line errors for bad datasets."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.spatial import cKDTree

from generation.conditions import Condition, resolve_lights
from generation.procedural import generate_scene
from generation.sequence import render_sequence
from tests.conftest import REPO, small_params
from tests.replicacad_fixture import CLASSES, LIGHTS, TABLE_RGB, expected_cabinet, expected_chair, expected_table, write_dataset
from tests.test_pipeline import backproject
from tiermap.app import stages
from tiermap.formats.base import SchemaError
from tiermap.formats.crops import read_crop_index
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.scene import Scene, SceneMesh, read_scene, read_scene_mesh
from tiermap.formats.sequence import read_meta

CONDITIONS = ["baseline", "nominal", "camera_light", "dynamic_lights", "velocity"]


def make(tmp_path: Path, name: str, src: Path, **kw) -> tuple[Scene, SceneMesh]:  # type: ignore[no-untyped-def]
    ds = DatasetPaths(tmp_path / "ds", "d")
    path = stages.make_scene(ds, name, small_params(), source="replicacad", seed=kw.pop("seed", 2), input_path=src, **kw)
    return read_scene(path), read_scene_mesh(path.parent / "mesh.ply")


def object_vertices(mesh: SceneMesh, oid: int) -> np.ndarray:
    """Vertices of the triangles with this object id."""
    return mesh.vertices[np.unique(mesh.triangles[mesh.object_ids == oid])]


def same_points(a: np.ndarray, b: np.ndarray, tol: float = 1e-5) -> bool:
    """Every point of a is within tol of one of b and vice versa."""
    return bool(cKDTree(b).query(a)[0].max() < tol and cKDTree(a).query(b)[0].max() < tol)


def test_objects_are_placed_exactly_and_classed(tmp_path: Path) -> None:
    src = write_dataset(tmp_path / "replica_cad")
    sc, mesh = make(tmp_path, "tiny", src)
    assert sc.source == "replicacad" and sc.seed == 2 and sc.geometry == "mesh.ply"
    # One id per instance in file order (rigid objects, then articulated ones); the stage is id 0 (12 triangles a box).
    assert {o.id: o.class_name for o in sc.objects} == CLASSES
    assert (mesh.object_ids == 0).sum() == 6 * 12 and set(np.unique(mesh.object_ids)) == {0, 1, 2, 3}
    # Chair: config scale and COM, translation places the COM (scene-level origin); table: asset origin, non-uniform scale.
    assert same_points(object_vertices(mesh, 1), expected_chair())
    assert same_points(object_vertices(mesh, 2), expected_table())
    body, door = expected_cabinet()
    assert same_points(object_vertices(mesh, 3), np.concatenate([body, door]))
    assert not same_points(body, door, tol=0.05)  # two links, two distinct boxes
    # The stage: the room in z-up (floor at z ≈ 0, ceiling at 2.5).
    stage = object_vertices(mesh, 0)
    np.testing.assert_allclose(stage.min(0), [-0.05, -0.05, -0.02], atol=1e-5)
    np.testing.assert_allclose(stage.max(0), [4.05, 3.05, 2.52], atol=1e-5)
    np.testing.assert_allclose(sc.object(2).appearance.color, np.asarray(TABLE_RGB) / 255, atol=0.01)  # texture sampled
    # Lights of the default lighting config in z-up; the negative (light-subtracting) one is dropped.
    assert sc.lights is not None and [L.name for L in sc.lights] == ["tiny_lights_0", "tiny_lights_1"]
    for L, key in zip(sc.lights, ("0", "1")):
        x, y, z = LIGHTS[key]["position"]
        assert L.type == "point" and L.position == [x, -z, y] and L.intensity == LIGHTS[key]["intensity"]
    assert sc.lights[0].color == [1.0, 0.9, 0.8]
    raw = json.loads((tmp_path / "ds/d/scenes/tiny/scene.json").read_text())
    assert raw["lights"][1]["position"] == [3.0, 2.0, 2.3]
    d = tmp_path / "ds/d/scenes/tiny"
    first = {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}
    assert "mesh_textures/000.png" in first  # the table's GLB texture is kept per texel (and re-written byte for byte)
    make(tmp_path, "tiny", src)
    assert {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()} == first


def test_class_map_override_and_cli(tmp_path: Path) -> None:
    src = write_dataset(tmp_path / "replica_cad")
    (tmp_path / "classes.json").write_text(json.dumps({"frl_apartment_table_99": "Desk", "objects/frl_apartment_chair_01": "armchair"}))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(small_params()))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "tiermap.app.cli", "generate", "scene", "--root", "ds", "--scene", "apt", "--source", "replicacad",
           "--input", str(src), "--classes", str(tmp_path / "classes.json")]
    res = subprocess.run(cmd, cwd=tmp_path, env=env, text=True, capture_output=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    sc = read_scene(tmp_path / "ds/demo/scenes/apt/scene.json")
    assert {o.id: o.class_name for o in sc.objects} == {1: "armchair", 2: "desk", 3: "chest of shelves"}
    res = subprocess.run(cmd[:-1] + [str(tmp_path / "nope.json")], cwd=tmp_path, env=env, text=True, capture_output=True, check=False)
    assert res.returncode == 2 and "nope.json: missing" in res.stdout + res.stderr


def test_scene_lights_leave_scenes_without_lights_alone() -> None:
    """Procedural scenes have no lights: a condition with scene_lights lights them with its own list, as before."""
    sc = generate_scene("room0", 7, ["living room", "office"])
    assert sc.lights is None and "lights" not in sc.model_dump(exclude_none=True)
    spec = yaml.safe_load((REPO / "params.yaml").read_text())["lighting"]
    assert spec["baseline"]["scene_lights"] is True and spec["velocity"]["scene_lights"] is True
    with_flag = resolve_lights(Condition.model_validate(spec["baseline"]), sc)
    without = resolve_lights(Condition.model_validate({k: v for k, v in spec["baseline"].items() if k != "scene_lights"}), sc)
    assert with_flag == without and [L.name for L in with_flag] == ["ambient", "ceiling_a", "ceiling_b"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[DatasetPaths, dict]:
    """The fixture scene under all five conditions of params.yaml (80×60, few frames), its GT, close-ups and crops."""
    tmp = tmp_path_factory.mktemp("rcad")
    src = write_dataset(tmp / "replica_cad")
    p = small_params(CONDITIONS)
    p["render"].update(width=80, height=60)
    ds = DatasetPaths(tmp / "ds", "d")
    stages.make_scene(ds, "tiny", p, source="replicacad", seed=1, input_path=src)
    for cond in CONDITIONS:
        render_sequence(ds.scene_dir("tiny") / "scene.json", cond, p, ds.sequence_dir("tiny", cond), max_frames=6)
    stages.make_scene_gt(ds, "tiny", p, out=stages.build_dir(ds, "tiny"))
    stages.make_closeups(ds, "tiny", p)
    stages.make_crops(ds, "tiny", p)
    return ds, p


def test_conditions_gt_and_crops(rendered: tuple[DatasetPaths, dict]) -> None:
    ds, _ = rendered
    names = {c: {L.name for L in read_meta(ds.sequence_dir("tiny", c) / "meta.json").lights} for c in CONDITIONS}
    own = {"tiny_lights_0", "tiny_lights_1"}
    assert names["baseline"] == {"ambient"} | own and names["velocity"] == names["baseline"]  # the scene's lights
    for c in ("nominal", "camera_light", "dynamic_lights"):
        assert not names[c] & own, c
    base = read_meta(ds.sequence_dir("tiny", "baseline") / "meta.json")
    assert next(L for L in base.lights if L.name == "tiny_lights_1").position == [3.0, 2.0, 2.3]
    index = read_crop_index(ds.scene_folder("crops", "tiny") / "index.json")
    assert {r.object_id for r in index.objects} and {r.object_id for r in index.objects} <= set(CLASSES)


def test_depth_lands_on_the_source_mesh(tmp_path: Path) -> None:
    """At 320×240, back-projected depth lies on the scene's triangles (median < 1 mm), each id on its own object."""
    import open3d as o3d

    src = write_dataset(tmp_path / "replica_cad")
    p = small_params(["baseline"])
    p["render"].update(width=320, height=240)
    ds = DatasetPaths(tmp_path / "ds", "d")
    stages.make_scene(ds, "tiny", p, source="replicacad", seed=1, input_path=src)
    mesh = read_scene_mesh(ds.scene_dir("tiny") / "mesh.ply")
    seq = ds.sequence_dir("tiny", "baseline")
    render_sequence(ds.scene_dir("tiny") / "scene.json", "baseline", p, seq, max_frames=2)

    def dist(tris: np.ndarray, pts: np.ndarray) -> np.ndarray:
        rc = o3d.t.geometry.RaycastingScene()
        rc.add_triangles(o3d.core.Tensor(mesh.vertices.astype(np.float32)), o3d.core.Tensor(tris.astype(np.uint32)))
        return rc.compute_distance(o3d.core.Tensor(pts.astype(np.float32))).numpy()

    for i in range(2):
        pts, ids = backproject(seq, i)
        assert np.median(dist(mesh.triangles, pts)) < 0.001
        for oid in set(ids.tolist()) - {0}:
            assert np.median(dist(mesh.triangles[mesh.object_ids == oid], pts[ids == oid])) < 0.001, oid


def corrupt(tmp_path: Path) -> dict[str, tuple[Path, dict, str]]:
    """Broken copies of the dataset: (scene instance, make_scene kwargs, words the one-line error must contain)."""
    good = write_dataset(tmp_path / "good")
    root = good.parents[2]
    bad: dict[str, tuple[Path, dict, str]] = {}

    def copy(case: str) -> Path:
        shutil.copytree(root, tmp_path / case)
        return tmp_path / case

    r = copy("no_stage")
    (r / "configs/stages/tiny_stage.stage_config.json").unlink()
    bad["stage config"] = (r, {}, "field 'stage_instance.template_name': expected a template with a .stage_config.json file")
    r = copy("no_object_config")
    (r / "configs/objects/frl_apartment_table_99.object_config.json").unlink()
    bad["object config"] = (r, {}, "tiny.scene_instance.json: field 'object_instances[1].template_name'")
    r = copy("unknown_template")
    doc = json.loads((r / "configs/scenes/tiny.scene_instance.json").read_text())
    doc["articulated_object_instances"][0]["template_name"] = "no_such_urdf"
    (r / "configs/scenes/tiny.scene_instance.json").write_text(json.dumps(doc))
    bad["unknown template"] = (r, {}, "field 'articulated_object_instances[0].template_name': expected a template with a .urdf file")
    r = copy("no_asset")
    (r / "objects/chair.glb").unlink()
    bad["render asset"] = (r, {}, "frl_apartment_chair_01.object_config.json: field 'render_asset': expected an existing render asset")
    r = copy("no_urdf_mesh")
    (r / "urdf/chestOfShelves_01/door.obj").unlink()
    bad["urdf mesh"] = (r, {}, "chestOfShelves_01.urdf: field 'link[door].visual[0].geometry.mesh.filename'")
    r = copy("bad_urdf")
    (r / "urdf/chestOfShelves_01/chestOfShelves_01.urdf").write_text("<robot><link name='a'>")
    bad["malformed urdf"] = (r, {}, "chestOfShelves_01.urdf: field '<file>': expected valid URDF XML")
    r = copy("bad_json")
    (r / "configs/scenes/tiny.scene_instance.json").write_text('{"stage_instance": ')
    bad["malformed scene json"] = (r, {}, "tiny.scene_instance.json: field '<file>': expected valid JSON")
    r = copy("bad_object_json")
    (r / "configs/objects/frl_apartment_chair_01.object_config.json").write_text("{nope")
    bad["malformed object json"] = (r, {}, "frl_apartment_chair_01.object_config.json: field '<file>': expected valid JSON")
    r = copy("bad_rotation")
    doc = json.loads((r / "configs/scenes/tiny.scene_instance.json").read_text())
    doc["object_instances"][0]["rotation"] = [1, 0, 0]
    (r / "configs/scenes/tiny.scene_instance.json").write_text(json.dumps(doc))
    bad["short quaternion"] = (r, {}, "field 'object_instances.0.rotation'")
    r = copy("no_lighting")
    (r / "configs/lighting/tiny_lights.lighting_config.json").unlink()
    bad["lighting config"] = (r, {}, "field 'default_lighting': expected a template with a .lighting_config.json file")
    bad["missing scene instance"] = (tmp_path / "nothing", {}, "missing, expected the replicacad scene input")
    bad["missing class map"] = (root, {"classes": tmp_path / "nope.json"}, "nope.json: missing, expected a class map")
    return bad


def test_bad_datasets_are_one_line_errors_and_leave_nothing(tmp_path: Path) -> None:
    for case, (root, kw, words) in corrupt(tmp_path).items():
        src = root / "configs/scenes/tiny.scene_instance.json"
        with pytest.raises((SchemaError, ValueError)) as err:
            make(tmp_path, "bad", src, **kw)
        assert words in str(err.value) and "\n" not in str(err.value), (case, str(err.value))
        assert not (tmp_path / "ds/d/scenes/bad").exists(), case


def test_scene_without_default_lighting_keeps_condition_lights(tmp_path: Path) -> None:
    """No `default_lighting`: no scene lights, so baseline lights the ReplicaCAD scene with its own list."""
    src = write_dataset(tmp_path / "replica_cad")
    doc = json.loads(src.read_text())
    doc["default_lighting"] = ""
    src.write_text(json.dumps(doc))
    sc, _ = make(tmp_path, "dark", src)
    assert sc.lights is None
    spec = yaml.safe_load((REPO / "params.yaml").read_text())["lighting"]
    assert [L.name for L in resolve_lights(Condition.model_validate(spec["baseline"]), sc)] == ["ambient", "ceiling_a", "ceiling_b"]
