"""OpenLex3D open-set object retrieval: query AP (mAP, AP50, AP25) and average inverse rank.

Reproduces `openlex3d/openlex3d` `scripts/evaluate_queries.py` (GT instances, prediction creation, matching),
`core/cosine_similarity.py` (query confidences) and `core/metric.py` (`compute_ap`, `compute_ap_averages`,
`compute_query_inverse_rank`) with numpy/scipy: sparse products instead of `np.intersect1d` loops. Mask alignment
(`core/align_masks.py`) is in `evaluation.alignment`.

Official behaviour kept by default: all queries of all scenes pooled into one class for AP; a second match of a GT
is an FP that stays unvisited (it can still be another GT's TP); min-max confidence over all embedding rows; top-k
entries without an aligned mask dropped (fewer than k predictions); query object ids absent from the GT cloud
skipped, and counted in `skipped_gt_objects` (`skip_missing_objects=False` raises instead).

Confidences, top-k sets and ranks are the official ones bit for bit (`evaluation.query_confidence`): the same torch
float32 cosine values, and where confidences tie, the same `np.argsort` call on the same column (not stable; its order
for equal values is fixed for a given numpy build and CPU). Tie order matters: it decides which of several equally
confident instances enter the top k and which of them a GT takes first (a visited prediction cannot be another GT's
TP), so AP and ranks depend on it; only the PR curve itself does not (one point per unique score). What can still
differ is the mask alignment near its threshold (FAISS float32 distances; see `evaluation.alignment`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from tqdm import tqdm

from evaluation import arrays
from evaluation.alignment import ALIGNMENTS, align_global, align_per_mask
from tiermap.formats.base import SchemaError

# Official `opt["overlap_thresholds"]` (evaluate_queries.py); the same float expression, so 0.6 is 0.6000000000000001.
OVERLAP_THRESHOLDS = np.append(np.arange(0.5, 0.95, 0.05), 0.25)
METRICS = ("ap", "rank")
CRITERIA = ("top_k", "clip_threshold")
_EMPTY = np.zeros(0, np.int64)


@dataclass
class RetrievalScene:
    """One scene: full GT cloud with object ids, its query file, and a method's instance predictions."""

    name: str
    gt_points: np.ndarray
    gt_ids: np.ndarray
    queries: dict[str, dict[str, list[int]]]
    pred_points: np.ndarray
    pred_index: np.ndarray
    pred_embeddings: np.ndarray


@dataclass
class _Matches:
    """A scene's GT instances, predicted instances and their intersecting pairs (in `matched_pred` order)."""

    gt_count: np.ndarray  # (G,) vert_count
    gt_query: np.ndarray  # (G,) query code, distinct per scene when pooled
    pred_conf: np.ndarray  # (P,) confidence
    pred_rank: np.ndarray  # (P,) 1-based rank among all embedding rows
    pred_count: np.ndarray  # (P,) aligned mask size
    link_gt: np.ndarray  # (L,) sorted by GT, then prediction order
    link_pred: np.ndarray
    link_inter: np.ndarray
    n_queries: int
    n_aligned: int
    skipped: int


