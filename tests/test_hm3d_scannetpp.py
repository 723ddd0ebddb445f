"""HM3D-Semantics v0.2 and ScanNet++ scene sources: ids, classes, rooms, exact geometry, bad input, and the pipeline."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image
from typer.testing import CliRunner

from generation.scannetpp import vertex_object_ids
from generation.sequence import render_sequence
from tests.conftest import REPO, small_params
from tests.scan_fixtures import (
    HM3D_ID,
    HM3D_OBJECTS,
    SCANNETPP_OBJECTS,
    hm3d_boxes,
    scannetpp_mesh,
    write_hm3d,
    write_scannetpp,
)
from tests.test_pipeline import backproject
from tiermap.app.cli import app
from tiermap.app.stages import (
    build_dir,
    make_closeups,
    make_crops,
    make_scene,
    make_scene_gt,
)
from tiermap.formats.base import SchemaError
from tiermap.formats.crops import read_crop_index
from tiermap.formats.hm3d import read_semantic_txt
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.openlex3d import read_gt_cloud
from tiermap.formats.scannetpp import SegmentsAnno
from tiermap.formats.scene import Scene, read_scene, read_scene_mesh
from tiermap.formats.sequence import read_meta

HM3D_DIR = f"00800-{HM3D_ID}"


def make(tmp_path: Path, name: str, **kw) -> Scene:  # type: ignore[no-untyped-def]
    ds = DatasetPaths(tmp_path / "ds", "d")
    return read_scene(make_scene(ds, name, small_params(), **kw))


def corners_z_up(center: tuple[float, ...], extent: tuple[float, ...]) -> np.ndarray:
    """A box's 8 corners in tiermap's z-up world, computed here from centre and extent (sorted rows)."""
    c, h = np.asarray(center), np.asarray(extent) / 2
    v = np.array([[c[0] + sx * h[0], c[1] + sy * h[1], c[2] + sz * h[2]] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    return v[np.lexsort(v.T[::-1])]


def object_vertices(scene_dir: Path) -> dict[int, np.ndarray]:
    """The distinct vertices of each object id's faces in the written mesh.ply (sorted rows)."""
    mesh = read_scene_mesh(scene_dir / "mesh.ply")
    out = {}
    for oid in np.unique(mesh.object_ids):
        v = np.unique(np.round(mesh.vertices[np.unique(mesh.triangles[mesh.object_ids == oid])], 5), axis=0)
        out[int(oid)] = v[np.lexsort(v.T[::-1])]
    return out


def test_hm3d_scene_objects_regions_and_exact_geometry(tmp_path: Path) -> None:
    src = write_hm3d(tmp_path / "hm3d" / "minival" / HM3D_DIR)
    sc = make(tmp_path, "tee", source="hm3d", seed=2, input_path=src)
    assert sc.source == "hm3d" and sc.seed == 2 and sc.geometry == "mesh.ply"
    assert {o.id: o.class_name for o in sc.objects} == {oid: cat for oid, cat, *_ in HM3D_OBJECTS}
    assert {o.id: o.room for o in sc.objects} == {oid: f"region_{reg}" for oid, _, reg, *_ in HM3D_OBJECTS}
    # Regions are rooms spanning their objects (floor to ceiling), kinds guessed from the categories.
    assert [(r.name, r.kind) for r in sc.rooms] == [("region_0", "dining room"), ("region_1", "bedroom")]
    np.testing.assert_allclose([sc.rooms[0].min, sc.rooms[0].max], [[0, 0, -0.02], [2.5, 3.0, 2.52]], atol=1e-5)
    np.testing.assert_allclose([sc.rooms[1].min, sc.rooms[1].max], [[2.5, 0, -0.02], [5.0, 3.0, 2.52]], atol=1e-5)
    # Geometry: each object's vertices are exactly its box's corners in z-up; the black walls are id 0.
    verts = object_vertices(tmp_path / "ds/d/scenes/tee")
    assert set(verts) == {0} | {oid for oid, *_ in HM3D_OBJECTS}
    for oid, _, _, c, e, _, _ in HM3D_OBJECTS:
        np.testing.assert_allclose(verts[oid], corners_z_up(c, e), atol=1e-5)
    mesh = read_scene_mesh(tmp_path / "ds/d/scenes/tee/mesh.ply")
    assert (mesh.object_ids == 0).sum() == 4 * 12
    # Colours come from the textured GLB's texture.
    for oid, _, _, _, _, _, tex in HM3D_OBJECTS:
        np.testing.assert_allclose(sc.object(oid).appearance.color, np.asarray(tex) / 255, atol=0.002)


