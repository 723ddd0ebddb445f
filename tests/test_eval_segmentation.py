"""OpenLex3D tiered segmentation: Top-N frequency and set ranking on hand-computed toys, inputs, CLI."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.segmentation import (
    SegmentationScene,
    evaluate_scene,
    evaluate_segmentation,
    load_scene,
)
from evaluation.text_features import ClipEncoder, FeatureFile
from evaluation.voxel import voxel_downsample
from tiermap.formats.openlex3d import GTCategories, write_gt_cloud, write_prompt_list
from tiermap.formats.predictions import (
    Predictions,
    write_predictions,
    write_text_features,
)

BIN = Path(sys.executable).parent
PROMPTS = ["chair", "lamp", "stool", "table", "wall", "wood grain"]
W = [1.0, 0.5, 0.4, 0.3, 0.2, 0.1]  # logits of a row, in its ranking order: no ties anywhere


def ranked(*order: str) -> np.ndarray:
    """An embedding whose cosine ranking of PROMPTS (one-hot text features) is `order`."""
    v = np.zeros(len(PROMPTS), np.float32)
    for w, p in zip(W, order, strict=True):
        v[PROMPTS.index(p)] = w
    return v


ROWS = np.stack([
    ranked("stool", "chair", "lamp", "table", "wall", "wood grain"),   # A: object 1, points 0-2
    ranked("chair", "stool", "lamp", "table", "wall", "wood grain"),   # B: object 1, point 3 (its last point)
    ranked("wood grain", "lamp", "table", "chair", "stool", "wall"),   # C: object 2
    ranked("wall", "chair", "lamp", "stool", "table", "wood grain"),   # D: the wall and id 9
    ranked("table", "wall", "lamp", "chair", "stool", "wood grain"),   # E: object 4
])
GT = {"dataset": {"samples": [
    {"name": "o1", "object_id": 1, "labels": {"image_attributes": {"synonyms": ["chair"], "vis_sim": ["stool"]}}},
    {"name": "o2", "object_id": 2, "labels": {"image_attributes": {"synonyms": ["table"], "depictions": ["wood grain"]}}},
    {"name": "o3", "object_id": 3, "labels": {"image_attributes": {"synonyms": ["wall"]}}},
    {"name": "o4", "object_id": 4, "labels": {"image_attributes": {"synonyms": ["lamp"], "clutter": ["2"]}}},
]}}


def toy() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GT points at voxel centres (one point per 5 cm voxel), ids, predicted points and their rows."""
    c = lambda x, y: [0.025 + 0.1 * x, 0.025 + 0.1 * y, 0.025]  # noqa: E731
    gt = np.array([c(0, 0), c(1, 0), c(2, 0), c(3, 0),      # object 1
                   c(50, 0), c(60, 0),                       # object 2; the second point has no prediction near it
                   c(0, 5), c(1, 5),                         # wall
                   c(0, 10), c(1, 10),                       # object 4
                   c(3, 5)])                                 # id 9: no JSON entry
    ids = np.array([1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 9])
    keep = np.array([0, 1, 2, 3, 4, 6, 7, 8, 9, 10])
    rows = np.array([0, 0, 0, 1, 2, 3, 3, 4, 4, 3])
    return gt, ids, gt[keep].astype(np.float32), rows


def toy_scene(dense: bool = False) -> SegmentationScene:
    gt, ids, pts, rows = toy()
    emb, index = (ROWS[rows], np.arange(len(rows))) if dense else (ROWS, rows)
    pred = Predictions(Path("/p"), Path("/p/point_cloud.ply"), pts, emb, index)
    return SegmentationScene("toy", gt, ids, GTCategories.model_validate(GT), pred)


def test_top_n_frequency_by_hand() -> None:
    r = evaluate_scene(toy_scene(), PROMPTS, np.eye(6, dtype=np.float32), top_n=(1, 2), with_set_ranking=False)
    # Scored objects: 1, 2, 4 (the wall is excluded, id 9 has no entry) -> |O| = 3.
    # top1: o1 3 points stool (VS) + 1 point chair (S) -> S 1/4, VS 3/4; o2 wood grain (D) + one point > 5 cm away (M);
    #       o4 "table" is a synonym of o2, which is in o4's clutter list -> C.
    exp1 = {"synonyms": 0.25 / 3, "depictions": 0.5 / 3, "vis_sim": 0.75 / 3, "clutter": 1 / 3, "missing": 0.5 / 3, "incorrect": 0.0}
    # top2: o1 (stool, chair) and (chair, stool) -> S everywhere; o2 (wood grain, lamp) -> D; o4 (table, wall) -> C.
    exp2 = {"synonyms": 1 / 3, "depictions": 0.5 / 3, "vis_sim": 0.0, "clutter": 1 / 3, "missing": 0.5 / 3, "incorrect": 0.0}
    assert r["frequency"]["top1"] == pytest.approx(exp1)
    assert r["frequency"]["top2"] == pytest.approx(exp2)
    assert r["n_objects_scored"] == 3


