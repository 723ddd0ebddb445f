"""OSMa-Bench semseg scoring: expected numbers written from the definitions (OSMa-Bench compute_metrics.py)."""
from __future__ import annotations

import numpy as np
import pytest

from evaluation import osma
from tiermap.formats.base import SchemaError


def line(xs: list[float]) -> np.ndarray:
    """Points on the x axis."""
    return np.array([[x, 0.0, 0.0] for x in xs])


def scene(gt: list[int], pred: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GT and predicted points at the same places, so 1-NN transfer copies `pred` onto GT point i."""
    pts = line([float(i) for i in range(len(gt))])
    return pts, np.array(gt), pts.copy(), np.array(pred)


# ---------------------------------------------------------------- confusion and metrics
def test_three_class_toy_by_hand() -> None:
    gt = np.array([1, 1, 1, 1, 2, 2, 2, 3, 3, 0, 0])
    pred = np.array([1, 1, 2, -1, 2, 2, 1, 3, 1, 1, 3])
    conf = osma.confusion(gt, pred, [1, 2, 3])
    # labels [1, 2, 3, -1]; the two GT-0 points are dropped (0 is not in ids ∪ {-1}).
    expected = np.array([
        [2, 1, 0, 1],  # GT 1 -> pred 1,1,2,-1
        [1, 2, 0, 0],  # GT 2 -> pred 2,2,1
        [1, 0, 1, 0],  # GT 3 -> pred 3,1
        [0, 0, 0, 0],  # GT -1: none
    ])
    np.testing.assert_array_equal(conf, expected)
    m = osma.metrics(conf, [1, 2, 3, -1])
    # class 1: tp 2, fp (4-2)=2, fn (4-2)=2 -> IoU 2/6 = 1/3, recall 2/4
    # class 2: tp 2, fp (3-2)=1, fn (3-2)=1 -> IoU 2/4 = 1/2, recall 2/3
    # class 3: tp 1, fp (1-1)=0, fn (2-1)=1 -> IoU 1/2,        recall 1/2
    assert m["macc"] == pytest.approx((1 / 2 + 2 / 3 + 1 / 2) / 3)  # 5/9
    assert m["miou"] == pytest.approx((1 / 3 + 1 / 2 + 1 / 2) / 3)  # 4/9
    assert m["fmiou"] == pytest.approx((1 / 3 * 4 + 1 / 2 * 3 + 1 / 2 * 2) / 9)  # 23/54


def test_background_and_unclassified_rows_excluded_but_columns_count() -> None:
    labels = [0, 1, 2, -1]
    conf = np.array([
        [5, 1, 0, 0],  # background row: excluded as a class, but its 1 in column 1 is a false positive of 1
        [0, 3, 1, 0],
        [0, 0, 2, 4],
        [0, 1, 0, 0],  # GT -1 row: excluded, its 1 in column 1 is another false positive of 1
    ])
    m = osma.metrics(conf, labels)
    # class 1: tp 3, col 1+3+0+1=5 -> fp 2, row 4 -> fn 1 -> IoU 3/6, recall 3/4
    # class 2: tp 2, col 0+1+2+0=3 -> fp 1, row 6 -> fn 4 -> IoU 2/7, recall 2/6
    assert m["miou"] == pytest.approx((1 / 2 + 2 / 7) / 2)  # 11/28
    assert m["macc"] == pytest.approx((3 / 4 + 1 / 3) / 2)  # 13/24
    assert m["fmiou"] == pytest.approx((1 / 2 * 4 + 2 / 7 * 6) / 10)  # 13/35


def test_class_predicted_but_absent_from_gt_is_column_only() -> None:
    conf = osma.confusion(np.array([1, 1, 2]), np.array([1, 3, 2]), [1, 2, 3])
    np.testing.assert_array_equal(conf, [[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    m = osma.metrics(conf, [1, 2, 3, -1])
    # row 3 is empty -> not a valid class; class 1: tp 1, fp 0, fn 1 -> IoU 1/2; class 2: IoU 1
    assert m["miou"] == pytest.approx((1 / 2 + 1) / 2)  # not (1/2 + 1 + 0) / 3
    assert m["macc"] == pytest.approx((1 / 2 + 1) / 2)
    assert m["fmiou"] == pytest.approx((1 / 2 * 2 + 1 * 1) / 3)


def test_no_valid_class_gives_nan() -> None:
    m = osma.metrics(np.zeros((2, 2), int), [0, -1])
    assert all(np.isnan(v) for v in m.values())


@pytest.mark.parametrize("seed", range(5))
def test_confusion_equals_counting_by_hand(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = sorted(rng.choice(np.arange(12), size=5, replace=False).tolist())
    gt = rng.integers(-1, 12, 2000)
    pred = rng.integers(-1, 14, 2000)  # some predictions outside the labels: dropped
    pos = {label: i for i, label in enumerate(ids + [-1])}
    expected = np.zeros((len(pos), len(pos)), np.int64)
    for g, p in zip(gt.tolist(), pred.tolist()):
        if g in pos and p in pos:
            expected[pos[g], pos[p]] += 1
    conf = osma.confusion(gt, pred, ids)
    assert conf.dtype == np.int64
    np.testing.assert_array_equal(conf, expected)


def test_confusion_without_gt_in_labels_is_empty(recwarn: pytest.WarningsRecorder) -> None:
    # Every GT point dropped (all background): zeros, as sklearn on the emptied arrays, not its "no label" error.
    np.testing.assert_array_equal(osma.confusion(np.array([0, 0]), np.array([1, 2]), [1, 2]), np.zeros((3, 3)))
    # A scene with no class: the 1x1 matrix of -1, without sklearn's single-label warning.
    np.testing.assert_array_equal(osma.confusion(np.array([-1, 0]), np.array([-1, 1]), []), [[1]])
    assert not recwarn.list


def test_confusion_keeps_id_order() -> None:
    # labels [3, 1, -1]: GT 3 predicted 1 lands in row 0, column 1
    conf = osma.confusion(np.array([3]), np.array([1]), [3, 1])
    np.testing.assert_array_equal(conf, [[0, 1, 0], [0, 0, 0], [0, 0, 0]])


# ---------------------------------------------------------------- transfer
def test_transfer_k1_no_distance_cutoff() -> None:
    pred = line([0.0, 10.0])
    out = osma.transfer_labels(line([1.0, 4.0, 6.0, 100.0]), pred, np.array([5, 7]), k=1)
    # nearest of x=1,4 is x=0 (label 5); of x=6 and the far x=100 is x=10 (label 7)
    np.testing.assert_array_equal(out, [5, 5, 7, 7])


def test_transfer_k3_mode_and_tie() -> None:
    pred = line([0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 20.0, 21.0, 22.0])
    labels = np.array([2, 2, 9, 4, 3, 3, 6, 8, 7])
    out = osma.transfer_labels(line([0.4, 11.1, 21.1]), pred, labels, k=3)
    # x=0.4 -> {2, 2, 9} -> 2; x=11.1 -> {3, 3, 4} -> 3;
    # x=21.1 -> {8 (nearest), 7, 6}: all once -> torch.mode takes the smallest value, 6 (not the nearest's 8)
    np.testing.assert_array_equal(out, [2, 3, 6])


def test_transfer_tie_with_unclassified() -> None:
    out = osma.transfer_labels(line([0.5]), line([0.0, 1.0]), np.array([3, -1]), k=2)
    assert out.tolist() == [-1]  # {3, -1} tie -> smallest, -1


def test_transfer_fewer_points_than_k_pads_with_point_zero() -> None:
    pred, labels = line([0.0, 1.0]), np.array([9, 4])
    # neighbours of x=0.9: point 1 (label 4), point 0 (label 9), missing -> pytorch3d pads index 0 (label 9)
    assert osma.transfer_labels(line([0.9]), pred, labels, k=3).tolist() == [9]  # {4, 9, 9}
    assert osma.transfer_labels(line([0.9]), pred, labels, k=3, pad_with_first=False).tolist() == [4]  # {4, 9} tie


def test_transfer_empty_prediction_is_unclassified() -> None:
    out = osma.transfer_labels(line([0.0, 1.0]), np.zeros((0, 3)), np.zeros(0, int))
    assert out.tolist() == [-1, -1]


# ---------------------------------------------------------------- vocabulary, text features, classification
def test_vocabulary_scene_label_set() -> None:
    names = {0: "other", 1: "kitchen_cabinet", 2: "indoor-plant", 3: "wall", 4: "sofa"}
    ids, prompts = osma.vocabulary(names, np.array([3, 1, 1, 0, 2, 7, -1]))
    # 7 and -1 are not classes, 0 is excluded, 4 is absent from this scene; only '_' becomes a space
    assert ids == [1, 2, 3]
    assert prompts == ["kitchen cabinet", "indoor-plant", "wall"]
    ids, prompts = osma.vocabulary(names, np.array([0, 3]), excluded=())
    assert (ids, prompts) == ([0, 3], ["background", "wall"])  # id 0 is renamed "background" as official


def test_prompt_texts() -> None:
    assert osma.prompt_texts(["wall_lamp", "sofa"], ["an image of {}", "a {} in a scene"]) == [
        ["an image of wall lamp", "an image of sofa"],
        ["a wall lamp in a scene", "a sofa in a scene"],
    ]


def test_class_text_features_normalise_average_renormalise() -> None:
    table = {"A x": [3.0, 4.0], "B x": [0.0, 2.0]}

    def encode(prompts: list[str]) -> np.ndarray:
        return np.array([table[p] for p in prompts])

    f = osma.class_text_features(encode, ["x"], ["A {}", "B {}"])
    # unit vectors [0.6, 0.8] and [0, 1]; mean [0.3, 0.9]; renormalised [1, 3] / sqrt(10)
    np.testing.assert_allclose(f, [[1 / np.sqrt(10), 3 / np.sqrt(10)]])


def test_classify_argmax_cosine_and_gather() -> None:
    feats = np.array([[1.0, 0.0], [0.0, 2.0]])  # classes 4 and 9 (class 9's row is not unit: cosine ignores it)
    emb = np.array([[1.0, 0.0], [0.1, 5.0], [10.0, 9.0]])
    # cosines: row0 -> (1, 0) -> 4; row1 -> (0.1, 5)/|.| -> 9; row2 -> (10, 9)/|.| -> 4
    out = osma.classify(emb, np.array([2, -1, 0, 1, 1]), feats, [4, 9])
    np.testing.assert_array_equal(out, [4, -1, 4, 9, 9])


# ---------------------------------------------------------------- aggregation and conditions
def test_pool_scatters_by_label_id() -> None:
    a = (np.array([[4, 0], [0, 0]]), np.array([1, -1]))
    b = (np.array([[0, 1, 0], [0, 1, 0], [0, 0, 0]]), np.array([1, 2, -1]))
    conf, labels = osma.pool([a, b])
    assert labels.tolist() == [1, 2, -1]
    np.testing.assert_array_equal(conf, [[4, 1, 0], [0, 1, 0], [0, 0, 0]])


def test_pooled_and_mean_differ() -> None:
    data = {"baseline": {"a": scene([1, 1, 1, 1], [1, 1, 1, 1]), "b": scene([1, 2], [2, 2])}}
    pooled = osma.evaluate_conditions(data, aggregate="pooled", round_percent=False)
    mean = osma.evaluate_conditions(data, aggregate="mean", round_percent=False)
    # scene a: everything 1. scene b: rows 1:[0,1] 2:[0,1] -> IoU1 0, IoU2 1/2; recall 0 and 1
    per_b = pooled["conditions"]["baseline"]["per_scene"]["b"]
    assert per_b == pytest.approx({"macc": 1 / 2, "miou": 1 / 4, "fmiou": (0 * 1 + 1 / 2 * 1) / 2})
    # mean of scenes: macc (1 + 1/2)/2, miou (1 + 1/4)/2, fmiou (1 + 1/4)/2
    assert mean["conditions"]["baseline"]["overall"] == pytest.approx({"macc": 3 / 4, "miou": 5 / 8, "fmiou": 5 / 8})
    # pooled rows 1:[4,1] 2:[0,1]: class 1 tp 4, fp 0, fn 1 -> IoU 4/5; class 2 tp 1, fp 1, fn 0 -> IoU 1/2
    assert pooled["conditions"]["baseline"]["overall"] == pytest.approx(
        {"macc": (4 / 5 + 1) / 2, "miou": (4 / 5 + 1 / 2) / 2, "fmiou": (4 / 5 * 5 + 1 / 2 * 1) / 6}
    )
    assert pooled["kind"] == "osma" and pooled["aggregate"] == "pooled" and mean["aggregate"] == "mean"


def test_background_gt_points_dropped_in_scene() -> None:
    r = osma.evaluate_scene(*scene([0, 0, 1, 2], [1, 1, 1, 1]))
    # ids [1, 2]; the GT-0 points predicted 1 are dropped, so class 1 has no false positive from them
    assert r["labels"].tolist() == [1, 2, -1]
    np.testing.assert_array_equal(r["conf_matrix"], [[1, 0, 0], [1, 0, 0], [0, 0, 0]])
    # class 1: tp 1, fp 1, fn 0 -> IoU 1/2, recall 1; class 2: tp 0 -> IoU 0, recall 0
    assert r["metrics"] == pytest.approx({"macc": 1 / 2, "miou": 1 / 4, "fmiou": (1 / 2 * 1 + 0 * 1) / 2})


def test_relative_change_to_baseline() -> None:
    data = {
        "baseline": {"s": scene([1, 1, 1], [1, 1, -1])},  # every metric 2/3
        "dark": {"s": scene([1, 2], [2, 2])},  # macc 1/2, fmiou 1/4, miou 1/4
    }
    exact = osma.evaluate_conditions(data, round_percent=False)["relative_change"]
    assert set(exact) == {"dark"}
    # (1/2 - 2/3) / (2/3) = -1/4 ; (1/4 - 2/3) / (2/3) = -5/8
    assert exact["dark"] == pytest.approx({"macc": -1 / 4, "fmiou": -5 / 8, "miou": -5 / 8})
    # default: from percentages rounded to 2 decimals as resuls_visualizer.py: 66.67, 50.0, 25.0
    rounded = osma.evaluate_conditions(data)["relative_change"]["dark"]
    assert rounded["macc"] == pytest.approx((50.0 - 66.67) / 66.67, rel=1e-12)
    assert rounded["fmiou"] == pytest.approx((25.0 - 66.67) / 66.67, rel=1e-12)
    assert rounded["macc"] != pytest.approx(-1 / 4, rel=1e-9)


def test_relative_change_none_without_baseline_or_zero_baseline() -> None:
    missing = osma.evaluate_conditions({"dark": {"s": scene([1, 2], [2, 2])}})
    assert missing["relative_change"] == {"dark": {"macc": None, "fmiou": None, "miou": None}}
    zero = osma.evaluate_conditions({"baseline": {"s": scene([1, 1], [-1, -1])}, "dark": {"s": scene([1], [1])}})
    assert zero["conditions"]["baseline"]["overall"] == {"macc": 0.0, "fmiou": 0.0, "miou": 0.0}
    assert zero["relative_change"]["dark"] == {"macc": None, "fmiou": None, "miou": None}


# ---------------------------------------------------------------- bad input
def test_errors() -> None:
    pts, gt, pp, pl = scene([1, 2], [1, 2])
    with pytest.raises(SchemaError, match="gt_labels"):
        osma.evaluate_scene(pts, gt[:1], pp, pl)
    with pytest.raises(SchemaError, match="pred_labels"):
        osma.evaluate_scene(pts, gt, pp, pl[:1])
    bad = pts.copy()
    bad[1, 2] = np.nan
    with pytest.raises(SchemaError, match="gt_points.*finite"):
        osma.evaluate_scene(bad, gt, pp, pl)
    with pytest.raises(SchemaError, match="pred_points.*finite"):
        osma.evaluate_scene(pts, gt, bad, pl)
    with pytest.raises(SchemaError, match="gt_labels.*integer"):
        osma.evaluate_scene(pts, gt.astype(float), pp, pl)
    with pytest.raises(SchemaError, match="pred_labels.*1-D"):
        osma.evaluate_scene(pts, gt, pp, pl[:, None])
    with pytest.raises(SchemaError, match="gt_points.*at least one point"):
        osma.evaluate_scene(np.zeros((0, 3)), np.zeros(0, int), pp, pl)
    with pytest.raises(SchemaError, match=r"\(N, 3\)"):
        osma.evaluate_scene(pts[:, :2], gt, pp, pl)
    with pytest.raises(SchemaError, match="aggregate"):
        osma.evaluate_conditions({"baseline": {"s": scene([1], [1])}}, aggregate="median")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"<baseline/s>"):
        osma.evaluate_conditions({"baseline": {"s": (pts, gt[:1], pp, pl)}})


# ---------------------------------------------------------------- per-point class ids (labels.npy) as predictions
def test_point_label_predictions_read_and_checked(tmp_path) -> None:
    """A predictions folder with point_cloud.ply + labels.npy (ids of the GT class table) is scored as is; a labels.npy
    of the wrong length is one line naming it."""
    import json

    from evaluation.layout import osma_inputs
    from tiermap.formats.openlex3d import write_gt_cloud
    from tiermap.formats.predictions import write_predictions

    gt = tmp_path / "gt" / "room0"
    gt.mkdir(parents=True)
    pts = line([0.0, 1.0, 2.0, 3.0])
    write_gt_cloud(gt / "gt_cloud.ply", pts, np.array([1, 1, 2, 2]))
    (gt / "classes.json").write_text(json.dumps({"1": "chair", "2": "table"}))
    pred = tmp_path / "pred" / "dark"
    write_predictions(pred, pts, np.zeros((1, 2), np.float32), np.zeros(4, np.int64))
    (pred / "embeddings.npy").unlink()
    np.save(pred / "labels.npy", np.array([1, 2, 2, 2]))  # class ids 1 = chair, 2 = table (sorted names, 1-based)
    data = osma_inputs(gt / "gt_cloud.ply", None, gt / "classes.json", tmp_path / "pred", None, None, ("{}",))
    g_pts, g_lab, p_pts, p_lab = data["dark"]["room0"]
    assert g_lab.tolist() == [1, 1, 2, 2] and p_lab.tolist() == [1, 2, 2, 2] and p_pts.dtype == np.float64
    m = osma.evaluate_conditions(data, round_percent=False)
    assert m["conditions"]["dark"]["overall"]["macc"] == pytest.approx(0.75)  # chair 1/2, table 2/2
    np.save(pred / "labels.npy", np.array([1, 2, 2]))
    with pytest.raises(SchemaError) as err:
        osma_inputs(gt / "gt_cloud.ply", None, gt / "classes.json", tmp_path / "pred", None, None, ("{}",))
    assert str(err.value).startswith(f"{pred / 'labels.npy'}: field 'labels': expected integer class ids, shape (4,)")