# ---------------------------------------------------------------- validation
def _queries(queries: Any, path: str) -> list[tuple[str, str, list[int]]]:
    """Flatten {level: {text: ids}} to (query id, text, ids) in file order, as `load_query_json`."""
    if not isinstance(queries, Mapping):
        raise SchemaError(path, "queries", "a mapping level -> {query text: object ids}", type(queries).__name__)
    out = []
    for level, sub in queries.items():
        if not isinstance(level, str) or not isinstance(sub, Mapping):
            raise SchemaError(path, f"queries.{level}", "a mapping query text -> object ids", type(sub).__name__)
        for text, ids in sub.items():
            if not isinstance(text, str) or not text.strip():
                raise SchemaError(path, f"queries.{level}", "a non-blank query text", text)
            if not isinstance(ids, (Sequence, np.ndarray)) or isinstance(ids, str) or not all(
                    isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
                raise SchemaError(path, f"queries.{level}.{text}", "a list of integer object ids", ids)
            out.append((f"{level}_{text}", text, [int(i) for i in ids]))
    return out


def _option(ok: bool, field: str, expected: str, got: Any) -> None:
    """SchemaError for a bad keyword option."""
    if not ok:
        raise SchemaError("<evaluate_retrieval>", field, expected, got)


# ---------------------------------------------------------------- one scene
def _scene_matches(scene: RetrievalScene, text_rows: dict[str, np.ndarray], *, criteria: str, top_k: int,
                   clip_threshold: float, alignment: str, alignment_threshold: float,
                   skip_missing_objects: bool, unassigned_compete: bool) -> _Matches:
    """GT instances, aligned predicted instances and their intersections for one scene."""
    from evaluation.query_confidence import predictions  # imports torch: only when scoring

    path = f"<{scene.name}>"
    # Cast to float32 first, as the official code does before FAISS.
    gt = arrays.points(scene.gt_points, path, "gt_points", allow_empty=True).astype(np.float32).astype(np.float64)
    gt_ids = arrays.ints(scene.gt_ids, path, "gt_ids", len(gt))
    pred = arrays.points(scene.pred_points, path, "pred_points", allow_empty=True).astype(np.float32).astype(np.float64)
    index = arrays.ints(scene.pred_index, path, "pred_index", len(pred))
    emb = arrays.matrix(scene.pred_embeddings, path, "pred_embeddings", min_rows=1)
    n_inst = emb.shape[0]
    bad = (index < -1) | (index >= n_inst)
    if bad.any():
        raise SchemaError(path, "pred_index", f"values in [-1, {n_inst - 1}] (rows of pred_embeddings, -1 unassigned)",
                          int(index[bad][0]))
    queries = _queries(scene.queries, path)
    text = np.stack([text_rows[t] for _, t, _ in queries]) if queries else np.zeros((0, emb.shape[1]), np.float32)
    if text.shape[1] != emb.shape[1]:
        raise SchemaError(path, "pred_embeddings", f"dimension {text.shape[1]} (the text features')", emb.shape[1])

    obj_table, obj_of_point, obj_count = np.unique(gt_ids, return_inverse=True, return_counts=True)
    qids = [qid for qid, _, _ in queries]
    _, qcode = np.unique(np.array(qids), return_inverse=True) if qids else (None, _EMPTY)
    gq, gobj, skipped = [], [], 0
    for (qid, _, ids), code in zip(queries, qcode):
        for oid in ids:
            pos = int(np.searchsorted(obj_table, oid))
            if pos < len(obj_table) and obj_table[pos] == oid:
                gq.append(code)
                gobj.append(pos)
            elif skip_missing_objects:  # create_gt_instances silently skips ids absent from the cloud
                skipped += 1
            else:
                raise SchemaError(path, f"queries.{qid}", "object ids present in gt_ids", oid)
    gt_query, gt_obj = np.array(gq, np.int64), np.array(gobj, np.int64)

    if alignment == "global":
        ag, ai = align_global(gt, pred, index, alignment_threshold, unassigned_compete)
    else:
        ag, ai = align_per_mask(gt, pred, index, alignment_threshold)
    inst_count = np.bincount(ai, minlength=n_inst)
    inter = sparse.coo_matrix((np.ones(len(ag), np.int64), (obj_of_point[ag], ai)),
                              shape=(len(obj_table), n_inst)).tocsr()

    raw = np.asarray(scene.pred_embeddings)
    # torch computes the cosine in the embeddings' own float dtype (float16 too); integers become float32
    pq, pi, conf, rank = predictions(raw if raw.dtype.kind == "f" else emb.astype(np.float32), text, inst_count > 0,
                                     criteria, top_k, clip_threshold)
    pq = qcode[pq] if len(pq) else _EMPTY

    # Pair every prediction with every GT instance of the same query id; keep intersection > 0.
    g_order = np.argsort(gt_query, kind="stable")
    n_codes = len(qids)
    g_cnt = np.bincount(gt_query, minlength=n_codes)
    g_start = np.cumsum(g_cnt) - g_cnt
    lp = np.repeat(np.arange(len(pq)), g_cnt[pq]) if len(pq) else _EMPTY
    lg = g_order[arrays.ranges(g_start[pq], g_cnt[pq])] if len(pq) else _EMPTY
    li = np.asarray(inter[gt_obj[lg], pi[lp]]).ravel().astype(np.int64) if len(lg) else _EMPTY
    keep = li > 0
    lg, lp, li = lg[keep], lp[keep], li[keep]
    order = np.lexsort((lp, lg))
    return _Matches(gt_count=obj_count[gt_obj], gt_query=gt_query, pred_conf=conf.astype(np.float64),
                    pred_rank=rank.astype(np.int64), pred_count=inst_count[pi], link_gt=lg[order],
                    link_pred=lp[order], link_inter=li[order], n_queries=len(queries),
                    n_aligned=int((inst_count > 0).sum()), skipped=skipped)


def _pool(ms: list[_Matches]) -> _Matches:
    """Concatenate scenes, offsetting GT, prediction and query indices."""
    go = np.cumsum([0] + [len(m.gt_count) for m in ms])
    po = np.cumsum([0] + [len(m.pred_conf) for m in ms])
    qo = np.cumsum([0] + [m.n_queries for m in ms])
    cat = np.concatenate
    return _Matches(
        gt_count=cat([m.gt_count for m in ms]), gt_query=cat([m.gt_query + o for m, o in zip(ms, qo)]),
        pred_conf=cat([m.pred_conf for m in ms]), pred_rank=cat([m.pred_rank for m in ms]),
        pred_count=cat([m.pred_count for m in ms]), link_gt=cat([m.link_gt + o for m, o in zip(ms, go)]),
        link_pred=cat([m.link_pred + o for m, o in zip(ms, po)]), link_inter=cat([m.link_inter for m in ms]),
        n_queries=int(qo[-1]), n_aligned=sum(m.n_aligned for m in ms), skipped=sum(m.skipped for m in ms))


def _empty_matches() -> _Matches:
    """Matches of no scene."""
    z = np.zeros(0)
    return _Matches(_EMPTY, _EMPTY, z, _EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY, 0, 0, 0)


# ---------------------------------------------------------------- metrics
def _link_iou(m: _Matches) -> np.ndarray:
    """IoU of each linked (GT, prediction) pair."""
    return m.link_inter / (m.gt_count[m.link_gt] + m.pred_count[m.link_pred] - m.link_inter)


def _pr_ap(y_true: np.ndarray, y_score: np.ndarray, hard_fn: int) -> float:
    """Area under the PR curve exactly as compute_ap (one point per unique score, artificial (r=0, p=1) end)."""
    order = np.argsort(y_score)
    ys, yt = y_score[order], y_true[order]
    cs = np.cumsum(yt)
    _, first = np.unique(ys, return_index=True)
    n_true = cs[-1] if len(cs) else 0
    before = np.append(cs, 0)[first - 1]
    tp = n_true - before
    fp = len(ys) - first - tp
    fn = before + hard_fn
    precision = np.append(tp / (tp + fp), 1.0)
    recall = np.append(tp / (tp + fn), 0.0)
    steps = np.convolve(np.concatenate([recall[:1], recall, [0.0]]), [-0.5, 0, 0.5], "valid")
    return float(np.dot(precision, steps))


def _ap_at(m: _Matches, iou: np.ndarray, th: float) -> float:
    """compute_ap for one overlap threshold, greedy matching and FP rules included."""
    n_pred = len(m.pred_conf)
    valid = iou > th
    vg, vp = m.link_gt[valid], m.link_pred[valid]
    vc = m.pred_conf[vp]
    per_pred = np.bincount(vp, minlength=n_pred)
    tp: list[np.ndarray] = []
    dup: list[np.ndarray] = []
    if len(vg):
        starts = np.flatnonzero(np.r_[True, vg[1:] != vg[:-1]])
        lengths = np.diff(np.r_[starts, len(vg)])
        shared = np.logical_or.reduceat(per_pred[vp] >= 2, starts)
        # Segments whose predictions link to no other GT cannot be affected by pred_visited: vectorised.
        s, n = starts[~shared], lengths[~shared]
        run = vc[s]
        for j in range(1, int(n.max()) if len(n) else 0):
            on = n > j
            c = vc[s[on] + j]
            # A second match of the same GT is an FP scored min(current, conf); the GT keeps the max.
            dup.append(np.minimum(run[on], c))
            run[on] = np.maximum(run[on], c)
        tp.append(run)
        visited = np.zeros(n_pred, bool)
        for s0, n0 in zip(starts[shared].tolist(), lengths[shared].tolist()):
            cur = None
            for p in vp[s0:s0 + n0].tolist():
                if visited[p]:
                    continue
                c = float(m.pred_conf[p])
                if cur is None:
                    cur, visited[p] = c, True
                else:  # this FP is NOT marked visited: it may still be the TP of a later GT
                    dup.append(np.array([min(cur, c)]))
                    cur = max(cur, c)
            if cur is not None:
                tp.append(np.array([cur]))
    tp_scores = np.concatenate(tp) if tp else np.zeros(0)
    dup_scores = np.concatenate(dup) if dup else np.zeros(0)
    lone = m.pred_conf[per_pred == 0]  # no linked GT above th, visited or not
    y_score = np.concatenate([tp_scores, dup_scores, lone])
    y_true = np.concatenate([np.ones(len(tp_scores)), np.zeros(len(dup_scores) + len(lone))])
    return _pr_ap(y_true, y_score, len(m.gt_count) - len(tp_scores))


def _average_precision(m: _Matches) -> dict[str, float]:
    """compute_ap over the pooled matches (one class), then compute_ap_averages (x100)."""
    if len(m.gt_count) == 0:
        aps = np.full(len(OVERLAP_THRESHOLDS), np.nan)
    elif len(m.pred_conf) == 0:
        aps = np.zeros(len(OVERLAP_THRESHOLDS))
    else:
        iou = _link_iou(m)
        aps = np.array([_ap_at(m, iou, th) for th in OVERLAP_THRESHOLDS])
    aps = aps.reshape(1, 1, -1)
    o50 = np.where(np.isclose(OVERLAP_THRESHOLDS, 0.5))
    o25 = np.where(np.isclose(OVERLAP_THRESHOLDS, 0.25))
    o_rest = np.where(np.logical_not(np.isclose(OVERLAP_THRESHOLDS, 0.25)))
    # Same index expressions as compute_ap_averages so nanmean sums the same array shapes.
    out = {}
    for name, sel in (("all_ap", o_rest), ("all_ap_50%", o50), ("all_ap_25%", o25)):
        vals = aps[0, :, sel]
        out[name] = float(np.nanmean(vals) * 100) if not np.isnan(vals).all() else math.nan
    return out


def _inverse_rank(m: _Matches, iou_threshold: float) -> float:
    """compute_query_inverse_rank: best unvisited IoU match per GT, per-query rank adjustment, mean of 1/r."""
    iou = _link_iou(m)
    best = np.full(len(m.gt_count), -1, np.int64)
    visited = np.zeros(len(m.pred_conf), bool)
    if len(m.link_gt):
        starts = np.flatnonzero(np.r_[True, m.link_gt[1:] != m.link_gt[:-1]])
        for s0, e0 in zip(starts.tolist(), np.r_[starts[1:], len(m.link_gt)].tolist()):
            best_iou, best_p = 0.0, -1
            for k in range(s0, e0):
                p = int(m.link_pred[k])
                if not visited[p] and iou[k] > iou_threshold and iou[k] > best_iou:
                    best_iou, best_p = float(iou[k]), p
            if best_p >= 0:
                best[m.link_gt[s0]] = m.pred_rank[best_p]
                visited[best_p] = True
    ranks: list[int] = []
    order = np.argsort(m.gt_query, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(m.gt_query[order]) != 0, True])
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        r = best[order[a:b]]
        found = sorted(r[r != -1].tolist())
        ranks += [x - i for i, x in enumerate(found)] + [-1] * int((r == -1).sum())
    ranks.sort(key=lambda x: (x == -1, x))
    inv = [0.0 if x == -1 or x <= 0 else 1.0 / x for x in ranks]
    return sum(inv) / len(inv) if inv else 0.0  # summed in the official sorted order (float-exact)