def test_set_ranking_official_by_hand() -> None:
    r = evaluate_scene(toy_scene(), PROMPTS, np.eye(6, dtype=np.float32), top_n=(1,), with_set_ranking=True)["set_ranking"]
    # L = 5. o1 rows A (3 points): chair rank 1 -> right 1-1/5 = 0.8; stool rank 0 below band [1,1] -> left ~1e-8.
    #        row B (last point): chair rank 0 -> 1, stool rank 1 -> 1.  overall (3*0.8 + 2)/8 = 0.55, R_S 0.85, R_DVS 0.25.
    # o2 (row C, both points; no 5 cm rule): table rank 2 -> 0.6, wood grain rank 0 -> ~0: overall 0.3, R_S 0.6.
    # o3 wall (no exclusion in set ranking): 1.  o4 lamp rank 2 -> 0.6.
    assert r["overall"] == pytest.approx((0.55 + 0.3 + 1 + 0.6) / 4, abs=1e-7)
    assert r["synonyms"] == pytest.approx((0.85 + 0.6 + 1 + 0.6) / 4)
    assert r["secondary"] == pytest.approx((0.25 + 0) / 2, abs=1e-7)
    # Rates and penalties from each object's last point only: o1 -> row B (all inliers, no violations).
    assert r["synonym_undershooting"] == pytest.approx((0.6 + 0.6) / 2)
    assert r["secondary_overshooting"] == pytest.approx(0, abs=1e-7)
    assert math.isnan(r["secondary_undershooting"])
    assert r["synonym_inlier_rate"] == pytest.approx((1 + 0 + 1 + 0) / 4)
    assert r["secondary_inlier_rate"] == pytest.approx((1 + 0) / 2)


def test_set_ranking_paper_pools_every_point() -> None:
    r = evaluate_scene(toy_scene(), PROMPTS, np.eye(6, dtype=np.float32), top_n=(1,), definition="paper")["set_ranking"]
    # o1 now pools its 4 points: synonym inliers 1/4, secondary inliers 1/4, undershooting 0.8 (three points).
    assert r["synonym_undershooting"] == pytest.approx((0.8 + 0.6 + 0.6) / 3)
    assert r["synonym_inlier_rate"] == pytest.approx((0.25 + 0 + 1 + 0) / 4)
    assert r["secondary_inlier_rate"] == pytest.approx((0.25 + 0) / 2)
    assert r["overall"] == pytest.approx((0.55 + 0.3 + 1 + 0.6) / 4, abs=1e-7)  # unchanged


def test_dense_and_object_centric_predictions_agree() -> None:
    a = evaluate_scene(toy_scene(), PROMPTS, np.eye(6, dtype=np.float32), top_n=(1, 2, 5))
    b = evaluate_scene(toy_scene(dense=True), PROMPTS, np.eye(6, dtype=np.float32), top_n=(1, 2, 5))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_object_without_synonyms_is_not_scored_by_top_n() -> None:
    gt = json.loads(json.dumps(GT))
    gt["dataset"]["samples"][3]["labels"]["image_attributes"]["synonyms"] = []
    s = toy_scene()
    s.labels = GTCategories.model_validate(gt)
    r = evaluate_scene(s, PROMPTS, np.eye(6, dtype=np.float32), top_n=(1,), with_set_ranking=False)
    # Only objects 1 and 2 remain: S 0.25/2, D 0.5/2, VS 0.75/2, M 0.5/2.
    assert r["frequency"]["top1"] == pytest.approx({"synonyms": 0.125, "depictions": 0.25, "vis_sim": 0.375, "clutter": 0.0,
                                                    "missing": 0.25, "incorrect": 0.0})