def test_hm3d_colours_by_nearest_point_when_the_meshes_differ(tmp_path: Path) -> None:
    src = write_hm3d(tmp_path / HM3D_DIR, reorder_textured=True)  # same surfaces, other vertex order
    sc = make(tmp_path, "tee", source="hm3d", input_path=src)
    for oid, cat, _, _, _, _, tex in HM3D_OBJECTS:
        if cat not in ("floor", "ceiling"):  # their corners touch the walls'
            np.testing.assert_allclose(sc.object(oid).appearance.color, np.asarray(tex) / 255, atol=0.002)


def test_hm3d_semantic_mesh_coloured_by_a_texture(tmp_path: Path) -> None:
    src = write_hm3d(tmp_path / HM3D_DIR, semantic_texture=True)
    sc = make(tmp_path, "tee", source="hm3d", input_path=src)
    assert {o.id: o.class_name for o in sc.objects} == {oid: cat for oid, cat, *_ in HM3D_OBJECTS}
    verts = object_vertices(tmp_path / "ds/d/scenes/tee")
    for oid, _, _, c, e, _, _ in HM3D_OBJECTS:
        np.testing.assert_allclose(verts[oid], corners_z_up(c, e), atol=1e-5)
    bad = write_hm3d(tmp_path / "bad" / HM3D_DIR, semantic_texture=True, extra_colour=0x123456)
    with pytest.raises(SchemaError, match="semantic.txt: field 'hex_colour'.*got '123456'"):
        make(tmp_path, "bad", source="hm3d", input_path=bad)


def test_semantic_txt_rows_as_habitat_reads_them(tmp_path: Path) -> None:
    p = tmp_path / "x.semantic.txt"
    p.write_text('HM3D Semantic Annotations\n1,8A3B2C,"wall",0\n\n2,ffffff,"shelf, with books",3\n')
    rows = read_semantic_txt(p)
    assert [(r.id, r.hex, r.category, r.region) for r in rows] == [(1, "8a3b2c", "wall", 0), (2, "ffffff", "shelf, with books", 3)]


def test_scannetpp_scene_objects_and_exact_geometry(tmp_path: Path) -> None:
    src = write_scannetpp(tmp_path / "scannetpp" / "data" / "0a76e06478")
    sc = make(tmp_path, "snpp", source="scannetpp", seed=4, input_path=src)
    assert sc.source == "scannetpp" and sc.seed == 4
    assert {o.id: o.class_name for o in sc.objects} == {oid: lab for oid, lab, *_ in SCANNETPP_OBJECTS}
    assert [r.name for r in sc.rooms] == ["room0"]
    verts = object_vertices(tmp_path / "ds/d/scenes/snpp")
    assert set(verts) == {0, 1, 2, 5}  # walls and ceiling are in no segGroup: unannotated
    for oid, _, c, e, col, _ in SCANNETPP_OBJECTS:
        np.testing.assert_allclose(verts[oid], corners_z_up(c, e), atol=1e-5)
        np.testing.assert_allclose(sc.object(oid).appearance.color, np.asarray(col) / 255, atol=0.002)
    # The scans/ folder and the mesh file itself are accepted as --input too.
    for alt in (src / "scans", src / "scans" / "mesh_aligned_0.05.ply"):
        assert make(tmp_path, "snpp", source="scannetpp", seed=4, input_path=alt) == sc


def test_scannetpp_vertex_ids_follow_the_toolbox() -> None:
    """objectId per vertex; overlaps: smallest group wins, ties the earlier; at most three groups; unannotated 0."""
    seg = np.array([10, 10, 11, 11, 11, 12, 13, 13, 14])
    groups = [{"objectId": 7, "label": "big", "segments": [10, 11, 12]},       # 6 vertices
              {"objectId": 3, "label": "small", "segments": [11]},            # 3 vertices: wins on segment 11
              {"objectId": 4, "label": "tie a", "segments": [13]},            # 2 vertices
              {"objectId": 5, "label": "tie b", "segments": [13]},            # 2 vertices: loses the tie
              {"objectId": 6, "label": "third", "segments": [11, 13]},        # 5: third label on 11 and 13
              {"objectId": 9, "label": "fourth", "segments": [11]}]           # a fourth label: ignored on 11
    ids = vertex_object_ids(seg, SegmentsAnno.model_validate({"segGroups": groups}))
    assert ids.tolist() == [7, 7, 3, 3, 3, 7, 4, 4, 0]
    groups[5]["segments"] = [11, 12]  # now it reaches segment 12 (its second label), 1 vertex: the smallest there
    ids = vertex_object_ids(seg, SegmentsAnno.model_validate({"segGroups": groups}))
    assert ids.tolist() == [7, 7, 3, 3, 3, 9, 4, 4, 0]


