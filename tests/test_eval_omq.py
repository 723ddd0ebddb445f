"""OMQ (BenchBot object map quality): expected numbers written from the definitions in the OMQ notes."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from evaluation import omq
from tiermap.formats.base import SchemaError

CLASSES = ["chair", "cup", "table", "book", "background"]
SYNONYMS = {"seat": "chair", "bg": "background", "diningtable": "dining table"}
UNIT = ((0, 0, 0), (1, 1, 1))
F32 = 1e-7  # the default (official) arithmetic rounds every quality through float32: ~6e-8 absolute


def box(lo: tuple[float, ...], hi: tuple[float, ...]) -> dict[str, list[float]]:
    """Centroid/extent of the axis-aligned box [lo, hi]."""
    return {"centroid": [(a + b) / 2 for a, b in zip(lo, hi)], "extent": [b - a for a, b in zip(lo, hi)]}


def shifted(dx: float, extent_x: float = 1.0) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The unit box moved by dx along x (with an optional x extent)."""
    return (dx, 0, 0), (dx + extent_x, 1, 1)


def gt_obj(cls: str, b: tuple[tuple[float, ...], tuple[float, ...]] = UNIT, **extra: Any) -> dict[str, Any]:
    """A GT object in BenchBot's format."""
    return {"class": cls, "ID_name": f"{cls}_{b[0][0]}", **box(*b), "isgroup": False, **extra}


def write_gt(path: Path, objects: list[dict[str, Any]], env: str = "room", variant: int = 1,
             class_list: list[str] | None = None, synonyms: dict[str, str] | None = SYNONYMS) -> Path:
    """Write an object_map_ground_truth file."""
    gt: dict[str, Any] = {"class_list": class_list or CLASSES, "objects": objects}
    if synonyms is not None:
        gt["synonyms"] = synonyms
    doc = {"environment": {"name": env, "variant": variant, "object_labels": CLASSES[:-1]},
           "format": {"name": "object_map_ground_truth"}, "ground_truth": gt}
    path.write_text(json.dumps(doc))
    return path


def prop(probs: dict[str, float], b: tuple[tuple[float, ...], tuple[float, ...]] = UNIT,
         classes: list[str] | None = None, state: list[float] | None = None) -> dict[str, Any]:
    """A proposal with label_probs over `classes` (default CLASSES)."""
    o: dict[str, Any] = {"label_probs": [probs.get(c, 0.0) for c in classes or CLASSES], **box(*b)}
    if state is not None:
        o["state_probs"] = state
    return o


def write_res(path: Path, objects: list[dict[str, Any]], envs: tuple[tuple[str, int], ...] = (("room", 1),),
              class_list: list[str] | None = None, scd: bool = False, task: str | None = None) -> Path:
    """Write an object_map (or object_map_with_states) results file."""
    results: dict[str, Any] = {"class_list": class_list or CLASSES, "objects": objects}
    if scd:
        results["state_list"] = ["added", "removed", "unchanged"]
    name = task or ("scd:passive:ground_truth" if scd else "semantic_slam:passive:ground_truth")
    doc = {"task_details": {"name": name, "results_format": "object_map_with_states" if scd else "object_map"},
           "environment_details": [{"name": n, "variant": v} for n, v in envs], "results": results}
    path.write_text(json.dumps(doc))
    return path


def score(tmp_path: Path, gt_objects: list[dict[str, Any]], proposals: list[dict[str, Any]],
          **kw: Any) -> dict[str, Any]:
    """Score one results file against one GT file; returns the per-file entry."""
    gt, res = write_gt(tmp_path / "gt.json", gt_objects), write_res(tmp_path / "res.json", proposals)
    out = omq.score_omq([gt], [res], **kw)
    assert out["kind"] == "omq" and len(out["per_file"]) == 1
    return out["per_file"][0]


def raises(path: Path, field: str, fn: Callable[[], Any]) -> SchemaError:
    """Assert fn raises a SchemaError naming the file and the field."""
    with pytest.raises(SchemaError) as err:
        fn()
    assert str(err.value).startswith(f"{path}: field '{field}"), str(err.value)
    return err.value


# ---------------------------------------------------------------- building blocks
def test_class_space_order_background_and_lookup() -> None:
    # sorted unique, background moved last; missing background appended
    s = omq.ClassSpace([["cup", "chair", "bottle", "background"], ["chair"]], {"mug": "cup"})
    assert s.names == ("bottle", "chair", "cup", "background")
    assert s.lookup("Mug") == 2 and s.lookup("CHAIR") == 1 and s.lookup("sofa") is None
    assert omq.ClassSpace([["cup"]]).names == ("cup", "background")
    # only the query is lowercased: a capitalised class_list entry is unreachable, as in input_processor
    assert omq.ClassSpace([["Cup"]]).lookup("Cup") is None
    # a synonym of "background" names the background class
    assert omq.ClassSpace([["none", "cup"]], {"background": "none"}).names == ("cup", "none")