# ---------------------------------------------------------------- public API
def check_options(metric: str = "ap", criteria: str = "top_k", top_k: int = 10, clip_threshold: float = 0.5,
                  alignment: str = "per_mask", alignment_threshold: float = 0.001, iou_threshold: float = 0.25) -> None:
    """SchemaError for a bad scoring option."""
    _option(metric in METRICS, "metric", " or ".join(METRICS), metric)
    _option(criteria in CRITERIA, "criteria", " or ".join(CRITERIA), criteria)
    _option(alignment in ALIGNMENTS, "alignment", " or ".join(ALIGNMENTS), alignment)
    _option(isinstance(top_k, (int, np.integer)) and not isinstance(top_k, bool) and top_k >= 1,
            "top_k", "an integer >= 1", top_k)
    for name, val in (("clip_threshold", clip_threshold), ("iou_threshold", iou_threshold)):
        _option(isinstance(val, (int, float, np.number)) and math.isfinite(val), name, "a finite number", val)
    _option(isinstance(alignment_threshold, (int, float, np.number)) and math.isfinite(alignment_threshold)
            and alignment_threshold > 0, "alignment_threshold", "a positive squared distance (m^2)",
            alignment_threshold)


def text_rows(queries: list[tuple[str, Any]], text_features: Callable[[list[str]], np.ndarray]) -> dict[str, np.ndarray]:
    """{query text: feature row} for the (scene, queries) pairs, texts encoded once in first-seen order."""
    texts = list(dict.fromkeys(t for name, q in queries for _, t, _ in _queries(q, f"<{name}>")))
    feats = arrays.matrix(text_features(texts), "<text_features>", "features", min_rows=1) if texts else np.zeros((0, 1))
    if texts and feats.shape[0] != len(texts):
        raise SchemaError("<text_features>", "features", f"{len(texts)} rows (one per query text)", feats.shape[0])
    return dict(zip(texts, feats))