def bad_inputs(tmp_path: Path) -> dict[str, tuple[dict, str]]:
    """Bad HM3D / ScanNet++ inputs and the words their one-line error must contain."""
    bad: dict[str, tuple[dict, str]] = {}
    for k, suffix in enumerate((".glb", ".semantic.glb", ".semantic.txt")):
        d = write_hm3d(tmp_path / f"h{k}" / HM3D_DIR)
        (d / f"{HM3D_ID}{suffix}").unlink()
        bad[f"no {suffix}"] = ({"source": "hm3d", "input_path": d}, f"{HM3D_ID}{suffix}: missing, expected HM3D's")
    d = write_hm3d(tmp_path / "colour" / HM3D_DIR, extra_colour=0x123456)
    bad["colour not in the table"] = ({"source": "hm3d", "input_path": d},
                                      f"{HM3D_ID}.semantic.txt: field 'hex_colour': expected a row for every colour of {HM3D_ID}.semantic.glb")
    d = write_hm3d(tmp_path / "row" / HM3D_DIR, rows=['1,1F77B4,"floor",0', '3,2CA02C,dining table,0'])
    bad["malformed row"] = ({"source": "hm3d", "input_path": d}, "semantic.txt: field 'line 3': expected a row object_id,hex_colour")
    d = write_hm3d(tmp_path / "hdr" / HM3D_DIR)
    txt = d / f"{HM3D_ID}.semantic.txt"
    txt.write_text(txt.read_text().split("\n", 1)[1])
    bad["no header"] = ({"source": "hm3d", "input_path": d}, "semantic.txt: field 'line 1': expected the header 'HM3D Semantic Annotations'")
    d = write_hm3d(tmp_path / "dup" / HM3D_DIR, rows=['1,1F77B4,"floor",0', '1,2CA02C,"table",0'])
    bad["duplicate id"] = ({"source": "hm3d", "input_path": d}, "field 'line 3': expected a unique object id (also on line 2)")
    for k, name in enumerate(("mesh_aligned_0.05.ply", "segments.json", "segments_anno.json")):
        d = write_scannetpp(tmp_path / f"s{k}" / "scene")
        (d / "scans" / name).unlink()
        bad[f"no {name}"] = ({"source": "scannetpp", "input_path": d}, f"scans/{name}: missing, expected ScanNet++'s")
    n = len(scannetpp_mesh()[0])
    d = write_scannetpp(tmp_path / "short" / "scene", seg_indices=list(range(n - 1)))
    bad["segIndices too short"] = ({"source": "scannetpp", "input_path": d},
                                   f"segments.json: field 'segIndices': expected one segment id per vertex of mesh_aligned_0.05.ply ({n}), got {n - 1}")
    d = write_scannetpp(tmp_path / "neg" / "scene", seg_indices=[-1] * n)
    bad["negative segment id"] = ({"source": "scannetpp", "input_path": d}, "segments.json: field 'segIndices.0'")
    d = write_scannetpp(tmp_path / "range" / "scene", groups=[{"objectId": 1, "label": "floor", "segments": [40, 4000]}])
    bad["segment out of range"] = ({"source": "scannetpp", "input_path": d},
                                   "segments_anno.json: field 'segGroups[0].segments': expected segment ids that segments.json's segIndices uses, got 4000")
    d = write_scannetpp(tmp_path / "zero" / "scene", groups=[{"objectId": 0, "label": "floor", "segments": [40]}])
    bad["object id 0"] = ({"source": "scannetpp", "input_path": d}, "field 'segGroups[0].objectId': expected an id in 1..65535")
    d = write_scannetpp(tmp_path / "nolabel" / "scene", groups=[{"objectId": 1, "segments": [40]}])
    bad["no label"] = ({"source": "scannetpp", "input_path": d}, "segments_anno.json: field 'segGroups.0.label': expected a value")
    return bad


def test_bad_inputs_are_one_line_errors_and_leave_nothing(tmp_path: Path) -> None:
    for case, (kw, words) in bad_inputs(tmp_path).items():
        with pytest.raises((SchemaError, ValueError)) as err:
            make(tmp_path, "bad", **kw)
        assert words in str(err.value) and "\n" not in str(err.value), (case, str(err.value))
        assert not (tmp_path / "ds/d/scenes/bad").exists(), case