def test_sanitise_and_rebin() -> None:
    # [0.2, 0.3]: sum 0.5 ≤ 1 → missing 0.5 to the last bin; [1.5, 0.5]: sum 2 > 1 → divided by 2
    np.testing.assert_allclose(omq.sanitise_probs(np.array([[0.2, 0.3], [1.5, 0.5]])), [[0.2, 0.8], [0.75, 0.25]])
    space = omq.ClassSpace([CLASSES], SYNONYMS)  # internal order book, chair, cup, table, background
    # Seat → seat → chair (0.5); gizmo unknown → background (0.3); 0.1 bg; missing 1 − 0.9 = 0.1 → bg = 0.5
    out = omq.rebin_label_probs(np.array([[0.5, 0.3, 0.1]]), ["Seat", "gizmo", "background"], space)
    np.testing.assert_allclose(out, [[0.0, 0.5, 0.0, 0.0, 0.5]])


def test_box_iou_and_quality() -> None:
    # [0,2]×[0,1]² vs [0,1]³: inter 1, union 2 + 1 − 1 = 2 → 0.5; touching [1,2]×[0,1]² → exactly 0
    c = [[1.0, 0.5, 0.5]]
    iou = omq.box_iou(c, [[2.0, 1.0, 1.0]], [[0.5, 0.5, 0.5], [1.5, 0.5, 0.5], [2.5, 0.5, 0.5]], [[1.0] * 3] * 3)
    np.testing.assert_allclose(iou, [[0.5, 0.5, 0.0]])
    assert omq.box_iou([[0.5] * 3], [[1.0] * 3], [[1.5, 0.5, 0.5]], [[1.0] * 3])[0, 0] == 0.0
    assert omq.box_iou([[0.0] * 3], [[0.0] * 3], [[0.0] * 3], [[0.0] * 3])[0, 0] == 0.0  # zero union
    # gmean: sqrt(0.8·0.5) = sqrt(0.4); cube root for three; 0 if any factor is 0
    assert omq.pairwise_quality(0.8, 0.5) == pytest.approx(math.sqrt(0.4), abs=1e-15)
    assert omq.pairwise_quality(0.8, 1.0, 0.5) == pytest.approx(0.4 ** (1 / 3), abs=1e-15)
    assert omq.pairwise_quality(0.0, 0.7) == 0.0


def test_assignment_is_globally_optimal_not_greedy() -> None:
    # GT A=chair, B=cup on the same box; X={chair .6, cup .4}, Y={chair .5, bg .5}; all IoU 1 so Q = sqrt(label):
    # A-X .775, A-Y .707, B-X .632, B-Y 0. Greedy X→A leaves B-Y = 0 (sum .775);
    # optimal A-Y + B-X = sqrt(.5) + sqrt(.4) = 1.339
    labels = np.array([[0.6, 0.4, 0.0], [0.5, 0.0, 0.5]])  # classes chair, cup, background
    cen, ext = np.full((2, 3), 0.5), np.ones((2, 3))
    ev = omq.omq_map(cen, ext, [0, 1], cen, ext, labels)
    assert (ev.TP, ev.FP, ev.FN) == (2, 0, 0)
    assert ev.overall == pytest.approx(math.sqrt(0.5) + math.sqrt(0.4), abs=F32)
    assert ev.label == pytest.approx(0.5 + 0.4, abs=F32)


# ---------------------------------------------------------------- whole files
def test_perfect_map(tmp_path: Path) -> None:
    gts = [gt_obj("chair"), gt_obj("cup", shifted(2))]
    f = score(tmp_path, gts, [prop({"chair": 1.0}), prop({"cup": 1.0}, shifted(2))])
    # 2 TPs of quality 1: OMQ = 2 / (2 + 0 + 0) = 1
    assert f["scores"] == {"OMQ": 1.0, "avg_pairwise": 1.0, "avg_label": 1.0, "avg_spatial": 1.0, "avg_fp_quality": 1.0}
    assert (f["TP"], f["FP"], f["FN"], f["fp_cost"], f["task"]) == (2, 0, 0, 0.0, "sslam")
    assert omq.score_omq([tmp_path / "gt.json"], [tmp_path / "res.json"], precision="float64")["scores"]["OMQ"] == 1.0