def scene_matches(scene: RetrievalScene, rows: dict[str, np.ndarray], *, criteria: str = "top_k", top_k: int = 10,
                  clip_threshold: float = 0.5, alignment: str = "per_mask", alignment_threshold: float = 0.001,
                  skip_missing_objects: bool = True, unassigned_compete: bool = True) -> _Matches:
    """One scene's matches, the unit a sweep scores on a worker and `score_matches` pools."""
    return _scene_matches(scene, rows, criteria=criteria, top_k=int(top_k), clip_threshold=float(clip_threshold),
                          alignment=alignment, alignment_threshold=float(alignment_threshold),
                          skip_missing_objects=skip_missing_objects, unassigned_compete=unassigned_compete)


def score_matches(per: dict[str, _Matches], metric: str = "ap", iou_threshold: float = 0.25) -> dict:
    """The retrieval result: scenes pooled, and per scene."""
    pooled = _pool(list(per.values())) if per else _pool([_empty_matches()])

    def score(m: _Matches) -> dict[str, float]:
        if metric == "ap":
            return _average_precision(m)
        return {"avg_inverse_rank": _inverse_rank(m, float(iou_threshold))}

    return {
        "kind": "retrieval", "metric": metric, "overall": score(pooled),
        "per_scene": {name: score(m) for name, m in per.items()},
        "n_queries": pooled.n_queries,
        "n_instances": {"gt": len(pooled.gt_count), "pred": len(pooled.pred_conf), "aligned_masks": pooled.n_aligned},
        "skipped_gt_objects": pooled.skipped,
    }