def test_visible_cloud_takes_nearest_gt_id_within_5cm() -> None:
    s = toy_scene()
    # Two visible points: on object 1's first point (id 1) and 0.3 m from everything (id -1 -> none).
    s.visible_points = np.array([[0.025, 0.025, 0.025], [0.025, 0.025, 0.325]])
    r = evaluate_scene(s, PROMPTS, np.eye(6, dtype=np.float32), top_n=(1,), with_set_ranking=False)
    assert r["frequency"]["top1"]["vis_sim"] == pytest.approx(1.0)  # the one scored point predicts "stool"
    assert r["n_gt_points"] == 2


def test_voxel_grid_is_the_tensor_api_floor_key() -> None:
    rng = np.random.default_rng(0)
    pts = rng.uniform(-0.3, 0.3, (500, 3)).astype(np.float32)
    ds = voxel_downsample(pts, 0.05)
    keys, inv = np.unique(np.floor(pts / 0.05).astype(int), axis=0, return_inverse=True)
    means = np.stack([np.bincount(inv.ravel(), pts[:, k].astype(np.float64)) for k in range(3)], 1) / np.bincount(inv.ravel())[:, None]
    assert len(ds) == len(keys)
    got = ds[np.lexsort(ds.T[::-1])]
    want = means[np.lexsort(means.T[::-1])]
    assert np.allclose(got, want, atol=1e-6)


def write_toy(tmp: Path, dense: bool = False) -> dict[str, Path]:
    """The toy scene as files: a released GT folder (scene 'toy'), predictions, prompt list, text features."""
    gt, ids, pts, rows = toy()
    gdir = tmp / "gt" / "toy"
    write_gt_cloud(gdir / "gt_cloud.ply", gt, ids)
    (gdir / "gt_categories.json").write_text(json.dumps(GT))
    write_prompt_list(tmp / "gt" / "prompt_list.txt", PROMPTS)
    emb, index = (ROWS[rows], np.arange(len(rows))) if dense else (ROWS, rows)
    write_predictions(tmp / "pred" / "toy", pts, emb, index)
    write_text_features(tmp / "text.npz", PROMPTS, np.eye(6))
    return {"gt": tmp / "gt", "scene": gdir, "pred": tmp / "pred", "npz": tmp / "text.npz"}