def test_one_tp_iou_half_label_08(tmp_path: Path) -> None:
    # GT [0,2]×[0,1]², proposal [0,1]³: IoU 1/2; P(chair) 0.8 → Q = sqrt(0.8·0.5) = sqrt(0.4); OMQ = Q / 1
    f = score(tmp_path, [gt_obj("chair", ((0, 0, 0), (2, 1, 1)))], [prop({"chair": 0.8, "background": 0.2})])
    s = f["scores"]
    assert s["OMQ"] == pytest.approx(math.sqrt(0.4), abs=F32)
    assert s["avg_pairwise"] == pytest.approx(math.sqrt(0.4), abs=F32)
    assert s["avg_label"] == pytest.approx(0.8, abs=F32) and s["avg_spatial"] == pytest.approx(0.5, abs=F32)


def test_fp_on_background_is_free_and_fp_cost_is_max_foreground(tmp_path: Path) -> None:
    far = shifted(10)
    # FP with all mass on background: cost 0 → OMQ = 1 / (1 + 0 + 0) = 1, avg_fp_quality = (1 − 0) / 1 = 1
    f = score(tmp_path, [gt_obj("chair")], [prop({"chair": 1.0}), prop({"background": 1.0}, far)])
    assert (f["TP"], f["FP"], f["fp_cost"]) == (1, 1, 0.0)
    assert f["scores"]["OMQ"] == 1.0 and f["scores"]["avg_fp_quality"] == 1.0
    # FP {chair .3, cup .6, bg .1}: cost = max non-bg = .6 → OMQ = 1 / 1.6 = .625;
    # avg_fp_quality = (1 − .6) / 1 = .4
    fp = prop({"chair": 0.3, "cup": 0.6, "background": 0.1}, far)
    f = score(tmp_path, [gt_obj("chair")], [prop({"chair": 1.0}), fp])
    assert f["fp_cost"] == pytest.approx(0.6, abs=1e-15)
    assert f["scores"]["OMQ"] == pytest.approx(0.625, abs=1e-12)
    assert f["scores"]["avg_fp_quality"] == pytest.approx(0.4, abs=1e-12)


def test_false_negative(tmp_path: Path) -> None:
    # chair found perfectly, cup missed: OMQ = 1 / (1 + 0 + 1) = .5; averages over the one TP stay 1
    f = score(tmp_path, [gt_obj("chair"), gt_obj("cup", shifted(3))], [prop({"chair": 1.0})])
    assert (f["TP"], f["FP"], f["FN"]) == (1, 0, 1)
    assert f["scores"]["OMQ"] == 0.5 and f["scores"]["avg_pairwise"] == 1.0


def test_isgroup_forgiveness(tmp_path: Path) -> None:
    group = ((0, 0, 0), (2, 1, 1))
    # X=[0,1]³ {book 1}: Q = sqrt(1·.5); Y=[1,2]×[0,1]² {book .9}: Q = sqrt(.9·.5) → X assigned, Y left over.
    # Y's best GT is the group, its top class is book and it lies fully inside (1 ≥ .5) → not an FP
    props = [prop({"book": 1.0}), prop({"book": 0.9, "background": 0.1}, shifted(1))]
    f = score(tmp_path, [gt_obj("book", group, isgroup=True)], props)
    assert (f["TP"], f["FP"], f["FN"], f["fp_cost"]) == (1, 0, 0, 0.0)
    assert f["scores"]["OMQ"] == pytest.approx(math.sqrt(0.5), abs=F32)
    # not a group (or the template's `is_group` spelling, which OMQ ignores): FP of cost .9 → sqrt(.5) / 1.9
    for flags in ({"isgroup": False}, {"isgroup": False, "is_group": True}):
        f = score(tmp_path, [gt_obj("book", group, **flags)], props)
        assert (f["FP"], f["fp_cost"]) == (1, pytest.approx(0.9, abs=1e-15))
        assert f["scores"]["OMQ"] == pytest.approx(math.sqrt(0.5) / 1.9, abs=F32)
    # Y at x ∈ [1.6, 2.6]: only .4 of it inside the group (< .5) → FP
    props[1] = prop({"book": 0.9, "background": 0.1}, shifted(1.6))
    f = score(tmp_path, [gt_obj("book", group, isgroup=True)], props)
    assert f["FP"] == 1 and f["scores"]["OMQ"] == pytest.approx(math.sqrt(0.5) / 1.9, abs=F32)


