"""Close-up views: exact geometry on a hand-built room, determinism, crops cut from close-ups, the demo scene's pixel counts."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from generation.closeup import CloseupParams, Planner, write_closeups
from generation.geometry import scene_geometry
from tiermap.formats.base import SchemaError, dump_json, write_model
from tiermap.formats.crops import (
    read_closeup_camera,
    read_closeup_index,
    read_crop_index,
    read_crop_views,
)
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.scene import Scene, SceneObject, read_scene

REPO = Path(__file__).resolve().parents[1]
EYE = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
LIGHTING = {"baseline": {"ambient": 0.3, "lights": [{"name": "lamp", "type": "point", "at": [0.5, 0.5, 0.9], "intensity": 1.5}]}}


def box(oid: int, cls: str, center: tuple[float, float, float], extent: tuple[float, float, float]) -> dict:
    return {"id": oid, "class_name": cls, "obb": {"center": list(center), "extent": list(extent), "R": EYE}}


def tiny_scene(root: Path, gap: float = 0.05) -> Path:
    """A closed 4 × 4 × 2.6 m room; a 0.4 m cube (id 7) in the middle; a tall occluder (8) `gap` m east of it; a cabinet (9) to the west."""
    objs = [box(1, "floor", (2, 2, -0.025), (4, 4, 0.05)), box(2, "ceiling", (2, 2, 2.625), (4, 4, 0.05)),
            box(3, "wall", (2, -0.025, 1.3), (4, 0.05, 2.6)), box(4, "wall", (2, 4.025, 1.3), (4, 0.05, 2.6)),
            box(5, "wall", (-0.025, 2, 1.3), (0.05, 4, 2.6)), box(6, "wall", (4.025, 2, 1.3), (0.05, 4, 2.6)),
            box(7, "cube", (2, 2, 0.6), (0.4, 0.4, 0.4)),
            box(8, "screen", (2.2 + gap + 0.05, 2, 1.0), (0.1, 1.6, 2.0)),
            box(9, "cabinet", (0.6, 2, 0.9), (1.0, 3.0, 1.8))]
    scene = Scene.model_validate({"name": "tiny", "source": "procedural", "seed": 1, "objects": objs,
                                         "rooms": [{"name": "r", "kind": "office", "min": [0, 0, 0], "max": [4, 4, 2.6]}]})
    root.mkdir(parents=True, exist_ok=True)
    return write_model(scene, root / "scene.json")


def inside_box(p: np.ndarray, o: SceneObject) -> bool:
    local = (p - np.asarray(o.obb.center)) @ np.asarray(o.obb.R)
    return bool((np.abs(local) < np.asarray(o.obb.extent) / 2).all())


def test_occluded_candidate_rejected_and_chosen_view_unoccluded(tmp_path: Path) -> None:
    from generation.render_raycast import RaycastRenderer

    scene_json = tiny_scene(tmp_path / "scene")
    cp = CloseupParams(size=64, score_size=32)
    idx = write_closeups(scene_json, "baseline", LIGHTING, tmp_path / "out", cp, "raycast", progress=False)
    scene = read_scene(scene_json)
    cube = idx.by_id()[7]
    east = [v for v in cube.views if v.azimuth_deg == 0]
    # The screen hugs the cube's east side (5 cm: no room for a camera in between): every eastern candidate is hidden.
    assert east and all(v.status == "occluded" and v.visible_fraction < cp.min_visible for v in east)
    chosen = [v for v in cube.views if v.status == "chosen"]
    assert len(chosen) == 1 and chosen[0].visible_fraction == 1.0 and chosen[0].azimuth_deg != 0
    cam = read_closeup_camera(tmp_path / "out" / str(chosen[0].camera))
    pose = np.asarray(cam.pose)
    # Exact check: the cube alone, cast from the chosen pose, covers exactly the pixels the scene's instance image gives it.
    alone = RaycastRenderer([g for g in scene_geometry(scene, scene_json.parent) if g.id == 7], cam.intrinsics)
    alone.shades_with_rays = False
    inst = np.asarray(Image.open(tmp_path / "out" / str(chosen[0].instance)))
    assert inst.dtype == np.uint16 and inst.shape == (64, 64)
    assert (alone.geometry(pose)["ids"] == 7).sum() == (inst == 7).sum() == chosen[0].pixels > 0.2 * 64 * 64
    # No chosen camera of any object stands inside an object's box or outside the room.
    for o in idx.objects:
        for v in o.rendered():
            eye = np.asarray(read_closeup_camera(tmp_path / "out" / str(v.camera)).pose)[:3, 3]
            assert all(not inside_box(eye, other) for other in scene.objects)
            assert ((eye > 0.1) & (eye < np.array([3.9, 3.9, 2.5]))).all()
    assert {f.object_id for f in idx.flagged} == set()


def test_camera_moves_in_front_of_a_distant_blocker(tmp_path: Path) -> None:
    scene_json = tiny_scene(tmp_path / "scene", gap=0.6)  # now a camera fits between cube and screen
    scene = read_scene(scene_json)
    cp = CloseupParams(score_size=24)
    plan = Planner(scene, scene_geometry(scene, scene_json.parent), cp).plan(scene.object(7))
    east = (plan.azimuth == 0) & (plan.elevation == 15)
    assert plan.status[east][0] == "ok" and plan.visible_fraction[east][0] == 1.0
    eye = plan.poses[east][0, :3, 3]
    assert 2.2 + 0.05 < eye[0] < 2.2 + 0.6 - cp.clearance + 1e-6  # in front of the screen, beyond the near plane
    # Free space: inside the cabinet, outside the room or against a wall is not free; the room's middle air is.
    planner = Planner(scene, scene_geometry(scene, scene_json.parent), cp)
    pts = np.array([[0.6, 2, 0.9], [2, 2, 3.0], [3.97, 1, 1.2], [3.0, 1.0, 1.8]])
    assert planner.free(pts).tolist() == [False, False, False, True]


def test_closeups_are_byte_identical_on_rerun(tmp_path: Path) -> None:
    scene_json = tiny_scene(tmp_path / "scene")
    cp = CloseupParams(size=48, score_size=16, azimuths=4, elevations=(15.0, 45.0))
    a = write_closeups(scene_json, "baseline", LIGHTING, tmp_path / "a", cp, "pyrender", progress=False)
    b = write_closeups(scene_json, "baseline", LIGHTING, tmp_path / "b", cp, "pyrender", progress=False)
    assert a == b and a == read_closeup_index(tmp_path / "a" / "index.json")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) > 10 and files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    rgb = np.asarray(Image.open(tmp_path / "a" / str(a.by_id()[7].rendered()[0].rgb)))
    assert rgb.shape == (48, 48, 3) and rgb.std() > 5  # shaded, not blank


def test_bad_closeup_params_name_the_key() -> None:
    with pytest.raises(ValueError, match="unknown key 'zoom'"):
        CloseupParams.from_dict({"zoom": 2})
    with pytest.raises(ValueError, match="'fill'"):
        CloseupParams.from_dict({"fill": 1.5})
    assert CloseupParams.from_dict({"elevations": [10, 20]}).elevations == (10.0, 20.0)


def test_crop_alpha_is_the_closeup_instance_mask(crops_dataset: DatasetPaths) -> None:
    from tiermap.app.stages import closeups_dir

    ds = crops_dataset
    crops = read_crop_index(ds.dir / "crops/room0/index.json")
    cdir = closeups_dir(ds, "room0")
    cu = read_closeup_index(cdir / "index.json").by_id()
    assert crops.objects and all(r.closeup_pixels for r in crops.objects)
    for rec in crops.objects:
        v = read_crop_views(ds.dir / "crops/room0" / rec.views)
        assert v.closeup is not None and v.closeup.pixels == rec.closeup_pixels == cu[rec.object_id].rendered()[0].pixels
        mask = np.asarray(Image.open(cdir / v.closeup.instance)) == rec.object_id
        assert mask.sum() == v.closeup.pixels
        x0, y0, x1, y1 = v.closeup.bbox
        alpha = np.asarray(Image.open(ds.dir / "crops/room0" / rec.crop))[..., 3]
        want = np.asarray(Image.fromarray(mask[y0:y1, x0:x1].astype(np.uint8)).resize(alpha.shape[::-1], Image.Resampling.NEAREST)) > 0
        assert np.array_equal(alpha > 0, want) and set(np.unique(alpha)) <= {0, 255}
        assert len(v.views) >= 1 and all((ds.dir / "crops/room0" / f).is_file() for f in rec.frames)  # sequence frames stay


def test_crops_without_closeups_is_a_clear_error(crops_dataset: DatasetPaths, tmp_path: Path) -> None:
    from annotation.crops import write_crops
    from tiermap.app.stages import build_dir

    ds = crops_dataset
    with pytest.raises(SchemaError, match="tiermap generate closeups"):
        write_crops(ds.scene_dir("room0") / "scene.json", ds.sequence_dir("room0", "baseline"), build_dir(ds, "room0") / "visibility.json",
                    tmp_path / "crops", closeup_dir=tmp_path / "nowhere")
    assert not (tmp_path / "crops").exists()


@pytest.mark.slow
def test_demo_scene_closeups_show_every_annotated_object_large(tmp_path: Path) -> None:
    """params.yaml as shipped (procedural room0, seed 7): every object seen in the reference sequence gets ≥ 10,000 pixels at 512 px."""
    from generation.render_raycast import RaycastRenderer
    from generation.sequence import camera_from_params, scene_poses
    from tiermap.app import stages

    p = yaml.safe_load((REPO / "params.yaml").read_text())
    ds = DatasetPaths(tmp_path / "datasets", "demo")
    stages.make_scene(ds, "room0", p)
    scene = read_scene(ds.scene_dir("room0") / "scene.json")
    geometry = scene_geometry(scene, ds.scene_dir("room0"))
    # Before: the largest view of each object in the reference sequence (its instance images, ray cast exactly as rendered).
    seq = RaycastRenderer(geometry, camera_from_params(p["render"]))
    seq.shades_with_rays = False
    before: dict[int, int] = {}
    for pose in scene_poses(scene, p, 1.0, geometry):
        ids, counts = np.unique(seq.geometry(pose)["ids"], return_counts=True)
        for i, c in zip(ids.tolist(), counts.tolist()):
            before[i] = max(before.get(i, 0), c)
    annotated = sorted(i for i, c in before.items() if i and c >= int(p["gt"]["min_pixels"]))
    index = stages.make_closeups(ds, "room0", p)
    after = {o.object_id: max((v.pixels or 0 for v in o.rendered()), default=0) for o in index.objects}
    for o in scene.objects:
        print(f"{o.id:3d} {o.class_name:14s} sequence best {before.get(o.id, 0):6d} px ({p['render']['width']}x{p['render']['height']})"
              f"  close-up {after[o.id]:6d} px ({index.size}x{index.size})")
    print(f"min over annotated objects: before {min(before[i] for i in annotated)}, after {min(after[i] for i in annotated)}")
    assert index.size == 512 and annotated
    assert min(after[i] for i in annotated) >= 10_000
    armchair = next(o.id for o in scene.objects if o.class_name == "armchair")
    assert before[armchair] < 1000 < 10_000 <= after[armchair]


def test_cli_generate_closeups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tests.conftest import small_params
    from tiermap.app.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(small_params(["baseline"])))
    runner = CliRunner()
    assert runner.invoke(app, ["generate", "scene", "--scene", "room0"]).exit_code == 0
    res = runner.invoke(app, ["generate", "closeups", "--scene", "room0", "--renderer", "raycast"])
    assert res.exit_code == 0 and "closeups room0:" in res.output and "0 flagged" in res.output, res.output
    assert (tmp_path / "datasets/demo/closeups/room0/index.json").is_file()
    res = runner.invoke(app, ["generate", "closeups", "--scene", "nope"])
    assert res.exit_code == 2 and "nope/scene.json" in res.output


def test_open_scene_rays_that_miss_count_as_background(tmp_path: Path) -> None:
    """No ceiling and one wall missing: rays escape to the sky and the plan still scores the cube."""
    scene_json = tiny_scene(tmp_path / "scene")
    scene = read_scene(scene_json)
    scene = scene.model_copy(update={"objects": [o for o in scene.objects if o.id not in (2, 6)]})
    plan = Planner(scene, scene_geometry(scene, scene_json.parent), CloseupParams(score_size=16)).plan(scene.object(7))
    assert (plan.status == "ok").any() and plan.score_pixels.max() > 0


def test_crops_use_the_closeup_and_fall_back_to_the_sequence_for_flagged_objects(tmp_path: Path) -> None:
    """Synthetic close-ups: object 1 has one (an exact L-shaped mask), object 2 is flagged and keeps its sequence crop."""
    from tests.test_crops import Fixture, blank, rect

    fx = Fixture(tmp_path, [rect(rect(blank(), 5, 5, 15, 15, 1), 20, 5, 30, 12, 2)])
    cdir = tmp_path / "closeups" / "s"
    (cdir / "1").mkdir(parents=True)
    inst = np.zeros((24, 24), np.uint16)
    inst[4:20, 6:18] = 1
    inst[12:20, 12:18] = 3  # another object cuts a corner off
    rgb = np.random.default_rng(3).integers(0, 256, (24, 24, 3), dtype=np.uint8)
    Image.fromarray(inst).save(cdir / "1" / "instance_0.png")
    Image.fromarray(rgb).save(cdir / "1" / "rgb_0.png")
    n = int((inst == 1).sum())
    view = {"azimuth_deg": 45.0, "elevation_deg": 15.0, "distance": 1.2, "score_pixels": 30, "visible_fraction": 1.0, "status": "chosen",
            "pixels": n, "rgb": "1/rgb_0.png", "instance": "1/instance_0.png", "camera": "1/camera_0.json"}
    index = {"scene": "s", "condition": "baseline", "renderer": "test", "size": 24, "hfov_deg": 60, "fill": 0.8, "score_size": 8,
             "objects": [{"object_id": 1, "class_name": "thing1", "views": [view]},
                         {"object_id": 2, "class_name": "thing2", "views": [{**{k: view[k] for k in ("azimuth_deg", "elevation_deg", "distance")},
                                                                             "score_pixels": 0, "visible_fraction": 0.0, "status": "not free"}]}],
             "flagged": [{"object_id": 2, "reason": "no viewpoint shows it"}]}
    (cdir / "index.json").write_text(dump_json(index))
    idx = fx.run(size=16, closeup_dir=cdir)
    rec = idx.by_id()
    assert rec[1].closeup_pixels == n and rec[2].closeup_pixels is None
    crop = np.asarray(Image.open(fx.out / "1" / "crop.png"))
    mask = inst[4:20, 6:18] == 1
    assert crop.shape == (16, 12, 4) and np.array_equal(crop[..., 3], mask * 255)
    assert np.array_equal(crop[..., :3][mask], rgb[4:20, 6:18][mask]) and not crop[..., :3][~mask].any()
    v1 = fx.views(1)
    assert v1.closeup is not None and v1.closeup.bbox == [6, 4, 18, 20] and v1.closeup.image_size == [24, 24]
    assert v1.context_bbox == [3, 0, 21, 24] and v1.views[0].frame == 0  # context in the close-up; sequence frame kept
    v2 = fx.views(2)
    assert v2.closeup is None and v2.context_bbox == [17, 3, 33, 14]  # sequence frame's box grown by 25 %
    # A close-up whose instance image disagrees with index.json is a clear error.
    inst[4, 6] = 0
    Image.fromarray(inst).save(cdir / "1" / "instance_0.png")
    with pytest.raises(SchemaError, match="instance_0.png: field 'pixels'"):
        fx.run(tmp_path / "again", closeup_dir=cdir)