def evaluate_retrieval(scenes: list[RetrievalScene], text_features: Callable[[list[str]], np.ndarray], *,
                       metric: str = "ap", criteria: str = "top_k", top_k: int = 10, clip_threshold: float = 0.5,
                       alignment: str = "per_mask", alignment_threshold: float = 0.001, iou_threshold: float = 0.25,
                       progress: bool = False, skip_missing_objects: bool = True,
                       unassigned_compete: bool = True) -> dict:
    """OpenLex3D query retrieval over scenes: pooled and per-scene AP (x100) or average inverse rank."""
    check_options(metric, criteria, top_k, clip_threshold, alignment, alignment_threshold, iou_threshold)
    names = [s.name for s in scenes]
    dup = next((n for n in names if names.count(n) > 1), None)
    _option(dup is None, "scenes", "unique scene names", dup)
    rows = text_rows([(s.name, s.queries) for s in scenes], text_features)
    per = {scene.name: scene_matches(scene, rows, criteria=criteria, top_k=top_k, clip_threshold=clip_threshold,
                                     alignment=alignment, alignment_threshold=alignment_threshold,
                                     skip_missing_objects=skip_missing_objects, unassigned_compete=unassigned_compete)
           for scene in tqdm(scenes, desc="retrieval", unit="scene", disable=not progress)}
    return score_matches(per, metric, iou_threshold)