def test_empty_maps(tmp_path: Path) -> None:
    # no proposals: TP = FP = 0, FN = 2 → OMQ = 0 / 2 = 0, avg_fp_quality 1.0 (no FP)
    f = score(tmp_path, [gt_obj("chair"), gt_obj("cup", shifted(2))], [])
    assert (f["TP"], f["FP"], f["FN"]) == (0, 0, 2)
    assert f["scores"] == {"OMQ": 0.0, "avg_pairwise": 0.0, "avg_label": 0.0, "avg_spatial": 0.0, "avg_fp_quality": 1.0}
    # no GT objects: one FP of cost .7 → OMQ 0 / .7 = 0, avg_fp_quality (1 − .7) / 1 = .3
    f = score(tmp_path, [], [prop({"chair": 0.7, "background": 0.3})])
    assert (f["FP"], f["fp_cost"]) == (1, pytest.approx(0.7, abs=1e-15))
    assert f["scores"]["OMQ"] == 0.0 and f["scores"]["avg_fp_quality"] == pytest.approx(0.3, abs=1e-12)


def test_touching_boxes_are_fn_plus_fp(tmp_path: Path) -> None:
    # [0,1]³ vs [1,2]×[0,1]²: IoU 0 → Q 0 → FN + FP (cost 1) → OMQ 0 / (0 + 1 + 1) = 0
    f = score(tmp_path, [gt_obj("chair")], [prop({"chair": 1.0}, shifted(1))])
    assert (f["TP"], f["FP"], f["FN"], f["fp_cost"]) == (0, 1, 1, 1.0)
    assert f["scores"]["OMQ"] == 0.0 and f["scores"]["avg_fp_quality"] == 0.0


def test_unknown_result_class_goes_to_background_and_sum_above_one_is_normalised(tmp_path: Path) -> None:
    res_classes = ["Seat", "gizmo", "background"]
    # Seat → chair .5; gizmo .3 + bg .1 + missing .1 → background .5: Q = sqrt(.5); far FP {gizmo 1} costs 0
    props = [prop({"Seat": 0.5, "gizmo": 0.3, "background": 0.1}, classes=res_classes),
             prop({"gizmo": 1.0}, shifted(5), classes=res_classes)]
    out = omq.score_omq([write_gt(tmp_path / "gt.json", [gt_obj("chair")])],
                        [write_res(tmp_path / "r.json", props, class_list=res_classes)])
    f = out["per_file"][0]
    assert f["scores"]["avg_label"] == pytest.approx(0.5, abs=F32) and f["fp_cost"] == 0.0
    assert f["scores"]["OMQ"] == pytest.approx(math.sqrt(0.5), abs=F32)
    # chair 1.5 + bg .5 = 2 > 1 → chair .75 → Q = sqrt(.75)
    f = score(tmp_path, [gt_obj("chair")], [prop({"chair": 1.5, "background": 0.5})])
    assert f["scores"]["OMQ"] == pytest.approx(math.sqrt(0.75), abs=F32)


def test_two_environments_arithmetic_mean(tmp_path: Path) -> None:
    g1 = write_gt(tmp_path / "g1.json", [gt_obj("chair")], variant=1)
    g2 = write_gt(tmp_path / "g2.json", [gt_obj("chair"), gt_obj("cup", shifted(3))], variant=2)
    r1 = write_res(tmp_path / "r1.json", [prop({"chair": 1.0})], envs=(("room", 1),))
    r2 = write_res(tmp_path / "r2.json", [prop({"chair": 1.0})], envs=(("room", 2),))
    out = omq.score_omq([g1, g2], [r1, r2])
    # room:1 OMQ 1/1 = 1; room:2 OMQ 1/(1+1) = .5 → mean .75 (not pooled 2/3); avg_fp_quality (1 + 1)/2
    assert out["scores"]["OMQ"] == 0.75 and out["scores"]["avg_fp_quality"] == 1.0
    assert [f["environments"] for f in out["per_file"]] == [["room:1"], ["room:2"]]
    assert [f["file"] for f in out["per_file"]] == [str(r1), str(r2)]


def scd_files(tmp_path: Path, states: tuple[list[float], ...], task: str | None = None,
              reverse: bool = False) -> tuple[list[Path], Path]:
    """Scene 0 {A chair, B cup}, scene 1 {A chair, C table}: B removed, C added; proposals on B, C and A."""
    a, b, c = gt_obj("chair"), gt_obj("cup", shifted(2)), gt_obj("table", shifted(4))
    g0 = write_gt(tmp_path / "s0.json", [a, b], variant=0)
    g1 = write_gt(tmp_path / "s1.json", [a, c], variant=1)
    props = [prop({"cup": 1.0}, shifted(2), state=states[0]),
             prop({"table": 0.5, "background": 0.5}, shifted(4), state=states[1]),
             prop({"chair": 1.0}, state=states[2])]
    envs = (("room", 1), ("room", 0)) if reverse else (("room", 0), ("room", 1))
    return [g0, g1], write_res(tmp_path / "scd.json", props, envs=envs, scd=True, task=task)