def test_cli_single_scene_and_gt_dir(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    out = tmp_path / "out"
    res = subprocess.run([str(BIN / "tiermap"), "eval", "segmentation", "--gt-labels", str(f["scene"] / "gt_categories.json"),
                          "--gt-cloud", str(f["scene"] / "gt_cloud.ply"), "--predictions", str(f["pred"] / "toy"),
                          "--prompt-list", str(f["gt"] / "prompt_list.txt"), "--text-features", str(f["npz"]),
                          "--top-n", "1", "2", "--set-ranking", "--out", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    r = json.loads((out / "results.json").read_text())
    assert set(r["frequency"]) == {"top1", "top2"}
    assert r["frequency"]["top1"]["clutter"] == pytest.approx(1 / 3)
    assert set(r["set_ranking"]) == {"overall", "synonyms", "secondary", "synonym_undershooting", "secondary_overshooting",
                                     "secondary_undershooting", "synonym_inlier_rate", "secondary_inlier_rate"}
    assert r["set_ranking"]["secondary_undershooting"] is None  # NaN written as null
    for name in ("results.csv", "results.md", "frequency.png", "topdown_toy.png"):
        assert (out / name).stat().st_size > 0
    # Same numbers from the GT folder layout, and from .npy points + ids.
    out2 = tmp_path / "out2"
    res = subprocess.run([str(BIN / "tiermap"), "eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]),
                          "--text-features", str(f["npz"]), "--top-n", "1", "2", "--set-ranking", "--out", str(out2)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    r2 = json.loads((out2 / "results.json").read_text())
    assert r2["frequency"] == r["frequency"] and r2["per_scene"]["toy"]["set_ranking"] == r["set_ranking"]


def test_npy_gt_cloud_pair(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    gt, ids, _, _ = toy()
    np.save(tmp_path / "pts.npy", gt)
    np.save(tmp_path / "ids.npy", ids)
    a = load_scene("toy", f["scene"] / "gt_categories.json", tmp_path / "pts.npy", f["pred"] / "toy", tmp_path / "ids.npy")
    enc = FeatureFile(f["npz"])
    r = evaluate_segmentation([a], PROMPTS, enc, top_n=(1,))
    assert r["frequency"]["top1"]["vis_sim"] == pytest.approx(0.25)


@pytest.mark.parametrize("case, field", [
    ("index_minus_one", "index.npy: field 'index'"),
    ("nan_features", "embeddings.npy: field 'embeddings'"),
    ("dimension", "embeddings.npy: field 'embeddings': expected feature dimension 6"),
    ("blank_prompt", "prompt_list.txt: field 'line 2'"),
    ("missing_text", "text.npz: field 'texts'"),
    ("unknown_scene", "field '--scene'"),
])
def test_bad_inputs_give_one_clear_line(tmp_path: Path, case: str, field: str) -> None:
    f = write_toy(tmp_path)
    pred = f["pred"] / "toy"
    extra: list[str] = []
    if case == "index_minus_one":
        idx = np.load(pred / "index.npy")
        idx[0] = -1
        np.save(pred / "index.npy", idx)
    elif case == "nan_features":
        e = np.load(pred / "embeddings.npy")
        e[1, 2] = np.nan
        np.save(pred / "embeddings.npy", e)
    elif case == "dimension":
        np.save(pred / "embeddings.npy", np.ones((5, 4), np.float32))
    elif case == "blank_prompt":
        (f["gt"] / "prompt_list.txt").write_text("chair\n\nlamp\n")
    elif case == "missing_text":
        write_text_features(f["npz"], PROMPTS[:-1], np.eye(6)[:-1])
    elif case == "unknown_scene":
        extra = ["--scene", "nope"]
    res = subprocess.run([str(BIN / "tiermap"), "eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]),
                          "--text-features", str(f["npz"]), "--out", str(tmp_path / "o"), *extra], capture_output=True, text=True)
    assert res.returncode == 2
    msg = " ".join(res.stderr.split())
    assert field in msg, msg
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "o" / "results.json").exists()


def test_clip_encoder_tiny_model_cache_and_short_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import open_clip
    import torch

    cfg = {"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
           "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2}}
    (tmp_path / "Tiny-CLIP-test.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(tmp_path / "Tiny-CLIP-test.json")
    torch.manual_seed(1)
    model, _, _ = open_clip.create_model_and_transforms("Tiny-CLIP-test", pretrained=None)
    torch.save(model.state_dict(), tmp_path / "tiny.pt")
    enc = ClipEncoder("Tiny-CLIP-test", str(tmp_path / "tiny.pt"), cache_dir=tmp_path / "cache")
    texts = ["chair", "wooden table with drawers", "wall"]
    a = enc(texts)
    with torch.inference_mode():
        full = model.encode_text(open_clip.get_tokenizer("Tiny-CLIP-test")(texts)).float().numpy()
    full /= np.linalg.norm(full, axis=1, keepdims=True)
    assert a.shape == (3, 32) and np.allclose(a, full, atol=1e-5)  # cutting the context to the longest label is exact
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
    monkeypatch.setattr(open_clip, "create_model_and_transforms", lambda *a, **k: pytest.fail("model loaded despite the cache"))
    again = ClipEncoder("Tiny-CLIP-test", str(tmp_path / "tiny.pt"), cache_dir=tmp_path / "cache")(texts)
    assert np.array_equal(a, again)


def test_toolkit_imports_nothing_from_generation_or_annotation() -> None:
    code = ("import sys, evaluation.cli, evaluation.segmentation, evaluation.retrieval, evaluation.omq, evaluation.osma, "
            "evaluation.report, evaluation.compare, evaluation.baseline, tiermap.app.cli; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('generation', 'annotation')]; print(bad); assert not bad")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_cli_from_an_installed_wheel_outside_the_repo(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "whl"),
                    str(repo)], check=True, capture_output=True, cwd=tmp_path)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path / "inst"),
                    *map(str, (tmp_path / "whl").glob("tiermap-*.whl"))], check=True, capture_output=True, cwd=tmp_path)
    f = write_toy(tmp_path / "data")
    code = "import sys; from tiermap.app.cli import app; import evaluation, os; assert evaluation.__file__.startswith(os.environ['PYTHONPATH']); sys.exit(app())"
    res = subprocess.run([sys.executable, "-c", code, "eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]),
                          "--text-features", str(f["npz"]), "--top-n", "1", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path / "inst")})
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["frequency"]["top1"]["clutter"] == pytest.approx(1 / 3)
