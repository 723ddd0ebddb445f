"""Scene sources from labelled meshes: Replica, generic PLY/GLB/glTF; their geometry, renders, GT and bad input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy.spatial import cKDTree
from typer.testing import CliRunner

from generation.sequence import render_sequence
from tests.conftest import small_params
from tests.mesh_fixtures import (
    ROOM,
    UNLISTED_ID,
    write_glb,
    write_replica,
    write_vertex_id_ply,
)
from tests.test_pipeline import backproject, box_surface_distance
from tiermap.app.cli import app
from tiermap.formats.base import SchemaError, write_model
from tiermap.formats.crops import read_closeup_index, read_crop_index, read_visibility
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.openlex3d import read_gt_cloud
from tiermap.formats.scene import Scene, read_scene, read_scene_mesh
from tiermap.formats.sequence import read_meta, read_traj
from tiermap.app.stages import make_scene, make_scene_gt

TRUE = {oid: (cls, np.asarray(c), np.sort(e)) for oid, cls, c, e, _ in ROOM}


def make(tmp_path: Path, name: str, **kw) -> Scene:  # type: ignore[no-untyped-def]
    ds = DatasetPaths(tmp_path / "ds", "d")
    return read_scene(make_scene(ds, name, small_params(), **kw))


def assert_room_objects(sc: Scene) -> None:
    """The scene holds exactly the room's objects with their classes and boxes (centre, sorted extent)."""
    assert sorted(o.id for o in sc.objects) == sorted(TRUE)
    for o in sc.objects:
        cls, c, e = TRUE[o.id]
        assert o.class_name == cls.replace("_", " ") and o.lexicon.synonyms == [o.class_name]
        np.testing.assert_allclose(o.obb.center, c, atol=1e-4)
        np.testing.assert_allclose(np.sort(o.obb.extent), e, atol=1e-4)


def test_replica_scene_objects_ids_and_bytes(tmp_path: Path) -> None:
    src = write_replica(tmp_path / "replica" / "office_0")
    sc = make(tmp_path, "office0", source="replica", seed=3, input_path=src)
    assert sc.source == "replica" and sc.seed == 3 and sc.geometry == "mesh.ply"
    assert_room_objects(sc)
    scene_dir = tmp_path / "ds/d/scenes/office0"
    mesh = read_scene_mesh(scene_dir / "mesh.ply")
    # Quads become two triangles each; the box info_semantic.json does not list renders as unlabelled (id 0).
    assert len(mesh.triangles) == 2 * 6 * (len(ROOM) + 1)
    assert UNLISTED_ID not in mesh.object_ids and (mesh.object_ids == 0).sum() == 12
    chair = mesh.vertex_colors[np.unique(mesh.triangles[mesh.object_ids == 8])]
    np.testing.assert_allclose(chair, np.tile([0.2, 0.3, 0.7], (8, 1)), atol=1 / 255)
    first = {p.name: p.read_bytes() for p in scene_dir.iterdir()}
    # The habitat/ folder and the PLY itself are accepted as --input too; the same input gives the same bytes.
    make(tmp_path, "office0", source="replica", seed=3, input_path=src / "habitat")
    assert {p.name: p.read_bytes() for p in scene_dir.iterdir()} == first
    make(tmp_path, "office0", source="replica", seed=3, input_path=src / "habitat" / "mesh_semantic.ply")
    assert {p.name: p.read_bytes() for p in scene_dir.iterdir()} == first


def test_generic_ply_and_glb_give_the_same_scene(tmp_path: Path) -> None:
    (tmp_path / "ply").mkdir()
    ply = write_vertex_id_ply(tmp_path / "ply" / "room.ply")
    sc = make(tmp_path, "plyroom", source="mesh", input_path=ply)
    assert sc.source == "mesh"
    assert_room_objects(sc)
    # GLB is y-up by specification: the same room in z-up, object ids from node names, the texture sampled to colours.
    glb = write_glb(tmp_path / "glb" / "room.glb", texture=True)
    sg = make(tmp_path, "glbroom", source="mesh", input_path=glb)
    assert_room_objects(sg)
    table = next(o for o in sg.objects if o.id == 7)
    np.testing.assert_allclose(table.appearance.color, [200 / 255, 30 / 255, 30 / 255], atol=0.01)
    np.testing.assert_allclose(sg.rooms[0].min, [-0.05, -0.05, -0.02], atol=1e-4)
    np.testing.assert_allclose(sg.rooms[0].max, [4.05, 3.05, 2.52], atol=1e-4)