def test_scd_added_removed_cube_root(tmp_path: Path) -> None:
    gts, res = scd_files(tmp_path, ([0.0, 0.8, 0.2], [1.0, 0.0, 0.0], [0.1, 0.2, 0.7]))
    f = omq.score_omq(gts, [res])["per_file"][0]
    # B removed ← P1 (L 1, IoU 1, P(removed) .8): Q = .8^(1/3); C added ← P2 (L .5, P(added) 1): Q = .5^(1/3)
    # P3 on unchanged A is an FP: cost sqrt(max label 1 · max(added .1, removed .2)) = sqrt(.2)
    s, den = f["scores"], 2 + math.sqrt(0.2)
    assert (f["task"], f["TP"], f["FP"], f["FN"]) == ("scd", 2, 1, 0)
    assert s["OMQ"] == pytest.approx((0.8 ** (1 / 3) + 0.5 ** (1 / 3)) / den, abs=F32)
    assert s["avg_state_quality"] == pytest.approx((0.8 + 1.0) / 2, abs=F32)
    assert s["avg_label"] == pytest.approx(0.75, abs=F32) and s["avg_spatial"] == 1.0
    assert s["avg_fp_quality"] == pytest.approx(1 - math.sqrt(0.2), abs=F32)
    # environment_details reversed: C is now "removed" and B "added", so no proposal has the right state:
    # 2 FN, 3 FP with costs sqrt(1·.8) + sqrt(.5·1) + sqrt(1·.2)
    gts, res = scd_files(tmp_path, ([0.0, 0.8, 0.2], [1.0, 0.0, 0.0], [0.1, 0.2, 0.7]), reverse=True)
    f = omq.score_omq(gts, [res])["per_file"][0]
    assert (f["TP"], f["FP"], f["FN"], f["scores"]["OMQ"]) == (0, 3, 2, 0.0)
    assert f["fp_cost"] == pytest.approx(math.sqrt(0.8) + math.sqrt(0.5) + math.sqrt(0.2), abs=F32)