def test_cli_generates_hm3d_and_scannetpp_scenes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    params = small_params()
    params["mesh_scene"] = {"snpp": {"source": "scannetpp", "input": str(write_scannetpp(tmp_path / "in" / "0a76e06478")), "seed": 1}}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    runner = CliRunner()
    hm = write_hm3d(tmp_path / "in" / HM3D_DIR)
    res = runner.invoke(app, ["generate", "scene", "--root", "ds", "--scene", "tee", "--source", "hm3d", "--input", str(hm)])
    assert res.exit_code == 0, res.output
    assert read_scene(tmp_path / "ds/demo/scenes/tee/scene.json").source == "hm3d"
    res = runner.invoke(app, ["generate", "scene", "--root", "ds", "--scene", "snpp"])  # from params.yaml mesh_scene
    assert res.exit_code == 0, res.output
    assert read_scene(tmp_path / "ds/demo/scenes/snpp/scene.json").seed == 1
    (hm / f"{HM3D_ID}.semantic.txt").unlink()
    res = runner.invoke(app, ["generate", "scene", "--root", "ds", "--scene", "x", "--source", "hm3d", "--input", str(hm)])
    assert res.exit_code == 2 and f"{HM3D_ID}.semantic.txt: missing" in res.output


def source_triangles(source: str) -> tuple[np.ndarray, np.ndarray]:
    """The fixture's surfaces in z-up, from its own definition (HM3D boxes built z-up before the y-up export)."""
    if source == "scannetpp":
        v, t, _, _ = scannetpp_mesh()
        return v, t
    boxes = hm3d_boxes()
    return np.concatenate([b[0] for b in boxes]), np.concatenate([b[1] + 8 * k for k, b in enumerate(boxes)])


@pytest.fixture(scope="module", params=["hm3d", "scannetpp"])
def pipeline(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, DatasetPaths, dict, Path]:
    """scene → sequences under all five conditions of params.yaml (small) → scene GT → close-ups → crops."""
    source = request.param
    tmp = tmp_path_factory.mktemp(source)
    src = write_hm3d(tmp / HM3D_DIR) if source == "hm3d" else write_scannetpp(tmp / "0a76e06478")
    conditions = yaml.safe_load((REPO / "params.yaml").read_text())["conditions"]
    params = small_params(conditions)
    ds = DatasetPaths(tmp / "ds", "d")
    make_scene(ds, "s", params, source=source, seed=1, input_path=src)
    for cond in conditions:
        render_sequence(ds.scene_dir("s") / "scene.json", cond, params, ds.sequence_dir("s", cond))
    make_scene_gt(ds, "s", params, out=build_dir(ds, "s"))
    make_closeups(ds, "s", params)
    make_crops(ds, "s", params)
    return source, ds, params, tmp


def test_pipeline_sequences_gt_and_crops(pipeline: tuple[str, DatasetPaths, dict, Path]) -> None:
    _, ds, params, _ = pipeline
    sc = read_scene(ds.scene_dir("s") / "scene.json")
    ids = {o.id for o in sc.objects}
    assert len(params["conditions"]) == 5
    first = ds.sequence_dir("s", params["reference_condition"])
    n = read_meta(first / "meta.json").frame_count
    assert n >= 3
    for cond in params["conditions"]:
        s = ds.sequence_dir("s", cond)
        assert read_meta(s / "meta.json").condition == cond
        if cond != "velocity":  # one path for all; velocity samples it faster
            assert np.array_equal(np.asarray(Image.open(s / "instance/000000.png")), np.asarray(Image.open(first / "instance/000000.png")))
    _, gt_ids = read_gt_cloud(build_dir(ds, "s") / "gt_cloud.ply")
    assert set(np.unique(gt_ids)) == ids  # unannotated surfaces are not in the GT cloud
    index = read_crop_index(ds.scene_folder("crops", "s") / "index.json")
    cropped = {r.object_id for r in index.objects}
    assert cropped and cropped <= ids
    assert {r.class_name for r in index.objects} <= {o.class_name for o in sc.objects}


def test_depth_lands_on_the_source_mesh(pipeline: tuple[str, DatasetPaths, dict, Path]) -> None:
    """320×240 depth back-projected with the written intrinsics and poses lies on the source surfaces (1 mm median)."""
    import open3d as o3d

    source, ds, params, tmp = pipeline
    p = dict(params, render=dict(params["render"], width=320, height=240))
    out = tmp / "big"
    render_sequence(ds.scene_dir("s") / "scene.json", "baseline", p, out, max_frames=2)
    v, t = source_triangles(source)
    rc = o3d.t.geometry.RaycastingScene()
    rc.add_triangles(o3d.core.Tensor(v.astype(np.float32)), o3d.core.Tensor(t.astype(np.uint32)))
    for i in range(2):
        pts, _ = backproject(out, i)
        assert len(pts) > 0.5 * 320 * 240
        dist = rc.compute_distance(o3d.core.Tensor(pts.astype(np.float32))).numpy()
        assert np.median(dist) < 0.001 and np.percentile(dist, 95) < 0.003, (source, np.median(dist), np.percentile(dist, 95))