def test_glb_with_per_vertex_object_id_attribute(tmp_path: Path) -> None:
    import trimesh

    m = trimesh.creation.box(extents=[1.0, 2.0, 0.5])
    ids = np.where(m.vertices[:, 0] > 0, 4, 4)  # one object; a second box below gets id 5
    m.vertex_attributes["_OBJECT_ID"] = ids.astype(np.float32)
    m2 = trimesh.creation.box(extents=[3.0, 3.0, 0.1])
    m2.apply_translation([0, -1.0, 0])  # y-up: below the first box
    m2.vertex_attributes["_OBJECT_ID"] = np.full(len(m2.vertices), 5, np.float32)
    s = trimesh.Scene()
    s.add_geometry(m, node_name="anything")
    s.add_geometry(m2, node_name="floor_mesh")
    s.export(str(tmp_path / "two.glb"))
    (tmp_path / "classes.json").write_text(json.dumps({"4": "Storage_Box", "5": "floor"}))
    sc = make(tmp_path, "two", source="mesh", input_path=tmp_path / "two.glb")
    box = sc.object(4)
    assert box.class_name == "storage box"
    np.testing.assert_allclose(np.sort(box.obb.extent), [0.5, 1.0, 2.0], atol=1e-6)
    assert sc.object(5).obb.center[2] == pytest.approx(-1.0)  # glTF's -y is tiermap's -z


@pytest.fixture(scope="module")
def replica_render(tmp_path_factory: pytest.TempPathFactory) -> tuple[DatasetPaths, dict]:
    """The Replica fixture scene rendered under baseline and camera_light (pyrender) plus its scene GT."""
    tmp = tmp_path_factory.mktemp("replica")
    src = write_replica(tmp / "replica" / "office_0")
    params = small_params(["baseline", "camera_light"])
    params["render"].update(width=96, height=72)
    ds = DatasetPaths(tmp / "ds", "d")
    make_scene(ds, "office0", params, source="replica", seed=3, input_path=src)
    for cond in params["conditions"]:
        render_sequence(ds.scene_dir("office0") / "scene.json", cond, params, ds.sequence_dir("office0", cond))
    make_scene_gt(ds, "office0", params)
    return ds, params