def test_scd_state_sanitising_keyed_on_task_name(tmp_path: Path) -> None:
    states = ([0.6, 0.6, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    # 'scd' in the task name: [.6, .6, 0] sums 1.2 > 1 → removed .5 → Q(B) = .5^(1/3)
    gts, res = scd_files(tmp_path, states)
    ev = omq.score_omq(gts, [res])["per_file"][0]
    assert ev["scores"]["avg_state_quality"] == pytest.approx((0.5 + 1.0) / 2, abs=F32)
    # no 'scd' in the name: input_processor leaves state_probs raw → removed .6
    gts, res = scd_files(tmp_path, states, task="change_detection:passive")
    ev = omq.score_omq(gts, [res])["per_file"][0]
    assert ev["scores"]["avg_state_quality"] == pytest.approx((0.6 + 1.0) / 2, abs=F32)


def test_scd_changes_by_dict_equality() -> None:
    a, b = gt_obj("chair"), gt_obj("cup", shifted(2))
    moved = gt_obj("cup", shifted(2.5))
    # a unchanged; b moved → removed (scene 0, index 1) then added (scene 1, index 1); list order removed first
    assert omq.scd_changes([a, b], [dict(a), moved]) == [(0, 1), (1, 1)]
    assert omq.scd_changes([a], [dict(a, isgroup=True)]) == [(0, 0), (1, 0)]


def test_float32_round_trip_is_the_default(tmp_path: Path) -> None:
    # GT [0,2]×[0,1]², proposal [0,1]³: IoU .5; P(chair) .54 → float64 Q = sqrt(.54·.5) = sqrt(.27)
    gts = [gt_obj("chair", ((0, 0, 0), (2, 1, 1)))]
    props = [prop({"chair": 0.54, "background": 0.46})]
    f64 = score(tmp_path, gts, props, precision="float64")["scores"]
    f32 = score(tmp_path, gts, props)["scores"]
    one, l32 = np.float32(1), np.float32(0.54)
    q = np.exp(np.mean(np.log([np.float64(l32), 0.5])))  # the label table is cast to float32 before the gmean
    assert f32["OMQ"] == float(one - np.float32(1.0 - q))  # Q := 1 − float32(1 − Q)
    assert f32["avg_label"] == float(one - (one - l32))  # L := 1 − (1 − L) in float32
    assert f32["avg_spatial"] == 0.5 and f32["OMQ"] != f64["OMQ"]
    assert abs(f32["OMQ"] - f64["OMQ"]) < 1e-6 and f64["OMQ"] == pytest.approx(math.sqrt(0.27), abs=1e-12)


def test_tiny_quality_is_dropped_only_in_float32(tmp_path: Path) -> None:
    # proposal starts at x = 1 − 2^-50: overlap 2^-50, IoU = 2^-50 / (2 − 2^-50) ≈ 4.4e-16,
    # Q = sqrt(1 · IoU) ≈ 2.1e-8 < 3e-8;
    # float32(1 − Q) = 1 (half float32 spacing below 1 is 2^-25 ≈ 3e-8) → quality 0 → FN + FP (cost 1)
    d = 2.0 ** -50
    props = [prop({"chair": 1.0}, ((1 - d, 0, 0), (2 - d, 1, 1)))]
    q = math.sqrt(d / (2 - d))
    f64 = score(tmp_path, [gt_obj("chair")], props, precision="float64")
    assert (f64["TP"], f64["FN"], f64["FP"]) == (1, 0, 0) and f64["scores"]["OMQ"] == pytest.approx(q, rel=1e-9)
    f32 = score(tmp_path, [gt_obj("chair")], props)
    assert (f32["TP"], f32["FN"], f32["FP"], f32["fp_cost"]) == (0, 1, 1, 1.0) and f32["scores"]["OMQ"] == 0.0


def official_sslam(gt: list[dict[str, Any]], gt_ids: list[int], props: list[dict[str, Any]]) -> dict[str, Any]:
    """eval_omq's `_calc_qual_map` and score getters for a semantic-SLAM map without group objects, step by step.

    Written from the official procedure, independently of evaluation.omq: iou_tools corners c ± e/2 and
    vol_int = (BEV area)·height; label table cast to float32; scipy 1.10.1 gmean = exp(average(log)); float32 cost
    tables `ones -= q`; Hungarian; TP iff 1 − cost > 0; float32 sums; Python-float totals (numpy < 1.24 promotes
    0.0 + float32 scalar to float64).
    """
    def corners(o: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        c, e = np.array(o["centroid"], float), np.array(o["extent"], float)
        return c - e / 2, c + e / 2

    g, p = len(gt), len(props)
    spatial = np.zeros((g, p))
    for i, a in enumerate(gt):
        for j, b in enumerate(props):
            (la, ha), (lb, hb) = corners(a), corners(b)
            ov = np.maximum(0.0, np.minimum(ha, hb) - np.maximum(la, lb))
            vol_int = (ov[0] * ov[1]) * ov[2]
            spatial[i, j] = vol_int / (np.prod(a["extent"]) + np.prod(b["extent"]) - vol_int)
    probs = np.array([o["label_probs"] for o in props], float)
    label = probs[:, gt_ids].T.astype(np.float32)
    with np.errstate(divide="ignore"):
        overall = np.exp(np.average(np.log(np.dstack((label, spatial))), axis=2))
    n = max(g, p)
    tables = {k: np.ones((n, n), np.float32) for k in ("overall", "spatial", "label")}
    tables["overall"][:g, :p] -= overall
    tables["spatial"][:g, :p] -= spatial
    tables["label"][:g, :p] -= label
    rows, cols = linear_sum_assignment(tables["overall"])
    q = {k: 1 - t for k, t in tables.items()}
    tp = fn = 0
    fps = []
    for r, c in zip(rows, cols):
        if q["overall"][r, c] > 0:
            tp += 1
            continue
        fn += int(r < g)
        if c < p:
            fps.append(c)
    for k in ("spatial", "label"):
        q[k][q["overall"] == 0] = 0.0
    tot = {k: float(np.sum(t[rows, cols])) for k, t in q.items()}
    fp_cost = 0.0 + np.sum([np.max(props[c]["label_probs"][:-1]) for c in fps])
    den = tp + fp_cost + fn
    scores = {"OMQ": tot["overall"] / den if den > 0 else 0.0,
              "avg_pairwise": tot["overall"] / tp if tp else 0.0, "avg_label": tot["label"] / tp if tp else 0.0,
              "avg_spatial": tot["spatial"] / tp if tp else 0.0,
              "avg_fp_quality": (len(fps) - fp_cost) / len(fps) if fps else 1.0}
    return {"TP": tp, "FN": fn, "FP": len(fps), "scores": {k: float(v) for k, v in scores.items()}}


def test_touching_boxes_default_is_the_official_number(tmp_path: Path) -> None:
    # Chair [0,1]³ vs P1 {chair .9, bg .1} at x ∈ [1 − 2^-50, 2 − 2^-50]: they touch up to rounding (all corners
    # exact binary fractions). IoU = 2^-50 / (2 − 2^-50), Q = sqrt(.9·IoU) ≈ .67·2^-25 < 2^-25, so the official
    # float32(1 − Q) is 1: no match → FN + FP of cost .9.
    # Cup [3,4]×[0,1]² vs P2 {cup .54} on [3,5]×[0,1]²: IoU .5, a TP either way.
    d = 2.0 ** -50
    gts = [gt_obj("chair"), gt_obj("cup", shifted(3))]
    props = [prop({"chair": 0.9, "background": 0.1}, ((1 - d, 0, 0), (2 - d, 1, 1))),
             prop({"cup": 0.54, "background": 0.46}, shifted(3, 2.0))]
    space = omq.ClassSpace([CLASSES], SYNONYMS)
    internal = [dict(o, label_probs=[o["label_probs"][CLASSES.index(c)] for c in space.names]) for o in props]
    ref = official_sslam(gts, [space.ids["chair"], space.ids["cup"]], internal)
    assert (ref["TP"], ref["FN"], ref["FP"]) == (1, 1, 1)
    assert ref["scores"]["avg_label"] == float(np.float32(1) - (np.float32(1) - np.float32(0.54)))
    f = score(tmp_path, gts, props)
    assert f["scores"] == ref["scores"]  # bit for bit
    assert (f["TP"], f["FN"], f["FP"]) == (1, 1, 1)
    # float64: both pairs are TPs, FP cost 0 → avg_label (.9 + .54)/2 = .72, avg_fp_quality 1
    f64 = score(tmp_path, gts, props, precision="float64")
    assert (f64["TP"], f64["FN"], f64["FP"]) == (2, 0, 0)
    q1, q2 = math.sqrt(0.9 * d / (2 - d)), math.sqrt(0.54 * 0.5)
    assert f64["scores"]["avg_label"] == pytest.approx(0.72, abs=1e-15)
    assert f64["scores"]["OMQ"] == pytest.approx((q1 + q2) / 2, abs=1e-15)
    assert f64["scores"]["avg_fp_quality"] == 1.0 and ref["scores"]["avg_fp_quality"] == pytest.approx(0.1, abs=1e-15)
    # only the touching pair: avg_label 0 (no TP) officially, .9 in float64
    one = score(tmp_path, gts[:1], props[:1])["scores"]
    assert one["avg_label"] == 0.0 and one["OMQ"] == 0.0
    assert score(tmp_path, gts[:1], props[:1], precision="float64")["scores"]["avg_label"] == 0.9


def test_precision_option_and_cli_flag(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evaluation.cli import eval_app

    d = 2.0 ** -50
    gt = write_gt(tmp_path / "gt.json", [gt_obj("chair")])
    res = write_res(tmp_path / "res.json", [prop({"chair": 0.9, "background": 0.1}, ((1 - d, 0, 0), (2 - d, 1, 1)))])
    with pytest.raises(SchemaError, match=r"^<omq>: field 'precision': expected float32 .* or float64, got 'float16'$"):
        omq.score_omq([gt], [res], precision="float16")
    avg_label = {}
    for flag in ([], ["--precision", "float64"]):
        out = tmp_path / f"out{len(flag)}"
        r = CliRunner().invoke(eval_app, ["omq", "--ground-truth", str(gt), "--results", str(res), "--out", str(out),
                                          *flag])
        assert r.exit_code == 0, r.output
        doc = json.loads((out / "results.json").read_text())
        avg_label[doc["precision"]] = doc["scores"]["avg_label"]
    assert avg_label == {"float32": 0.0, "float64": 0.9}
    r = CliRunner().invoke(eval_app, ["omq", "--ground-truth", str(gt), "--results", str(res), "--out",
                                      str(tmp_path / "bad"), "--precision", "half"])
    assert r.exit_code == 2 and "field 'precision'" in r.output


def test_gt_without_synonyms_is_empty_synonyms(tmp_path: Path) -> None:
    # chair found with IoU .5 and label .8 → sqrt(.4), with or without the synonyms key
    props = [prop({"chair": 0.8, "background": 0.2})]
    gt = [gt_obj("chair", ((0, 0, 0), (2, 1, 1)))]
    r = write_res(tmp_path / "r.json", props)
    with_syn = omq.score_omq([write_gt(tmp_path / "a.json", gt, synonyms={})], [r])
    without = omq.score_omq([write_gt(tmp_path / "b.json", gt, synonyms=None)], [r])
    assert with_syn["scores"] == without["scores"]
    assert without["scores"]["OMQ"] == pytest.approx(math.sqrt(0.4), abs=F32)


# ---------------------------------------------------------------- bad input
def test_bad_ground_truth(tmp_path: Path) -> None:
    r = write_res(tmp_path / "r.json", [prop({"chair": 1.0})])
    g = write_gt(tmp_path / "g.json", [gt_obj("spaceship")])
    raises(g, "<root>", lambda: omq.score_omq([g], [r]))
    # accepted by the contract, but OMQ lowercases the lookup and the class_list entry is capitalised
    g = write_gt(tmp_path / "g.json", [gt_obj("Chair")], class_list=["Chair", "background"])
    e = raises(g, "ground_truth.objects.0.class", lambda: omq.score_omq([g], [r]))
    assert "'Chair'" in str(e)


def test_synonym_to_non_class(tmp_path: Path) -> None:
    g = write_gt(tmp_path / "g.json", [gt_obj("chair")])
    # the real BenchBot synonym 'diningtable' → 'dining table' is harmless until a results class uses it
    ok = write_res(tmp_path / "ok.json", [prop({"chair": 1.0})])
    assert omq.score_omq([g], [ok])["scores"]["OMQ"] == 1.0
    classes = ["chair", "diningtable", "background"]
    bad = write_res(tmp_path / "bad.json", [prop({"chair": 1.0}, classes=classes)], class_list=classes)
    e = raises(g, "ground_truth.synonyms.diningtable", lambda: omq.score_omq([g], [bad]))
    assert "'dining table'" in str(e) and "bad.json" in str(e)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["results"]["objects"][0]["label_probs"].pop(), "results.objects"),
    (lambda d: d["results"]["objects"][0]["label_probs"].__setitem__(1, float("nan")),
     "results.objects.0.label_probs.1"),
    (lambda d: d["results"]["objects"][0]["label_probs"].__setitem__(2, -0.1), "results.objects.0.label_probs.2"),
    (lambda d: d["results"]["objects"][0]["centroid"].pop(), "results.objects.0.centroid"),
    (lambda d: d["results"]["objects"][0]["extent"].__setitem__(2, -1.0), "results.objects.0.extent.2"),
    (lambda d: d["results"].pop("class_list"), "results.class_list"),
    (lambda d: d["environment_details"].append({"name": "room", "variant": 2}), "environment_details"),
    (lambda d: d["task_details"].__setitem__("results_format", "object_map_with_states"), "environment_details"),
])
def test_bad_results(tmp_path: Path, edit: Callable[[dict[str, Any]], Any], field: str) -> None:
    g = write_gt(tmp_path / "g.json", [gt_obj("chair")])
    r = write_res(tmp_path / "r.json", [prop({"chair": 0.9})])
    doc = json.loads(r.read_text())
    edit(doc)
    r.write_text(json.dumps(doc))
    raises(r, field, lambda: omq.score_omq([g], [r]))


def test_scd_results_need_state_probs_and_ground_truths(tmp_path: Path) -> None:
    gts, res = scd_files(tmp_path, ([0, 1, 0], [1, 0, 0], [0, 0, 1]))
    doc = json.loads(res.read_text())
    del doc["results"]["objects"][1]["state_probs"]
    res.write_text(json.dumps(doc))
    assert "object 1 has none" in str(raises(res, "results", lambda: omq.score_omq(gts, [res])))
    # a results environment without a GT among the given files names the results file
    gts, res = scd_files(tmp_path, ([0, 1, 0], [1, 0, 0], [0, 0, 1]))
    assert "'room:1'" in str(raises(res, "environment_details", lambda: omq.score_omq(gts[:1], [res])))


def test_omq_map_rejects_bad_arrays() -> None:
    cen, ext, labels = np.full((1, 3), 0.5), np.ones((1, 3)), np.array([[1.0, 0.0]])
    msg = r"<omq_map arrays>: field 'gt_class_ids': expected class ids in \[0, 2\), got 2"
    with pytest.raises(SchemaError, match=msg):
        omq.omq_map(cen, ext, [2], cen, ext, labels)
    with pytest.raises(SchemaError, match=r"field 'prop_extents': expected an array of shape \(1, 3\)"):
        omq.omq_map(cen, ext, [0], cen, np.ones((1, 2)), labels)
    with pytest.raises(SchemaError, match=r"field 'prop_state_probs'"):
        omq.omq_map(cen, ext, [0], cen, ext, labels, gt_state_ids=[0])


def test_results_files_must_share_a_format(tmp_path: Path) -> None:
    gts, scd = scd_files(tmp_path, ([0, 1, 0], [1, 0, 0], [0, 0, 1]))
    g = write_gt(tmp_path / "g.json", [gt_obj("chair")], variant=5)
    r = write_res(tmp_path / "r.json", [prop({"chair": 1.0})], envs=(("room", 5),))
    raises(scd, "task_details.results_format", lambda: omq.score_omq([*gts, g], [r, scd]))
