"""The data contract: round trips, and one clear line naming file, field and expectation for bad files."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tiermap.formats.base import SchemaError, write_model
from tiermap.formats.benchbot import read_benchbot_gt
from tiermap.formats.labels import read_labels, write_labels
from tiermap.formats.openlex3d import (
    read_gt_categories,
    read_gt_cloud,
    read_prompt_list,
    read_query_mapping,
    write_gt_cloud,
    write_prompt_list,
)
from tiermap.formats.scene import Scene, read_scene
from tiermap.formats.sequence import read_camera, read_meta, read_traj, write_traj

ROT = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def scene_dict() -> dict:
    return {"name": "s", "source": "procedural", "seed": 3, "objects": [
        {"id": 1, "class_name": "mug", "obb": {"center": [0, 0, 0], "extent": [1, 1, 1], "R": ROT},
         "lexicon": {"synonyms": ["mug", "cup"]}}]}


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_scene_round_trip_is_byte_stable(tmp_path: Path) -> None:
    sc = Scene.model_validate(scene_dict())
    a = write_model(sc, tmp_path / "a.json").read_bytes()
    b = write_model(read_scene(tmp_path / "a.json"), tmp_path / "b.json").read_bytes()
    assert a == b
    assert read_scene(tmp_path / "a.json").objects[0].lexicon.synonyms == ["mug", "cup"]


@pytest.mark.parametrize("mutate, field, expected", [
    (lambda d: d["objects"][0].pop("class_name"), "objects.0.class_name", "field is missing"),
    (lambda d: d["objects"][0]["obb"].update(R=[[1, 1, 0], [0, 1, 0], [0, 0, 1]]), "objects.0.obb.R", "proper rotation"),
    (lambda d: d["objects"][0]["obb"].update(center=[0, 0]), "objects.0.obb.center", "at least 3"),
    (lambda d: d["objects"].append(dict(d["objects"][0])), "<root>", "unique object ids"),
    (lambda d: d.update(source="blender"), "source", "'procedural'"),
    (lambda d: d["objects"][0].update(id=70000), "objects.0.id", "less than or equal to 65535"),
])
def test_bad_scene_names_file_and_field(tmp_path: Path, mutate, field: str, expected: str) -> None:
    d = scene_dict()
    mutate(d)
    path = write(tmp_path / "scene.json", d)
    with pytest.raises(SchemaError) as e:
        read_scene(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and f"field '{field}'" in msg and expected in msg, msg


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="expected an existing file"):
        read_camera(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(SchemaError, match=r"bad.json: field '<file>': expected valid JSON"):
        read_meta(tmp_path / "bad.json")


def test_camera_rejects_nan_and_negative(tmp_path: Path) -> None:
    good = {"w": 4, "h": 3, "fx": 2.0, "fy": 2.0, "cx": 2.0, "cy": 1.5, "depth_scale": 1000.0}
    assert read_camera(write(tmp_path / "c.json", good)).K()[0, 2] == 2.0
    with pytest.raises(SchemaError, match="field 'fx'"):
        read_camera(write(tmp_path / "c.json", {**good, "fx": -1}))
    (tmp_path / "n.json").write_text(json.dumps({**good, "cy": 1.0}).replace("1.0", "NaN"))
    with pytest.raises(SchemaError, match="field 'cy'"):
        read_camera(tmp_path / "n.json")


def test_traj_round_trip_and_errors(tmp_path: Path) -> None:
    poses = np.stack([np.eye(4)] * 3)
    poses[1, :3, 3] = [1.5, -2.0, 0.25]
    write_traj(tmp_path / "traj.txt", poses)
    np.testing.assert_allclose(read_traj(tmp_path / "traj.txt"), poses)
    (tmp_path / "t2.txt").write_text("1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\n1 0 0 0\n")
    with pytest.raises(SchemaError, match=r"t2.txt: field 'line 2': expected 16 finite numbers"):
        read_traj(tmp_path / "t2.txt")
    (tmp_path / "t3.txt").write_text("2 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\n")
    with pytest.raises(SchemaError, match="rigid transform"):
        read_traj(tmp_path / "t3.txt")


def gt_dict() -> dict:
    return {"dataset": {"samples": [{"name": "s_mug_3", "object_id": 3, "labels": {"image_attributes": {
        "synonyms": ["mug"], "depictions": ["heart"], "vis_sim": ["glass"], "clutter": ["4"]}, "flag": "ambiguous"}}]}}


def test_gt_categories_official_form(tmp_path: Path) -> None:
    gt = read_gt_categories(write(tmp_path / "g.json", gt_dict()))
    assert gt.by_id()[3].labels.flag == "ambiguous"
    out = json.loads(write_model(gt, tmp_path / "o.json").read_text())
    assert out == gt_dict()
    bad = gt_dict()
    bad["dataset"]["samples"][0]["labels"]["image_attributes"]["clutter"] = [4]
    with pytest.raises(SchemaError, match=r"image_attributes.clutter.0'"):
        read_gt_categories(write(tmp_path / "b.json", bad))
    bad = gt_dict()
    bad["dataset"]["samples"][0]["labels"]["flag"] = "unsure"
    with pytest.raises(SchemaError, match=r"labels.flag': expected Input should be 'ambiguous'"):
        read_gt_categories(write(tmp_path / "b.json", bad))


def test_query_mapping_and_benchbot(tmp_path: Path) -> None:
    q = read_query_mapping(write(tmp_path / "q.json", {"level0": {"chair": [12, 15]}}))
    assert q.level0 == {"chair": [12, 15]} and q.level1 is None
    with pytest.raises(SchemaError, match="level2"):
        read_query_mapping(write(tmp_path / "q.json", {"level2": {}}))
    bb = {"environment": {"name": "room", "variant": 1, "object_labels": []}, "format": {"name": "object_map_ground_truth"},
          "ground_truth": {"class_list": ["cup", "background"], "synonyms": {"mug": "cup"},
                           "objects": [{"class": "mug", "centroid": [0, 0, 0], "extent": [1, 1, 1]}]}}
    g = read_benchbot_gt(write(tmp_path / "o.json", bb))
    assert g.ground_truth.objects[0].class_ == "mug"
    assert json.loads(write_model(g, tmp_path / "o2.json").read_text())["ground_truth"]["objects"][0]["class"] == "mug"
    bb["ground_truth"]["objects"][0]["class"] = "sofa"
    with pytest.raises(SchemaError, match="unknown: \\['sofa'\\]"):
        read_benchbot_gt(write(tmp_path / "o.json", bb))


def test_prompt_list(tmp_path: Path) -> None:
    write_prompt_list(tmp_path / "p.txt", ["sofa", "chair", "sofa", " "])
    assert (tmp_path / "p.txt").read_text() == "chair\nsofa\n"
    (tmp_path / "b.txt").write_text("chair\n\nsofa\n")
    with pytest.raises(SchemaError, match="b.txt: field 'line 2': expected a non-blank prompt"):
        read_prompt_list(tmp_path / "b.txt")


def test_labels_table(tmp_path: Path) -> None:
    df = pd.DataFrame([{"scene": "s", "object_id": 3, "annotator": "a1", "category": "synonyms", "label": "mug", "raw_label": "Mug"}])
    write_labels(tmp_path / "l.parquet", df)
    # A table without provenance reads back with annotation id 0 and empty times; one with it keeps them.
    assert read_labels(tmp_path / "l.parquet").to_dict("records") == [{**df.iloc[0].to_dict(), "annotation_id": 0,
                                                                              "created_at": "", "updated_at": ""}]
    prov = df.assign(annotation_id=12, created_at="2026-01-01T00:00:00Z", updated_at="2026-01-02T00:00:00Z")
    write_labels(tmp_path / "p.parquet", prov)
    assert read_labels(tmp_path / "p.parquet").to_dict("records") == prov.to_dict("records")
    with pytest.raises(SchemaError, match=r"field 'annotation_id': expected integer annotation ids"):
        write_labels(tmp_path / "l4.parquet", df.assign(annotation_id="x"))
    with pytest.raises(SchemaError, match=r"l2.parquet: field 'category\[0\]': expected one of"):
        write_labels(tmp_path / "l2.parquet", df.assign(category="hypernym"))
    assert not (tmp_path / "l2.parquet").exists()
    with pytest.raises(SchemaError, match=r"field 'label\[0\]': expected text, got 5"):
        write_labels(tmp_path / "l3.parquet", df.assign(label=5))
    (tmp_path / "x.parquet").write_bytes(b"garbage")
    with pytest.raises(SchemaError, match="expected a parquet table"):
        read_labels(tmp_path / "x.parquet")


def test_gt_cloud_ply_and_npy(tmp_path: Path) -> None:
    pts = np.random.default_rng(0).random((10, 3))
    ids = np.arange(10) % 3
    write_gt_cloud(tmp_path / "c.ply", pts, ids)
    p, i = read_gt_cloud(tmp_path / "c.ply")
    np.testing.assert_allclose(p, pts, atol=1e-6)
    assert i.tolist() == ids.tolist()
    np.save(tmp_path / "p.npy", pts)
    np.save(tmp_path / "i.npy", ids[:5])
    with pytest.raises(SchemaError, match="i.npy: field 'ids': expected shape \\(10,\\)"):
        read_gt_cloud(tmp_path / "p.npy", tmp_path / "i.npy")
    from plyfile import PlyData, PlyElement

    arr = np.zeros(3, dtype=[("x", "f4"), ("y", "f4"), ("z", "f4")])
    PlyData([PlyElement.describe(arr, "vertex")]).write(str(tmp_path / "noid.ply"))
    with pytest.raises(SchemaError, match="noid.ply: field 'vertex.object_id'"):
        read_gt_cloud(tmp_path / "noid.ply")


# ---------------------------------------------------------------- params.yaml
def _shipped_params() -> dict:
    import yaml

    return yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text())


@pytest.mark.parametrize(("edit", "field", "expected"), [
    (lambda d: d.pop("render"), "render", "field is missing"),
    (lambda d: d["trajectory"].pop("fps"), "trajectory.fps", "field is missing"),
    (lambda d: d.update(rendr={}), "rendr", "no such field"),
    (lambda d: d["render"].update(width="wide"), "render.width", "integer"),
    (lambda d: d["trajectory"].update(planner="zigzag"), "trajectory.planner", "'coverage' or 'random'"),
    (lambda d: d["lighting"].pop("velocity"), "lighting.velocity", "a lighting block for every condition"),
    (lambda d: d.update(reference_condition="dusk"), "reference_condition", "one of conditions"),
])
def test_params_refused_with_one_line(tmp_path: Path, edit, field: str, expected: str) -> None:
    """A broken params.yaml names the file, the block's field and what was expected (not a KeyError deep in a stage)."""
    import yaml

    from tiermap.formats.params import read_params

    data = _shipped_params()
    edit(data)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SchemaError) as err:
        read_params(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: field '{field}'") and expected in msg and "\n" not in msg


def test_shipped_params_are_valid_and_handed_on_unchanged() -> None:
    """The repository's params.yaml passes, and stages get the mapping exactly as written (so outputs stay byte-identical)."""
    from tiermap.app.stages import load_params
    from tiermap.formats.params import read_params

    path = Path(__file__).resolve().parents[1] / "params.yaml"
    params, raw = read_params(path)
    assert raw == _shipped_params() and load_params(path) == raw
    assert params.render.width == raw["render"]["width"] and params.trajectory.fps == raw["trajectory"]["fps"]
    assert set(params.conditions) <= set(params.lighting) and params.reference_condition in params.conditions


# ---------------------------------------------------------------- sequence frames
def test_frame_readers_check_shape_and_dtype(tmp_path: Path) -> None:
    """Depth, RGB and instance frames are refused with one line when their size or pixel type is not the camera's."""
    from PIL import Image

    from tiermap.formats.sequence import CameraParams, read_depth, read_instance, read_rgb, write_depth, write_instance, write_rgb

    cam = CameraParams(w=8, h=6, fx=4, fy=4, cx=3.5, cy=2.5, depth_scale=1000)
    depth = np.linspace(0.5, 3.0, 48).reshape(6, 8)
    write_depth(tmp_path / "depth.png", depth, cam)
    got = read_depth(tmp_path / "depth.png", cam)
    assert got.dtype == np.float32 and np.abs(got - depth).max() <= 0.5 / cam.depth_scale + 1e-6
    ids = (np.arange(48).reshape(6, 8) * 1000).astype(np.uint16)
    write_instance(tmp_path / "ids.png", ids)
    assert np.array_equal(read_instance(tmp_path / "ids.png", (6, 8)), ids)
    rgb = np.random.default_rng(0).integers(0, 255, (6, 8, 3), dtype=np.uint8)
    write_rgb(tmp_path / "rgb.png", rgb)
    assert np.array_equal(read_rgb(tmp_path / "rgb.png", (6, 8)), rgb)
    Image.fromarray(np.zeros((5, 8), np.uint16)).save(tmp_path / "small.png")
    Image.fromarray(rgb).save(tmp_path / "colour.png")
    (tmp_path / "broken.png").write_bytes(b"not a png")
    for reader, path, field in [(lambda p: read_depth(p, cam), "small.png", "shape"), (lambda p: read_depth(p, cam), "colour.png", "dtype"),
                                (lambda p: read_instance(p, (6, 8)), "colour.png", "shape"), (lambda p: read_rgb(p, (6, 8)), "small.png", "shape"),
                                (lambda p: read_rgb(p, (6, 8)), "broken.png", "<file>"), (lambda p: read_instance(p, (6, 8)), "gone.png", "<file>")]:
        with pytest.raises(SchemaError) as err:
            reader(tmp_path / path)
        assert str(err.value).startswith(f"{tmp_path / path}: field '{field}'")


def test_visibility_round_trip_and_bad_entry(tmp_path: Path) -> None:
    from tiermap.formats.crops import ObjectVisibility, read_visibility, write_visibility

    path = write_visibility(tmp_path / "visibility.json", {12: ObjectVisibility(pixels=40, frames=2), 3: ObjectVisibility(pixels=7, frames=0)})
    assert list(json.loads(path.read_text())) == ["3", "12"]  # ids ascending, as strings
    assert read_visibility(path) == {3: ObjectVisibility(pixels=7, frames=0), 12: ObjectVisibility(pixels=40, frames=2)}
    write(path, {"3": {"pixels": -1, "frames": 0}})
    with pytest.raises(SchemaError, match=r"visibility\.json.*3\.pixels"):
        read_visibility(path)


def test_report_tables_keep_their_columns(tmp_path: Path) -> None:
    from tiermap.formats.labels import FLAGGED_COLUMNS, write_table_csv

    df = pd.DataFrame([["s", 1, "a", "synonyms", "<b>", "<b>", "markup"]], columns=FLAGGED_COLUMNS)
    path = write_table_csv(tmp_path / "flagged.csv", df, FLAGGED_COLUMNS)
    assert pd.read_csv(path).columns.tolist() == FLAGGED_COLUMNS and pd.read_csv(path)["reason"].tolist() == ["markup"]
    with pytest.raises(SchemaError, match=r"flagged\.csv.*<columns>"):
        write_table_csv(tmp_path / "flagged.csv", df.drop(columns="reason"), FLAGGED_COLUMNS)
    assert pd.read_csv(path)["reason"].tolist() == ["markup"]  # the refused write left the old file


def test_dvc_artifact_added_once_keeping_comments(tmp_path: Path) -> None:
    from tiermap.formats.params import add_dvc_artifact

    path = tmp_path / "dvc.yaml"
    path.write_text("# the pipeline\nstages:\n  a:\n    cmd: echo 'x'  # quoted\n")
    entry = {"path": "datasets/d/gt", "type": "dataset"}
    assert add_dvc_artifact(path, "d-gt", entry) is True
    text = path.read_text()
    assert "# the pipeline" in text and "echo 'x'  # quoted" in text and "d-gt:" in text
    assert add_dvc_artifact(path, "d-gt", {"path": "elsewhere"}) is False and path.read_text() == text
    path.write_text("stages: [unclosed\n")
    with pytest.raises(SchemaError, match=r"dvc\.yaml: field 'line 2, column 1': expected valid YAML"):
        add_dvc_artifact(path, "d-gt", entry)


def test_raw_export_kept_verbatim_even_when_malformed(tmp_path: Path) -> None:
    from tiermap.formats.labelstudio import decode_ls_export, write_raw_export

    raw = b'[{"id": 1, "data": '  # a truncated export
    path = write_raw_export(tmp_path / "seat-export.json", raw)
    assert path.read_bytes() == raw
    with pytest.raises(SchemaError, match=r"seat-export\.json.*JSON list"):
        decode_ls_export(path.read_bytes(), path)
