"""OpenLex3D query retrieval: AP / inverse rank on hand-computable scenes, alignment, quirks, bad input."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from evaluation import alignment
from evaluation.alignment import align_global, align_per_mask
from evaluation.retrieval import OVERLAP_THRESHOLDS, RetrievalScene, evaluate_retrieval
from tiermap.formats.base import SchemaError

# Embeddings / text vectors in 3-D. For text "a" = [1, 0, 0], cosines are X: 0.8, Y: 0.5, Z: 0, so
# s = (cos + 1)/2 = 0.9, 0.75, 0.5 and min-max confidences are X 1.0, Y 0.625, Z 0.0 (ranks 1, 2, 3).
# For text "b" = [0, 1, 0]: X 0.6, Y 0, Z 0 -> confidences X 1.0, Y 0.0, Z 0.0.
X, Y, Z = [0.8, 0.6, 0.0], [0.5, 0.0, math.sqrt(0.75)], [0.0, 0.0, 1.0]
TEXT = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.0, 0.0, -1.0], "ab": [0.6, 0.8, 0.0],
        "onlyA": [0.5, 0.0, math.sqrt(0.75)], "onlyB": [0.8, 0.6, 0.0]}
ALL = ("all_ap", "all_ap_50%", "all_ap_25%")


def features(table: dict[str, list[float]] = TEXT) -> Callable[[list[str]], np.ndarray]:
    """A text encoder backed by a dict."""
    return lambda texts: np.array([table[t] for t in texts], np.float32)


def line(x: float, n: int) -> np.ndarray:
    """n points 10 cm apart along y at (x, ., 0): far beyond the 3.16 cm alignment radius of each other."""
    return np.column_stack([np.full(n, x), 0.1 * np.arange(n), np.zeros(n)])


def scene(objects: dict[int, np.ndarray], instances: list[np.ndarray], emb: list[list[float]],
          queries: dict[str, dict[str, list[int]]], name: str = "s", unassigned: np.ndarray | None = None
          ) -> RetrievalScene:
    """GT objects {id: points}; predicted instance i = instances[i] with embedding emb[i]; optional -1 points."""
    gt = np.concatenate(list(objects.values()))
    ids = np.concatenate([np.full(len(p), k) for k, p in objects.items()])
    extra = np.zeros((0, 3)) if unassigned is None else unassigned
    pred = np.concatenate([*instances, extra]) if instances else extra
    index = np.concatenate([np.full(len(p), i) for i, p in enumerate(instances)] + [np.full(len(extra), -1)])
    return RetrievalScene(name, gt, ids, queries, pred, index.astype(np.int64), np.array(emb, np.float32))


A, B, C = line(0.0, 3), line(1.0, 2), line(2.0, 4)  # objects 1, 2, 3


def ap(scenes: list[RetrievalScene], **kw: object) -> dict:
    """Evaluate with the test encoder."""
    return evaluate_retrieval(scenes, features(), **kw)


def assert_all(res: dict, value: float) -> None:
    """Every AP average equals value."""
    for k in ALL:
        assert res[k] == pytest.approx(value, abs=1e-9), (k, res)


# ---------------------------------------------------------------- AP
def test_thresholds_are_the_official_ten() -> None:
    assert len(OVERLAP_THRESHOLDS) == 10 and OVERLAP_THRESHOLDS[-1] == 0.25
    assert OVERLAP_THRESHOLDS[0] == 0.5 and OVERLAP_THRESHOLDS[8] == pytest.approx(0.9)


def test_perfect_prediction_gives_ap_100() -> None:
    # Queries a/b/c rank their own instance first (conf 1) and the others after (conf 0, no overlap -> FP).
    # Pooled: 3 TP at 1.0, 6 FP at 0.0. Score 0: tp 3, fp 6 -> p 1/3, r 1; score 1: tp 3, fp 0 -> p 1, r 1;
    # end (p 1, r 0). Steps (r_{i-1} - r_{i+1})/2 = 0, 0.5, 0.5 -> AP = 0.5 + 0.5 = 1 -> 100 at every IoU.
    emb = [[1, 0, 0], [0, 1, 0], [0, 0, -1]]
    s = scene({1: A, 2: B, 3: C}, [A, B, C], emb, {"level0": {"a": [1], "b": [2]}, "level1": {"c": [3]}})
    res = ap([s])
    assert_all(res["overall"], 100.0)
    assert_all(res["per_scene"]["s"], 100.0)
    assert res["kind"] == "retrieval" and res["metric"] == "ap" and res["n_queries"] == 3
    assert res["n_instances"] == {"gt": 3, "pred": 9, "aligned_masks": 3}
    assert res["skipped_gt_objects"] == 0


def test_wrong_top1_right_at_rank_2() -> None:
    # Instances X -> B's mask, Y -> A's mask, Z -> C's mask; top_k 2.
    # Query a (GT A): X 1.0 (no overlap: FP), Y 0.625 (TP). Query b (GT B): X 1.0 (TP), Y or Z 0.0 (FP).
    # Sorted: 0.0 F, 0.625 T, 1.0 T, 1.0 F.  score 0: tp 2 fp 2 -> p 1/2 r 1; 0.625: tp 2 fp 1 -> p 2/3 r 1;
    # 1.0: tp 1 fp 1 fn 1 -> p 1/2 r 1/2; end p 1 r 0.  Steps: 0, (1-.5)/2, (1-0)/2, (.5-0)/2 = 0, .25, .5, .25.
    # AP = 2/3*.25 + .5*.5 + 1*.25 = 2/3.
    s = scene({1: A, 2: B, 3: C}, [B, A, C], [X, Y, Z], {"level0": {"a": [1], "b": [2]}})
    assert_all(ap([s], top_k=2)["overall"], 200 / 3)


def test_iou_exactly_at_threshold_is_not_a_match() -> None:
    # GT A has 4 points, the prediction covers 2: IoU 2/(4+2-2) = 0.5, not > 0.5 -> FP (p 0) at 0.50..0.90,
    # TP at 0.25 (p 1, r 1 -> AP 1).  mAP = 0, AP50 = 0, AP25 = 100.
    a4 = line(0.0, 4)
    s = scene({1: a4}, [a4[:2]], [X], {"level0": {"a": [1]}})
    res = ap([s], top_k=1)["overall"]
    assert (res["all_ap"], res["all_ap_50%"], res["all_ap_25%"]) == (0.0, 0.0, 100.0)
    # 3 of 5 points: IoU 0.6 beats 0.5 and 0.55 only -> mAP = 2/9 * 100.
    a5 = line(0.0, 5)
    res = ap([scene({1: a5}, [a5[:3]], [X], {"level0": {"a": [1]}})], top_k=1)["overall"]
    assert res["all_ap"] == pytest.approx(200 / 9) and res["all_ap_50%"] == 100.0


def test_duplicate_fp_stays_unvisited_and_matches_a_later_gt() -> None:
    # Query a lists object 1 twice -> two identical GT instances. X and Y both cover A (IoU 1).
    # GT1: X -> TP 1.0 (visited); Y -> duplicate FP scored min(1.0, 0.625), NOT visited.
    # GT2: X visited, Y -> TP 0.625.  Sorted: .625 T, .625 F, 1.0 T.
    # .625: tp 2 fp 1 -> p 2/3 r 1; 1.0: tp 1 fp 0 -> p 1 r 1/2; end.  Steps .25, .5, .25.
    # AP = 2/3*.25 + 1*.5 + 1*.25 = 11/12.
    s = scene({1: A, 2: B}, [A, A, B], [X, Y, Z], {"level0": {"a": [1, 1]}})
    assert_all(ap([s], top_k=2)["overall"], 1100 / 12)


def test_clip_threshold_links_predictions_in_instance_order() -> None:
    # As above but the instances are [Y, X] and criteria clip_threshold (0.5): predictions are created instance by
    # instance, so each GT sees Y (0.625) before X (1.0).  GT1: Y TP (visited), X duplicate FP min(.625, 1) = .625,
    # GT score 1.0.  GT2: Y visited, X TP 1.0.  Sorted: .625 F, 1.0 T, 1.0 T.
    # .625: tp 2 fp 1 -> p 2/3 r 1; 1.0: tp 2 fp 0 -> p 1 r 1; end.  Steps 0, .5, .5 -> AP 1.
    s = scene({1: A, 2: B}, [A, A, B], [Y, X, Z], {"level0": {"a": [1, 1]}})
    assert_all(ap([s], criteria="clip_threshold")["overall"], 100.0)
    assert_all(ap([s], top_k=2)["overall"], 1100 / 12)  # confidence order X, Y: as the test above


def test_two_scenes_pool_into_one_curve() -> None:
    # Scene 1: query a, top-1 X covers A -> TP 1.0 -> AP 100.  Scene 2: top-1 X covers B -> FP 1.0, A missed -> 0.
    # Pooled: 1.0 T, 1.0 F, hard FN 1 -> one point tp 1 fp 1 fn 1: p 1/2, r 1/2; end (1, 0).
    # Steps (.5-0)/2, (.5-0)/2 -> AP = .5*.25 + 1*.25 = 0.375, not the per-scene mean 50.
    s1 = scene({1: A, 2: B}, [A, B], [X, Y], {"level0": {"a": [1]}}, name="one")
    s2 = scene({1: A, 2: B}, [B, A], [X, Y], {"level0": {"a": [1]}}, name="two")
    res = ap([s1, s2], top_k=1)
    assert_all(res["per_scene"]["one"], 100.0)
    assert_all(res["per_scene"]["two"], 0.0)
    assert_all(res["overall"], 37.5)


def test_no_prediction_gives_zero_and_no_gt_gives_nan() -> None:
    # Predicted points 5 m away align to nothing: GT but no prediction -> AP 0.
    far = scene({1: A}, [A + 5.0], [X], {"level0": {"a": [1]}}, name="far")
    # Queries only naming ids absent from the cloud: no GT -> NaN, and the skipped ids are counted.
    nogt = scene({1: A}, [A], [X], {"level0": {"a": [7, 8]}, "level1": {"b": [9]}}, name="nogt")
    res = ap([far, nogt])
    assert_all(res["per_scene"]["far"], 0.0)
    assert all(math.isnan(res["per_scene"]["nogt"][k]) for k in ALL)
    assert res["skipped_gt_objects"] == 3
    # Pooled: far's GT, nogt's predictions (FPs only) -> AP 0.
    assert_all(res["overall"], 0.0)
    with pytest.raises(SchemaError, match="object ids present in gt_ids"):
        evaluate_retrieval([nogt], features(), skip_missing_objects=False)


def test_clip_threshold_criteria() -> None:
    # Threshold 0.7: query a keeps X only (1.0; Y 0.625 and Z 0 dropped), query b keeps X (1.0).
    # X covers B: a/X FP 1.0, b/X TP 1.0, A missed.  One point p 1/2 r 1/2 -> AP 0.375 (as the pooled test).
    s = scene({1: A, 2: B, 3: C}, [B, A, C], [X, Y, Z], {"level0": {"a": [1], "b": [2]}})
    assert_all(ap([s], criteria="clip_threshold", clip_threshold=0.7)["overall"], 37.5)
    # Threshold 0.5 also keeps a/Y (0.625, TP): .625 T, 1.0 T, 1.0 F -> p 2/3 r 1; p 1/2 r 1/2; end.
    # Steps .25, .5, .25 -> AP = 2/3*.25 + .5*.5 + .25 = 2/3.
    res = ap([s], criteria="clip_threshold", clip_threshold=0.5)
    assert_all(res["overall"], 200 / 3)
    assert res["n_instances"]["pred"] == 3


# ---------------------------------------------------------------- alignment
def test_squared_distance_threshold() -> None:
    # 0.001 is a SQUARED distance: 0.03^2 = 0.0009 < 0.001 aligns, 0.033^2 = 0.001089 does not.
    gt = {1: np.zeros((1, 3))}
    near = scene(gt, [np.array([[0.03, 0, 0]])], [X], {"level0": {"a": [1]}}, name="near")
    far = scene(gt, [np.array([[0.033, 0, 0]])], [X], {"level0": {"a": [1]}}, name="far")
    res = ap([near, far])
    assert_all(res["per_scene"]["near"], 100.0)
    assert_all(res["per_scene"]["far"], 0.0)
    assert res["n_instances"]["aligned_masks"] == 1


def test_per_mask_overlaps_but_global_takes_the_nearest() -> None:
    # GT A = points at y 0 and 0.02. X has a point at y 0, Y at y 0.025; both are within 3.16 cm of both GT points.
    # per_mask: X's and Y's masks are both {0, 1} -> top-1 X has IoU 1 -> 100.
    # global: point 0 -> X, point 1 -> Y -> X's mask {0}: IoU 1/2 -> AP 0 at 0.5..0.9, 100 at 0.25.
    pts = np.array([[0.0, 0.0, 0.0], [0.0, 0.02, 0.0]])
    s = scene({1: pts}, [pts[:1], np.array([[0.0, 0.025, 0.0]])], [X, Y], {"level0": {"a": [1]}})
    assert_all(ap([s], top_k=1)["overall"], 100.0)
    res = ap([s], top_k=1, alignment="global")["overall"]
    assert (res["all_ap"], res["all_ap_50%"], res["all_ap_25%"]) == (0.0, 0.0, 100.0)


def test_unassigned_points_compete_in_global_alignment_only() -> None:
    # A = y 0 and 0.1. X: points at y 0.02 and 0.1; an unassigned (-1) point sits exactly on y 0.
    # per_mask ignores -1: X = {0, 1}, IoU 1.  global (official): GT point 0's nearest is the -1 point, so X = {1},
    # IoU 1/2 -> AP50 0, AP25 100.  global without competition: X = {0, 1} -> 100.
    a2 = line(0.0, 2)
    s = scene({1: a2}, [np.array([[0.0, 0.02, 0.0], [0.0, 0.1, 0.0]])], [X], {"level0": {"a": [1]}},
              unassigned=np.zeros((1, 3)))
    assert_all(ap([s])["overall"], 100.0)
    res = ap([s], alignment="global")["overall"]
    assert (res["all_ap_50%"], res["all_ap_25%"]) == (0.0, 100.0)
    assert_all(ap([s], alignment="global", unassigned_compete=False)["overall"], 100.0)


@pytest.mark.parametrize("thr, grid, spread", [
    (0.0004, True, 0.0), (0.001, True, 0.0), (0.004, True, 0.0), (0.001, False, 0.0), (0.001, True, 1e5)])
def test_alignment_matches_brute_force(thr: float, grid: bool, spread: float, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    # Clustered random clouds with interleaved instances (many mixed cells), checked against all-pairs distances;
    # also with the sorted-key cell lookup instead of the dense grid, and with clusters 100 km apart
    # (cells then wider than the radius).
    if not grid:
        monkeypatch.setattr(alignment, "_GRID_CELLS", 0)
    rng = np.random.default_rng(int(thr * 1e4))
    shift = np.array([[0.0, 0.0, 0.0], [spread, 0.0, 0.0]])  # every other point in a far cluster
    gt = (rng.normal(0, 0.08, (600, 3)) + shift[np.arange(600) % 2]).astype(np.float32).astype(np.float64)
    pred = (rng.normal(0, 0.08, (900, 3)) + shift[np.arange(900) % 2]).astype(np.float32).astype(np.float64)
    index = rng.integers(-1, 12, len(pred))
    d2 = np.square(gt[:, None, :] - pred[None, :, :]).sum(-1)
    want = {(g, int(index[p])) for g, p in zip(*np.nonzero(d2 < thr)) if index[p] >= 0}
    g, i = align_per_mask(gt, pred, index, thr)
    assert len(g) == len(want) and set(zip(g.tolist(), i.tolist())) == want and len(want) > 500
    nn = d2.argmin(1)
    want_g = {(g, int(index[nn[g]])) for g in range(len(gt)) if d2[g, nn[g]] < thr and index[nn[g]] >= 0}
    g, i = align_global(gt, pred, index, thr, True)
    assert set(zip(g.tolist(), i.tolist())) == want_g and len(want_g) > 100


# ---------------------------------------------------------------- inverse rank
def test_inverse_rank_hand_case() -> None:
    # Query b finds B at rank 1 (X), query a finds A at rank 2 (Y), query c's object 3 has no prediction -> -1.
    # Mean of 1/1, 1/2, 0 = 0.5.
    s = scene({1: A, 2: B, 3: C}, [B, A], [X, Y], {"level0": {"a": [1], "b": [2], "c": [3]}})
    res = ap([s], metric="rank", top_k=3)
    assert res["overall"] == {"avg_inverse_rank": pytest.approx(0.5)}
    assert res["per_scene"]["s"]["avg_inverse_rank"] == pytest.approx(0.5)


def test_inverse_rank_subtracts_positions_within_a_query() -> None:
    # Query "ab" = objects 1 and 2; "ab" text ranks X (B) 1st, Y (A) 2nd: ranks [1, 2] -> [1 - 0, 2 - 1] = [1, 1].
    # Mean 1/1 = 1.0 (0.75 without the per-query adjustment).
    s = scene({1: A, 2: B}, [B, A], [X, Y], {"level0": {"ab": [1, 2]}})
    assert ap([s], metric="rank")["overall"]["avg_inverse_rank"] == pytest.approx(1.0)
    # Both IoUs are 1, so they still beat a 0.99 threshold.
    assert ap([s], metric="rank", iou_threshold=0.99)["overall"]["avg_inverse_rank"] == pytest.approx(1.0)


def test_inverse_rank_respects_iou_threshold() -> None:
    # The only prediction covers 2 of A's 4 points: IoU 0.5. iou_threshold 0.25 -> rank 1 -> 1.0; 0.5 -> -1 -> 0.
    a4 = line(0.0, 4)
    s = scene({1: a4}, [a4[:2]], [X], {"level0": {"a": [1]}})
    assert ap([s], metric="rank")["overall"]["avg_inverse_rank"] == 1.0
    assert ap([s], metric="rank", iou_threshold=0.5)["overall"]["avg_inverse_rank"] == 0.0


# ---------------------------------------------------------------- bad input
def good() -> RetrievalScene:
    """A valid scene to corrupt."""
    return scene({1: A, 2: B}, [A, B], [X, Y], {"level0": {"a": [1]}})


@pytest.mark.parametrize("change, field", [
    (lambda s: setattr(s, "pred_index", np.r_[s.pred_index[:-1], -2]), "pred_index"),
    (lambda s: setattr(s, "pred_index", np.r_[s.pred_index[:-1], 2]), "pred_index"),
    (lambda s: setattr(s, "pred_index", s.pred_index[:-1]), "pred_index"),
    (lambda s: s.pred_embeddings.__setitem__((0, 1), np.nan), "pred_embeddings"),
    (lambda s: s.pred_embeddings.__setitem__((1, 0), np.inf), "pred_embeddings"),
    (lambda s: setattr(s, "pred_embeddings", np.ones((2, 4), np.float32)), "pred_embeddings"),
    (lambda s: setattr(s, "queries", {"level0": {"  ": [1]}}), "queries.level0"),
    (lambda s: setattr(s, "queries", {"level0": {"a": ["1"]}}), "queries.level0.a"),
    (lambda s: setattr(s, "gt_ids", s.gt_ids[:-1]), "gt_ids"),
])
def test_bad_input_raises_schema_error(change: Callable[[RetrievalScene], None], field: str) -> None:
    s = good()
    change(s)
    with pytest.raises(SchemaError) as err:
        ap([s])
    assert err.value.field == field and err.value.path == "<s>" and "\n" not in str(err.value)


def test_bad_text_features_and_options() -> None:
    with pytest.raises(SchemaError, match="1 rows"):
        evaluate_retrieval([good()], lambda t: np.ones((2, 3), np.float32))
    with pytest.raises(SchemaError, match="finite"):
        evaluate_retrieval([good()], lambda t: np.full((1, 3), np.nan, np.float32))
    with pytest.raises(SchemaError, match="metric"):
        ap([good()], metric="map")
    with pytest.raises(SchemaError, match="top_k"):
        ap([good()], top_k=0)
    with pytest.raises(SchemaError, match="unique scene names"):
        ap([good(), good()])


# ---------------------------------------------------------------- ties: bit for bit against the official procedure
def shared_rows_scene(seed: int, name: str) -> tuple[RetrievalScene, dict[str, np.ndarray]]:
    """80 instances on 40 objects, their 384-d embeddings drawn from 10 rows (8 instances share each row)."""
    rng = np.random.default_rng(seed)
    objects = {k: line(0.5 * k, 4) for k in range(1, 41)}
    insts = [objects[1 + i % 40][: 2 + i % 3] for i in range(80)]  # 2-4 of the object's 4 points: IoU .5-1
    rows = rng.normal(size=(10, 384)).astype(np.float32)
    emb = rows[rng.permutation(np.arange(80) % 10)]
    texts = {f"{name}{j}": (rows[j % 10] + rng.normal(0, 0.3, 384)).astype(np.float32) for j in range(30)}
    queries = {"level0": {t: sorted(rng.choice(np.arange(1, 41), 3, replace=False).tolist()) for t in texts}}
    s = scene(objects, insts, [], queries, name=name)
    s.pred_embeddings = emb
    return s, texts


def test_shared_embedding_rows_match_the_official_ranking_bit_for_bit() -> None:
    # Instances sharing an embedding row have exactly equal official confidences (torch cosine), so each query's
    # top 5 cuts a group of 8 tied instances; which ones make it and in which order is np.argsort's. A float32 matrix
    # product splits such rows by up to ~2.4e-7 and picks others. Reference: tests/official_retrieval.py.
    from tests import official_retrieval as official

    scenes = [shared_rows_scene(1, "a"), shared_rows_scene(2, "b")]
    table = {t: v for _, texts in scenes for t, v in texts.items()}
    enc = features({t: list(v) for t, v in table.items()})
    matches = [official.scene_matches(s.gt_points, s.gt_ids, s.queries, s.pred_points, s.pred_index,
                                      s.pred_embeddings, table, top_k=5) for s, _ in scenes]
    res = evaluate_retrieval([s for s, _ in scenes], enc, top_k=5)
    assert res["overall"] == official.average_precision(matches)
    assert res["per_scene"]["a"] == official.average_precision(matches[:1])
    assert 0 < res["overall"]["all_ap"] < res["overall"]["all_ap_25%"] < 100
    rank = evaluate_retrieval([s for s, _ in scenes], enc, top_k=5, metric="rank")
    assert rank["overall"]["avg_inverse_rank"] == official.inverse_rank(matches)


@pytest.mark.parametrize("dim, n, dtype, groups, criteria, k", [
    (384, 150, np.float32, 0, "top_k", 10),  # distinct rows: screened, exact top k + 1 only
    (384, 150, np.float32, -1, "top_k", 10),  # one row 12 times: some queries tie, the others do not
    (384, 150, np.float32, 20, "top_k", 10),  # shared rows: every query ties, whole exact columns
    (1024, 60, np.float32, 7, "top_k", 3),
    (64, 120, np.float64, 15, "top_k", 10),  # float64 embeddings: torch computes the cosine in float64
    (384, 100, np.float16, -1, "top_k", 10),  # float16: rows normalised in float16, products in float32
    (8, 9, np.float32, 3, "top_k", 10),  # fewer rows than k + 1
    (64, 90, np.float32, 10, "clip_threshold", 10),
])
def test_predictions_equal_the_official_creation(dim: int, n: int, dtype: type, groups: int, criteria: str,
                                                 k: int) -> None:
    from evaluation.query_confidence import predictions
    from tests import official_retrieval as official

    rng = np.random.default_rng(dim + n)
    emb = rng.normal(size=(n, dim)) * rng.uniform(0.2, 5, (n, 1))
    if groups > 0:
        emb = emb[rng.integers(0, groups, n)]
    elif groups < 0:
        emb[rng.choice(n, 12, replace=False)] = emb[0]
    if dtype != np.float16:  # float16 underflows the 1e-8 clamp: the official makes a zero row NaN
        emb[3] = 0.0  # a zero row: norm clamped to 1e-8, similarity 0
    text = rng.normal(size=(25, dim)).astype(np.float32)
    text[:10] = emb[rng.integers(0, n, 10)] + rng.normal(0, 0.1, (10, dim))  # queries near some rows
    aligned = rng.random(n) < 0.8
    want = official.predictions(emb.astype(dtype), text, set(np.flatnonzero(aligned).tolist()), criteria, k)
    q, i, conf, rank = predictions(emb.astype(dtype), text, aligned, criteria, k, 0.5)
    assert list(zip(q.tolist(), i.tolist(), conf.tolist(), rank.tolist())) == want
    assert len(want) > 25
