"""View selection and annotator crops: exact numbers on synthetic sequences, atomic output, hashes, bad inputs, a real render."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from annotation import views
from annotation.crops import OUTLINE_RGB, write_crops
from generation.scene_gt import visibility
from tiermap.formats.base import SchemaError, dump_json, write_model
from tiermap.formats.crops import (
    CropIndex,
    CropViews,
    read_crop_index,
    read_crop_views,
    read_visibility,
)
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.scene import Scene, read_scene
from tiermap.formats.sequence import CameraParams, open_sequence, read_camera, write_traj

W, H = 40, 30
ROT = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def rect(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, oid: int) -> np.ndarray:
    """Paint the box [x0, x1) × [y0, y1) with an object id."""
    img[y0:y1, x0:x1] = oid
    return img


def blank() -> np.ndarray:
    return np.zeros((H, W), dtype=np.uint16)


class Fixture:
    """A synthetic scene + reference sequence + visibility.json in tmp_path, with known answers."""

    def __init__(self, root: Path, instances: list[np.ndarray], positions: list[tuple[float, float, float]] | None = None,
                 ids: tuple[int, ...] = (1, 2, 3)) -> None:
        self.root = root
        self.seq = root / "sequences" / "s" / "baseline"
        (self.seq / "results").mkdir(parents=True)
        (self.seq / "instance").mkdir()
        rng = np.random.default_rng(0)
        self.rgb = []
        for i, inst in enumerate(instances):
            Image.fromarray(inst.astype(np.uint16)).save(self.seq / "instance" / f"{i:06d}.png")
            rgb = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
            Image.fromarray(rgb).save(self.seq / "results" / f"frame{i:06d}.png")
            self.rgb.append(rgb)
        poses = np.tile(np.eye(4), (len(instances), 1, 1))
        poses[:, :3, 3] = positions or [(3.0, 0.0, 0.0)] * len(instances)
        write_traj(self.seq / "traj.txt", poses)
        write_model(CameraParams(w=W, h=H, fx=20, fy=20, cx=W / 2, cy=H / 2, depth_scale=1000),
                           self.seq / "camera_params.json")
        objs = [{"id": i, "class_name": f"thing{i}", "obb": {"center": [0, 0, 0], "extent": [1, 1, 1], "R": ROT}} for i in ids]
        self.scene = write_model(Scene.model_validate({"name": "s", "source": "procedural", "objects": objs}),
                                        root / "scene.json")
        self.vis = root / "visibility.json"
        self.vis.write_text(dump_json({str(k): v for k, v in visibility(self.seq, 1).items()}))
        self.out = root / "crops" / "s"

    def run(self, out: Path | None = None, **kw: object) -> CropIndex:
        return write_crops(self.scene, self.seq, self.vis, out or self.out, **kw)  # type: ignore[arg-type]

    def views(self, oid: int, out: Path | None = None) -> CropViews:
        return read_crop_views((out or self.out) / str(oid) / "views.json")


# ---------------------------------------------------------------- scoring
def test_label_stats_exact_numbers() -> None:
    lab = np.full((H, W), 3, dtype=np.intp)  # label 3 = not an object of interest
    rect(lab, 5, 4, 15, 10, 0)               # 10 × 6 interior
    rect(lab, 0, 20, 8, 30, 1)               # touches left and bottom border
    lab[12, 30] = 0                          # a stray pixel widens object 0's box
    area, box, border = views.label_stats(lab, 3)
    assert area.tolist() == [61, 80, 0]
    assert box.tolist() == [[5, 4, 31, 13], [0, 20, 8, 30], [0, 0, 0, 0]]
    assert border.tolist() == [False, True, False]


def test_score_frames_one_pass(tmp_path: Path) -> None:
    fx = Fixture(tmp_path, [rect(blank(), 2, 2, 12, 12, 1), rect(rect(blank(), 20, 5, 25, 9, 1), 0, 0, 40, 3, 2)])
    seq = open_sequence(fx.seq)
    st = views.score_frames(seq, [1, 2, 3], progress=False)
    assert st.area.tolist() == [[100, 0, 0], [20, 120, 0]]
    assert st.bbox[1].tolist() == [[20, 5, 25, 9], [0, 0, 40, 3], [0, 0, 0, 0]]
    assert st.border.tolist() == [[False, False, False], [False, True, False]]


# ---------------------------------------------------------------- selection
def test_best_view_is_largest_unclipped(tmp_path: Path) -> None:
    fx = Fixture(tmp_path, [rect(blank(), 5, 5, 15, 15, 1), rect(blank(), 5, 5, 17, 17, 1), rect(blank(), 5, 5, 13, 13, 1)])
    fx.run(k=1)
    v = fx.views(1).views
    assert [(x.frame, x.pixels, x.bbox, x.border_cut) for x in v] == [(1, 144, [5, 5, 17, 17], False)]


def test_border_cut_loses_to_slightly_smaller_full_view(tmp_path: Path) -> None:
    fx = Fixture(tmp_path, [rect(blank(), 0, 5, 12, 17, 1),    # 144 px, cut by the left border
                            rect(blank(), 10, 5, 21, 16, 1),   # 121 px, complete
                            rect(rect(blank(), 0, 0, 20, 20, 2), 30, 2, 35, 7, 3),  # obj 2: 400 px cut; obj 3: 25 px full
                            rect(blank(), 28, 10, 40, 30, 3)])  # obj 3: 240 px cut (nothing full is half as large)
    fx.run(k=3, min_pixels=10)
    one = fx.views(1).views
    assert [(x.frame, x.border_cut) for x in one] == [(1, False), (0, True)]
    assert fx.views(2).views[0].border_cut is True  # only cut views: kept
    assert [(x.frame, x.pixels, x.border_cut) for x in fx.views(3).views] == [(3, 240, True), (2, 25, False)]


def test_spread_picks_far_viewpoint_over_near_duplicate(tmp_path: Path) -> None:
    fx = Fixture(tmp_path, [rect(blank(), 5, 5, 20, 20, 1),   # 225 px
                            rect(blank(), 5, 5, 20, 19, 1),   # 210 px, camera 1 cm from frame 0's
                            rect(blank(), 5, 5, 17, 17, 1)],  # 144 px, seen from 90° around the object
                 positions=[(3, 0, 0), (3, 0.01, 0), (0, 3, 0)])
    fx.run(k=2)
    assert [x.frame for x in fx.views(1).views] == [0, 2]
    # all three when asked for three; the near duplicate comes last
    fx.run(k=3)
    assert [x.frame for x in fx.views(1).views] == [0, 2, 1]


def test_select_views_vectorised_rules() -> None:
    poses = np.tile(np.eye(4), (4, 1, 1))
    poses[:, :3, 3] = [(1, 0, 0), (1, 0.01, 0), (0, 1, 0), (0, 0, 1)]
    dirs = views.view_directions(poses, np.zeros(3))
    assert np.allclose(np.linalg.norm(dirs, axis=1), 1)
    area = np.array([500, 480, 300, 40])
    border = np.zeros(4, bool)
    assert views.select_views(area, border, dirs, k=2) == [0, 2]
    assert views.select_views(area, border, dirs, k=5, min_pixels=50) == [0, 2, 1]  # frame 3 below min_pixels
    assert views.select_views(area, border, dirs, k=3, min_pixels=501) == []
    assert views.select_views(area, border, dirs, k=2, spread_weight=0.0) == [0, 1]  # area only


# ---------------------------------------------------------------- images
def test_crop_alpha_is_exact_mask_and_images(tmp_path: Path) -> None:
    inst = blank()
    rect(inst, 10, 6, 22, 22, 1)       # 12 × 16 box ...
    rect(inst, 14, 10, 22, 22, 0)      # ... minus a corner: an L shape
    inst[8, 12] = 2                    # a hole of another object inside
    fx = Fixture(tmp_path, [inst])
    mask = inst[6:22, 10:22] == 1
    fx.run(k=3, size=16, pad=0.25)
    crop = np.asarray(Image.open(fx.out / "1" / "crop.png"))
    assert crop.shape == (16, 12, 4)
    assert np.array_equal(crop[..., 3], mask * 255)
    assert np.array_equal(crop[..., :3][mask], fx.rgb[0][6:22, 10:22][mask])
    assert not crop[..., :3][~mask].any()
    # twice the size: alpha is the nearest-neighbour upscaled mask
    out2 = tmp_path / "big"
    fx.run(out2, size=32)
    big = np.asarray(Image.open(out2 / "1" / "crop.png"))
    assert np.array_equal(big[..., 3] > 0, mask.repeat(2, 0).repeat(2, 1))
    # context: box grown by 25 % per side (3 px, 4 px), clipped; outline just outside the mask
    v = fx.views(1)
    assert v.context_bbox == [7, 2, 25, 26] and v.views[0].bbox == [10, 6, 22, 22] and v.image_size == [W, H]
    ctx = np.asarray(Image.open(fx.out / "1" / "context.png"))
    assert ctx.shape == (16, 12, 3)  # 18 × 24 → longer side 16
    frame = np.asarray(Image.open(fx.out / "1" / "frame_0.jpg"))
    assert frame.shape == (H, W, 3)
    ctx_big = np.asarray(Image.open(out2 / "1" / "context.png"))
    m_big = np.asarray(Image.fromarray((inst[2:26, 7:25] == 1).astype(np.uint8)).resize((24, 32), Image.Resampling.NEAREST)) > 0
    green = (ctx_big == OUTLINE_RGB).all(axis=2)
    assert green.any() and not (green & m_big).any()
    assert len(fx.views(1).views) == 1  # one frame only: one view


def test_outline_is_two_pixels_outside_the_mask() -> None:
    from annotation.crops import outline

    rgb = np.random.default_rng(1).integers(0, 200, (H, W, 3), dtype=np.uint8)
    assert np.array_equal(outline(rgb, blank() == 1), rgb)  # empty mask: nothing drawn
    drawn = outline(rgb, rect(blank(), 10, 10, 20, 20, 1) == 1)
    ring = np.zeros((H, W), bool)
    ring[8:22, 8:22] = True
    ring[10:20, 10:20] = False
    assert (drawn[ring] == OUTLINE_RGB).all() and np.array_equal(drawn[~ring], rgb[~ring])


def test_skips_small_and_invisible_objects(tmp_path: Path) -> None:
    inst = rect(rect(blank(), 0, 0, 10, 10, 1), 20, 20, 26, 28, 2)  # obj 1: 100 px, obj 2: 48 px, obj 3: absent
    fx = Fixture(tmp_path, [inst, rect(blank(), 20, 20, 25, 25, 2)])
    idx = fx.run()
    assert [r.object_id for r in idx.objects] == [1]
    skipped = {s.object_id: s.reason for s in idx.skipped}
    assert set(skipped) == {2, 3} and "at most 48" in skipped[2] and "visibility.json" in skipped[3]
    assert sorted(p.name for p in fx.out.iterdir()) == ["1", "index.json"]
    assert [r.object_id for r in fx.run(min_pixels=48).objects] == [1, 2]


def test_index_hash_stable_and_changes_with_an_image(tmp_path: Path) -> None:
    fx = Fixture(tmp_path, [rect(blank(), 5, 5, 15, 15, 1), rect(blank(), 5, 5, 13, 13, 2)])
    idx = fx.run()
    assert idx == read_crop_index(fx.out / "index.json")
    rec = idx.by_id()[1]
    assert (rec.crop, rec.context, rec.frames, rec.views) == ("1/crop.png", "1/context.png", ["1/frame_0.jpg"], "1/views.json")
    again = fx.run(tmp_path / "again")
    assert again == idx
    files = sorted(p.relative_to(fx.out) for p in fx.out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*") if p.is_file())
    assert all((fx.out / f).read_bytes() == (tmp_path / "again" / f).read_bytes() for f in files)  # byte-identical
    rgb = fx.rgb[0].copy()
    rgb[7, 7] = 255 - rgb[7, 7]
    Image.fromarray(rgb).save(fx.seq / "results" / "frame000000.png")
    changed = fx.run()
    assert changed.by_id()[1].sha256 != idx.by_id()[1].sha256
    assert changed.by_id()[2].sha256 == idx.by_id()[2].sha256


# ---------------------------------------------------------------- bad input
def _drop_sequence(fx: Fixture) -> Path:
    import shutil

    shutil.rmtree(fx.seq)
    return fx.seq


def _drop_instances(fx: Fixture) -> Path:
    for p in (fx.seq / "instance").glob("*.png"):
        p.unlink()
    return fx.seq / "instance"


def _unknown_id(fx: Fixture) -> Path:
    data = json.loads(fx.vis.read_text())
    data["99"] = {"pixels": 5, "frames": 1}
    fx.vis.write_text(json.dumps(data))
    return fx.vis


def _instance_shape(fx: Fixture) -> Path:
    p = fx.seq / "instance" / "000001.png"
    Image.fromarray(np.zeros((H, W + 1), np.uint16)).save(p)
    return p


def _rgb_shape(fx: Fixture) -> Path:
    p = fx.seq / "results" / "frame000000.png"
    Image.fromarray(np.zeros((H - 1, W, 3), np.uint8)).save(p)
    return p


def _missing_rgb(fx: Fixture) -> Path:
    (fx.seq / "results" / "frame000001.png").unlink()
    return fx.seq / "results" / "frame000001.jpg"


def _short_traj(fx: Fixture) -> Path:
    p = fx.seq / "traj.txt"
    p.write_text(p.read_text().splitlines()[0] + "\n")
    return p


@pytest.mark.parametrize("breaker, field", [(_drop_sequence, "<folder>"), (_drop_instances, "<folder>"), (_unknown_id, "99"),
                                            (_instance_shape, "shape"), (_rgb_shape, "shape"), (_missing_rgb, "<file>"),
                                            (_short_traj, "lines")])
def test_bad_input_names_file_and_writes_nothing(tmp_path: Path, breaker, field: str) -> None:  # type: ignore[no-untyped-def]
    fx = Fixture(tmp_path, [rect(blank(), 5, 5, 15, 15, 1), rect(blank(), 5, 5, 12, 12, 2)])
    fx.run()
    before = {p: p.read_bytes() for p in fx.out.rglob("*") if p.is_file()}
    bad = breaker(fx)
    with pytest.raises(SchemaError) as err:
        fx.run()
    assert err.value.path == str(bad) and err.value.field == field and str(bad) in str(err.value)
    assert "\n" not in str(err.value)
    assert {p: p.read_bytes() for p in fx.out.rglob("*") if p.is_file()} == before  # previous output untouched
    assert [p.name for p in fx.out.parent.iterdir()] == ["s"]  # no partial folder left
    with pytest.raises(SchemaError):
        fx.run(tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()


def test_bad_parameters_and_visibility_file(tmp_path: Path) -> None:
    fx = Fixture(tmp_path, [rect(blank(), 5, 5, 15, 15, 1)])
    with pytest.raises(ValueError, match="k >= 1"):
        fx.run(k=0)
    fx.vis.write_text('{"1": {"pixels": -3, "frames": 1}}')
    with pytest.raises(SchemaError, match=r"visibility.json: field '1.pixels'"):
        fx.run()
    fx.vis.write_text('{"one": {"pixels": 3, "frames": 1}}')
    with pytest.raises(SchemaError, match=r"field 'one': expected object ids"):
        fx.run()


def test_index_model_rejects_bad_records() -> None:
    rec = {"scene": "s", "object_id": 1, "class_name": "mug", "crop": "1/crop.png", "context": "1/context.png",
           "frames": ["1/frame_0.jpg"], "views": "1/views.json", "sha256": "0" * 64}
    base = {"scene": "s", "condition": "baseline", "k": 3, "min_pixels": 50, "pad": 0.25, "size": 256}
    CropIndex.model_validate({**base, "objects": [rec]})
    for bad in ({**rec, "crop": "../x.png"}, {**rec, "sha256": "xyz"}):
        with pytest.raises(ValueError):
            CropIndex.model_validate({**base, "objects": [bad]})
    with pytest.raises(ValueError, match="one record per object_id"):
        CropIndex.model_validate({**base, "objects": [rec, rec]})


# ---------------------------------------------------------------- a real rendered sequence
@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[DatasetPaths, dict]:
    from tests.conftest import small_params
    from tiermap.app import stages

    p = small_params(["baseline"])
    ds = DatasetPaths(tmp_path_factory.mktemp("real"), "demo")
    stages.make_scene(ds, "room0", p)
    stages.make_sequence(ds, "room0", "baseline", p)
    stages.make_scene_gt(ds, "room0", p, out=stages.build_dir(ds, "room0"))
    return ds, p


def test_real_rendered_sequence(rendered: tuple[DatasetPaths, dict]) -> None:
    ds, p = rendered
    seq = ds.sequence_dir("room0", "baseline")
    assert read_camera(seq / "camera_params.json").w == 48
    vis_json = ds.dir / "build" / "room0" / "visibility.json"
    out = ds.dir / "crops" / "room0"
    idx = write_crops(ds.scene_dir("room0") / "scene.json", seq, vis_json, out, min_pixels=10, size=64)
    vis = read_visibility(vis_json)
    inst = np.stack([np.asarray(Image.open(f)) for f in sorted((seq / "instance").glob("*.png"))])
    scene = read_scene(ds.scene_dir("room0") / "scene.json")
    expected = [o.id for o in scene.objects if o.id in vis and vis[o.id].frames > 0 and (inst == o.id).sum((1, 2)).max() >= 10]
    assert expected and [r.object_id for r in idx.objects] == sorted(expected)
    assert len(idx.objects) + len(idx.skipped) == len(scene.objects)
    for rec in idx.objects:
        v = read_crop_views(out / rec.views)
        assert v.class_name == scene.object(rec.object_id).class_name and 1 <= len(v.views) <= 3
        areas = (inst == rec.object_id).sum((1, 2))
        best = v.views[0]
        assert best.pixels == areas[best.frame] and len({x.frame for x in v.views}) == len(v.views)
        if not best.border_cut:  # the first view is the largest complete one
            assert best.pixels >= max(a for f, a in enumerate(areas)
                                      if a and not _touches(inst[f] == rec.object_id))
        m = inst[best.frame] == rec.object_id
        x0, y0, x1, y1 = best.bbox
        alpha = np.asarray(Image.open(out / rec.crop))[..., 3]
        assert max(alpha.shape) == 64
        want = np.asarray(Image.fromarray(m[y0:y1, x0:x1].astype(np.uint8)).resize(alpha.shape[::-1], Image.Resampling.NEAREST)) > 0
        assert np.array_equal(alpha > 0, want) and set(np.unique(alpha)) <= {0, 255}
        assert all((out / f).is_file() for f in rec.files())


def _touches(mask: np.ndarray) -> bool:
    return bool(mask[0].any() or mask[-1].any() or mask[:, 0].any() or mask[:, -1].any())