def test_replica_renders_match_its_geometry_and_gt(replica_render: tuple[DatasetPaths, dict]) -> None:
    ds, params = replica_render
    sc = read_scene(ds.scene_dir("office0") / "scene.json")
    s = ds.sequence_dir("office0", "baseline")
    n = read_meta(s / "meta.json").frame_count
    assert n >= 4
    gt_pts, gt_ids = read_gt_cloud(ds.gt / "office0" / "gt_cloud.ply")
    assert set(np.unique(gt_ids)) == set(TRUE)  # unlabelled geometry is not in the GT cloud
    seen: set[int] = set()
    for i in (0, n // 2, n - 1):
        pts, ids = backproject(s, i)
        assert UNLISTED_ID not in ids
        seen |= set(ids.tolist())
        for oid in set(ids.tolist()) - {0}:
            p = pts[ids == oid]
            assert np.percentile(box_surface_distance(p, sc.object(oid).obb), 95) < 0.02
            assert np.median(cKDTree(gt_pts[gt_ids == oid]).query(p)[0]) < 0.02
    # The path's first, middle and last frames together see every object, and the unlisted box only as id 0.
    assert seen == {0} | set(TRUE)
    # Lighting changes RGB only: depth and instance ids are identical across conditions.
    c = ds.sequence_dir("office0", "camera_light")
    for i in range(n):
        for sub in (f"results/depth{i:06d}.png", f"instance/{i:06d}.png"):
            assert np.array_equal(np.asarray(Image.open(s / sub)), np.asarray(Image.open(c / sub)))
    assert not np.array_equal(np.asarray(Image.open(s / "results/frame000000.jpg")), np.asarray(Image.open(c / "results/frame000000.jpg")))


def test_mesh_scene_path_keeps_clear_of_objects(replica_render: tuple[DatasetPaths, dict]) -> None:
    ds, params = replica_render
    sc = read_scene(ds.scene_dir("office0") / "scene.json")
    poses = read_traj(ds.sequence_dir("office0", "baseline") / "traj.txt")
    xyz = poses[:, :3, 3]
    assert np.allclose(xyz[:, 2], -0.02 + params["trajectory"]["camera_height"])  # camera height above the floor
    r = params["trajectory"]["robot_radius"]
    assert (xyz[:, 0] > r - 0.1).all() and (xyz[:, 0] < 4.0 - r + 0.1).all() and (xyz[:, 1] > r - 0.1).all() and (xyz[:, 1] < 3.0 - r + 0.1).all()
    for oid in (7, 8):  # table and chair: the path stays a robot radius away (grid cell tolerance)
        o = sc.object(oid)
        lo = np.asarray(o.obb.center) - np.abs(np.asarray(o.obb.R)) @ np.asarray(o.obb.extent) / 2
        hi = np.asarray(o.obb.center) + np.abs(np.asarray(o.obb.R)) @ np.asarray(o.obb.extent) / 2
        d = np.linalg.norm(np.maximum(np.maximum(lo[:2] - xyz[:, :2], xyz[:, :2] - hi[:2]), 0), axis=1)
        assert d.min() > r - 0.15


def corrupt(tmp_path: Path) -> dict[str, tuple[dict, str]]:
    """Bad inputs and the words their one-line error must contain."""
    rep = write_replica(tmp_path / "rep" / "office_0")
    ply = rep / "habitat" / "mesh_semantic.ply"
    bad: dict[str, tuple[dict, str]] = {}
    trunc = tmp_path / "trunc" / "room.ply"
    trunc.parent.mkdir()
    trunc.write_bytes(ply.read_bytes()[: len(ply.read_bytes()) // 2])
    (trunc.parent / "classes.json").write_text("{}")
    bad["truncated"] = ({"source": "mesh", "input_path": trunc}, "room.ply: field '<file>': expected a readable PLY mesh")
    from plyfile import PlyData, PlyElement

    data = PlyData.read(str(ply))
    unl = tmp_path / "unl" / "room.ply"
    unl.parent.mkdir()
    faces = np.empty(len(data["face"].data), dtype=[("vertex_indices", "i4", (4,))])
    faces["vertex_indices"] = np.stack(data["face"]["vertex_indices"])
    PlyData([data["vertex"], PlyElement.describe(faces, "face")]).write(str(unl))
    bad["unlabelled"] = ({"source": "mesh", "input_path": unl}, "field 'face.object_id': expected a per-face or per-vertex 'object_id'")
    zero = tmp_path / "zero" / "room.ply"
    zero.parent.mkdir()
    faces0 = data["face"].data.copy()
    faces0["object_id"] = 0
    PlyData([data["vertex"], PlyElement.describe(faces0, "face")]).write(str(zero))
    (zero.parent / "classes.json").write_text("{}")
    bad["all ids 0"] = ({"source": "mesh", "input_path": zero}, "an unlabelled mesh")
    nomap = tmp_path / "nomap" / "room.ply"
    nomap.parent.mkdir()
    nomap.write_bytes(ply.read_bytes())
    bad["no class map"] = ({"source": "mesh", "input_path": nomap}, "classes.json: missing class map for room.ply")
    part = tmp_path / "part" / "room.ply"
    part.parent.mkdir()
    part.write_bytes(ply.read_bytes())
    (part.parent / "classes.json").write_text(json.dumps({"1": "floor"}))
    bad["class map lacks ids"] = ({"source": "mesh", "input_path": part}, "expected a class name for every object id of room.ply")
    tex = tmp_path / "tex" / "room.ply"
    tex.parent.mkdir()
    v = data["vertex"].data
    vt = np.empty(len(v), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("s", "f4"), ("t", "f4")])
    vt["x"], vt["y"], vt["z"], vt["s"], vt["t"] = v["x"], v["y"], v["z"], 0.5, 0.5
    PlyData([PlyElement.describe(vt, "vertex"), data["face"]], comments=["TextureFile wood.png"]).write(str(tex))
    (tex.parent / "classes.json").write_text(json.dumps({str(k): c for k, c, *_ in ROOM} | {str(UNLISTED_ID): "box"}))
    bad["missing texture"] = ({"source": "mesh", "input_path": tex}, "field 'comment TextureFile': expected an existing texture image")
    gl = tmp_path / "gltf" / "room.gltf"
    gl.parent.mkdir()
    gl.write_text(json.dumps({"asset": {"version": "2.0"}, "images": [{"uri": "albedo.png"}], "buffers": []}))
    bad["gltf missing image"] = ({"source": "mesh", "input_path": gl}, "field 'images[0].uri': expected an existing texture image")
    obj = tmp_path / "room.obj"
    obj.write_text("v 0 0 0\n")
    bad["unsupported format"] = ({"source": "mesh", "input_path": obj}, "unsupported mesh format '.obj'")
    noinfo = tmp_path / "noinfo"
    (noinfo / "habitat").mkdir(parents=True)
    (noinfo / "habitat" / "mesh_semantic.ply").write_bytes(ply.read_bytes())
    bad["replica without info"] = ({"source": "replica", "input_path": noinfo}, "info_semantic.json: missing")
    bad["no input"] = ({"source": "replica"}, "needs --input PATH")
    bad["unknown source"] = ({"source": "blender", "input_path": ply}, "unknown scene source 'blender'")
    return bad


def test_bad_mesh_inputs_are_one_line_errors_and_leave_nothing(tmp_path: Path) -> None:
    for case, (kw, words) in corrupt(tmp_path).items():
        with pytest.raises((SchemaError, ValueError, FileNotFoundError)) as err:
            make(tmp_path, "bad", **kw)
        assert words in str(err.value) and "\n" not in str(err.value), (case, str(err.value))
        assert not (tmp_path / "ds/d/scenes/bad").exists(), case
        assert not list((tmp_path / "ds/d/scenes").glob(".bad*")) if (tmp_path / "ds/d/scenes").exists() else True


def test_cli_scene_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    import yaml

    Path("params.yaml").write_text(yaml.safe_dump(small_params()))
    glb = write_glb(tmp_path / "in" / "room.glb")
    runner = CliRunner()
    res = runner.invoke(app, ["generate", "scene", "--root", "ds", "--scene", "g", "--source", "mesh", "--input", str(glb), "--seed", "5"])
    assert res.exit_code == 0, res.output
    sc = read_scene(tmp_path / "ds/demo/scenes/g/scene.json")
    assert sc.seed == 5 and len(sc.objects) == len(ROOM)
    res = runner.invoke(app, ["generate", "scene", "--root", "ds", "--scene", "h", "--source", "mesh", "--input", str(tmp_path / "nope.ply")])
    assert res.exit_code == 2 and "nope.ply: missing" in res.output
    res = runner.invoke(app, ["generate", "scene", "--root", "ds", "--scene", "h", "--source", "habitat", "--input", str(glb)])
    assert res.exit_code == 2 and "habitat-sim is not installed" in res.output and "conda install habitat-sim" in res.output
    # A habitat scene's sequence asks for the habitat renderer, which names its install too.
    (tmp_path / "ds/demo/scenes/h").mkdir(parents=True)
    write_model(Scene(name="h", source="habitat", habitat_scene=str(glb), objects=[]), tmp_path / "ds/demo/scenes/h/scene.json")
    res = runner.invoke(app, ["generate", "sequence", "--root", "ds", "--scene", "h", "--condition", "baseline"])
    assert res.exit_code == 2 and "habitat-sim is not installed" in res.output


@pytest.mark.slow
def test_replica_scene_through_the_dvc_pipeline(tmp_path: Path) -> None:
    """A Replica scene listed in params `mesh_scene` runs scene → sequence → scene GT → close-ups → crops, preview; editing its input re-runs it."""
    from tests.conftest import BIN, init_pipeline_repo, run
    from tests.test_pipeline import stages_run

    params = small_params(["baseline", "nominal"])
    params.update(scenes=["office0"], scene={}, mesh_scene={"office0": {"source": "replica", "input": "datasets/demo/sources/office_0", "seed": 3}})
    repo = init_pipeline_repo(tmp_path / "repo", params)
    write_replica(repo / "datasets/demo/sources/office_0")
    res = run([str(BIN / "dvc"), "repro", "crops", "preview"], repo)
    assert stages_run(res.stdout) == {"mesh_scene@office0", "sequence@office0-baseline", "sequence@office0-nominal",
                                      "scene_gt@office0", "closeups@office0", "crops@office0", "preview@office0"}
    ds = DatasetPaths(repo / "datasets", "demo")
    assert read_scene(ds.scene_dir("office0") / "scene.json").source == "replica"
    assert (repo / "datasets/demo/previews/office0/topdown.png").is_file()
    vis = read_visibility(repo / "datasets/demo/build/office0/visibility.json")
    assert set(vis) <= set(TRUE) and len(vis) >= 3
    # What annotators will see: crops of the visible Replica objects, named by their ids.
    index = read_crop_index(repo / "datasets/demo/crops/office0/index.json")
    assert {r.object_id for r in index.objects} and {r.object_id for r in index.objects} <= set(vis)
    closeups = read_closeup_index(repo / "datasets/demo/closeups/office0/index.json")  # close-ups of a mesh scene
    assert {o.object_id for o in closeups.objects} == set(TRUE) and any(r.closeup_pixels for r in index.objects)
    # Recolour the chair in the source mesh: DVC sees the input change and rebuilds the scene and what depends on it.
    from plyfile import PlyData

    ply = repo / "datasets/demo/sources/office_0/habitat/mesh_semantic.ply"
    data = PlyData.read(str(ply), mmap=False)  # the file is rewritten below
    data["vertex"].data["red"][:] = 255 - data["vertex"].data["red"]
    data.write(str(ply))
    res = run([str(BIN / "dvc"), "repro", "scene_gt", "preview"], repo)
    assert "mesh_scene@office0" in stages_run(res.stdout) and "sequence@office0-baseline" in stages_run(res.stdout)
