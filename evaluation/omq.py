"""OMQ (Object Map Quality), BenchBot's object-map score, number for number as benchbot-addons/eval_omq.

`precision="float32"` (the default) is the official number: eval_omq keeps label/state qualities and its cost tables in
float32, so every quality becomes 1 - float32(1 - q) and one below ~3e-8 (boxes that touch up to rounding) is no match.
`precision="float64"` keeps the exact qualities: within ~1e-7 of the official elsewhere, but such a pair is a TP.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from tiermap.formats.base import SchemaError, read_json
from tiermap.formats.benchbot import (
    BenchBotGT,
    BenchBotResults,
    read_benchbot_gt,
    read_benchbot_results,
)

SCD_FORMAT = "object_map_with_states"
PRECISIONS = ("float32", "float64")
"""float32: the official eval_omq arithmetic (default); float64: exact qualities."""
ARRAYS = "<omq_map arrays>"
STATE_IDS = {"added": 0, "removed": 1}
"""GT change states as indices into state_probs = [added, removed, unchanged] (eval_omq `_STATE_IDS`)."""


# ---------------------------------------------------------------- class space and probabilities
class ClassSpace:
    """Internal class list (sorted unique, background last) and the synonyms used to look names up."""

    def __init__(self, class_lists: list[list[str]], synonyms: dict[str, str] | None = None,
                 source: str = "<ground truth>") -> None:
        self.synonyms = dict(synonyms or {})
        self.source = source
        names = [str(c) for c in np.unique([c for cl in class_lists for c in cl])]
        bg = "background" if "background" in names else self.synonyms.get("background")
        if bg in names:
            names.append(names.pop(names.index(bg)))
        else:
            names.append("background")
        self.names: tuple[str, ...] = tuple(names)
        self.ids = {n: i for i, n in enumerate(names)}

    def lookup(self, name: str, used_by: str = "a lookup") -> int | None:
        """Internal id of a class name or synonym (the query is lowercased, the lists are not), None if unknown."""
        key = name.lower()
        if key in self.ids:
            return self.ids[key]
        if key in self.synonyms:
            target = self.synonyms[key]
            if target not in self.ids:
                raise SchemaError(self.source, f"ground_truth.synonyms.{key}",
                                  f"a synonym target that is a class of class_list (needed for {used_by})", target)
            return self.ids[target]
        return None


def sanitise_probs(dist: np.ndarray) -> np.ndarray:
    """Rows summing to more than 1 are normalised, the others get the missing mass in their last bin."""
    out = np.array(dist, dtype=np.float64, order="C")
    total = out.sum(axis=1)
    over = total > 1
    out[over] /= total[over, None]
    out[~over, -1] += 1 - total[~over]
    return out


def rebin_label_probs(probs: np.ndarray, result_classes: list[str], space: ClassSpace,
                      used_by: str = "results") -> np.ndarray:
    """Distributions over result_classes → sanitised ones over space.names; unknown names feed background."""
    out = np.zeros((len(probs), len(space.names)))
    if len(probs):
        for i, name in enumerate(result_classes):
            cid = space.lookup(name, f"{used_by} class '{name}'")
            out[:, -1 if cid is None else cid] += probs[:, i]
    return sanitise_probs(out)


# ---------------------------------------------------------------- geometry and quality
def _bounds(centroids: np.ndarray, extents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned box corners (lo, hi) from centres and full extents."""
    half = 0.5 * np.asarray(extents, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    return c - half, c + half


def _overlap_volume(lo_a: np.ndarray, hi_a: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray) -> np.ndarray:
    """Intersection volume of broadcast box pairs; height × footprint area, the order of iou_tools.dict_iou."""
    ov = np.clip(np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b), 0.0, None)
    return ov[..., 2] * (ov[..., 0] * ov[..., 1])


def _volume(extents: np.ndarray) -> np.ndarray:
    """Box volumes l·w·h."""
    e = np.asarray(extents, dtype=np.float64).reshape(-1, 3)
    return e[:, 0] * e[:, 1] * e[:, 2]


def box_iou(c1: np.ndarray, e1: np.ndarray, c2: np.ndarray, e2: np.ndarray) -> np.ndarray:
    """Axis-aligned 3D IoU of every box of set 1 (rows) with every box of set 2 (columns); 0 when the union is 0."""
    lo1, hi1 = _bounds(np.reshape(c1, (-1, 3)), np.reshape(e1, (-1, 3)))
    lo2, hi2 = _bounds(np.reshape(c2, (-1, 3)), np.reshape(e2, (-1, 3)))
    inter = _overlap_volume(lo1[:, None], hi1[:, None], lo2[None], hi2[None])
    union = _volume(e1)[:, None] + _volume(e2)[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union != 0, inter / union, 0.0)


def pairwise_quality(label: np.ndarray, spatial: np.ndarray, state: np.ndarray | None = None) -> np.ndarray:
    """Geometric mean of label, spatial [and state] quality; 0 where any is 0."""
    parts = [label, spatial] + ([] if state is None else [state])
    stacked = np.stack(np.broadcast_arrays(*[np.asarray(x, dtype=np.float64) for x in parts]), axis=-1)
    # exp(mean(log)) as scipy.stats.gmean computes it in eval_omq `_calc_overall_qual` (not sqrt/cbrt of the product)
    with np.errstate(divide="ignore"):
        return np.exp(np.mean(np.log(stacked), axis=-1))


# ---------------------------------------------------------------- one map
@dataclass(frozen=True)
class MapEval:
    """Sums over TPs and counts of one object map (eval_omq `_calc_qual_map`)."""

    overall: float
    spatial: float
    label: float
    state: float
    fp_cost: float
    TP: int
    FP: int
    FN: int


def _check_precision(precision: str) -> None:
    """SchemaError unless precision is one of PRECISIONS."""
    if precision not in PRECISIONS:
        raise SchemaError("<omq>", "precision", "float32 (the official arithmetic) or float64", precision)


def _padded(quality: np.ndarray, n: int, official: bool) -> tuple[np.ndarray, np.ndarray]:
    """(cost, quality) n×n tables, padding quality 0; official: eval_omq's `ones(float32) -= q` round trip."""
    g, p = quality.shape
    if official:
        cost = np.ones((n, n), dtype=np.float32)
        cost[:g, :p] -= quality
        return cost, np.float32(1) - cost
    table = np.zeros((n, n))
    table[:g, :p] = quality
    return 1.0 - table, table


def _rows(field: str, a: np.ndarray | list[Any] | None, rows: int, cols: int) -> np.ndarray:
    """A (rows, cols) float64 array, or a SchemaError naming the argument."""
    arr = np.asarray([] if a is None else a, dtype=np.float64)
    if arr.size != rows * cols or (arr.ndim == 2 and arr.shape[1] != cols):
        raise SchemaError(ARRAYS, field, f"an array of shape ({rows}, {cols})", arr.shape)
    return arr.reshape(rows, cols)


def omq_map(gt_centroids: np.ndarray, gt_extents: np.ndarray, gt_class_ids: np.ndarray,
            prop_centroids: np.ndarray, prop_extents: np.ndarray, prop_label_probs: np.ndarray, *,
            gt_isgroup: np.ndarray | None = None, gt_state_ids: np.ndarray | None = None,
            prop_state_probs: np.ndarray | None = None, precision: str = "float32") -> MapEval:
    """Evaluate one map from sanitised distributions (background last); SCD when gt_state_ids is given."""
    _check_precision(precision)
    official = precision == "float32"
    ids = np.asarray(gt_class_ids, dtype=np.int64).reshape(-1)
    labels = np.asarray(prop_label_probs, dtype=np.float64)
    if labels.ndim != 2 or labels.shape[1] == 0:
        raise SchemaError(ARRAYS, "prop_label_probs", "an array of shape (proposals, classes)", labels.shape)
    g, (p, k) = len(ids), labels.shape
    bad_ids = ids[(ids < 0) | (ids >= k)]
    if len(bad_ids):
        raise SchemaError(ARRAYS, "gt_class_ids", f"class ids in [0, {k})", int(bad_ids[0]))
    gt_c, gt_e = _rows("gt_centroids", gt_centroids, g, 3), _rows("gt_extents", gt_extents, g, 3)
    pr_c, pr_e = _rows("prop_centroids", prop_centroids, p, 3), _rows("prop_extents", prop_extents, p, 3)
    isgroup = np.zeros(g, bool) if gt_isgroup is None else _rows("gt_isgroup", gt_isgroup, g, 1)[:, 0] != 0
    scd = gt_state_ids is not None
    if scd:
        state_ids = np.asarray(gt_state_ids, dtype=np.int64).reshape(-1)
        if state_ids.shape != (g,) or not np.isin(state_ids, (0, 1, 2)).all():
            raise SchemaError(ARRAYS, "gt_state_ids", f"{g} ids in {{0: added, 1: removed, 2: unchanged}}")
        states = _rows("prop_state_probs", prop_state_probs, p, 3)
    max_label = np.max(labels[:, :-1], axis=1, initial=0.0)
    if g == 0 or p == 0:
        # eval_omq's empty-map branch: label-only FP cost even in SCD, no isgroup check
        return MapEval(0.0, 0.0, 0.0, 0.0, float(np.sum(max_label)), 0, p, g)

    spatial = box_iou(gt_c, gt_e, pr_c, pr_e)
    label = labels[:, ids].T
    state = states[:, state_ids].T if scd else None
    if official:
        # eval_omq `_calc_label_qual` / `_calc_state_change_qual` cast to float32
        label = label.astype(np.float32)
        state = state.astype(np.float32) if scd else None
    quality = pairwise_quality(label, spatial, state)

    n = max(g, p)
    cost, q_tab = _padded(quality, n, official)
    _, s_tab = _padded(spatial, n, official)
    _, l_tab = _padded(label, n, official)
    t_tab = _padded(state, n, official)[1] if scd else np.zeros_like(q_tab)
    rows, cols = linear_sum_assignment(cost)

    q = q_tab[rows, cols]
    tp = q > 0
    fn = int(np.count_nonzero(~tp & (rows < g)))
    cand = cols[~tp & (cols < p)]
    if len(cand):
        colq = q_tab[:, cand]
        best = np.argmax(colq, axis=0)
        top = np.argmax(labels[cand, :-1], axis=1) if k > 1 else np.full(len(cand), -1)
        lo_p, hi_p = _bounds(pr_c[cand], pr_e[cand])
        lo_g, hi_g = _bounds(gt_c[best], gt_e[best])
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = _overlap_volume(lo_p, hi_p, lo_g, hi_g) / _volume(pr_e[cand])
        # isgroup forgiveness (eval_omq `_calc_qual_map`): a proposal whose best GT is a group of its top class and
        # which lies at least half inside it is neither an FP nor costed
        forgiven = (np.sum(colq, axis=0) > 0) & isgroup[best] & (top == ids[best]) & (inside >= 0.5)
        fp = cand[~forgiven]
    else:
        fp = cand
    if scd:
        max_state = np.max(states[fp, :-1], axis=1)
        fp_costs = pairwise_quality(max_label[fp], max_state)
    else:
        fp_costs = max_label[fp]
    zero = np.zeros((), q.dtype)
    return MapEval(overall=float(np.sum(q)), spatial=float(np.sum(np.where(tp, s_tab[rows, cols], zero))),
                   label=float(np.sum(np.where(tp, l_tab[rows, cols], zero))),
                   state=float(np.sum(np.where(tp, t_tab[rows, cols], zero))),
                   fp_cost=float(np.sum(fp_costs)), TP=int(np.count_nonzero(tp)), FP=len(fp), FN=fn)


def map_scores(ev: MapEval, scd: bool = False) -> dict[str, float]:
    """OMQ = ΣQ / (TP + FN + FP cost) and the TP/FP averages (avg_state_quality for SCD)."""
    den = ev.TP + ev.fp_cost + ev.FN
    scores = {"OMQ": ev.overall / den if den > 0 else 0.0, "avg_pairwise": _per_tp(ev.overall, ev.TP),
              "avg_label": _per_tp(ev.label, ev.TP), "avg_spatial": _per_tp(ev.spatial, ev.TP),
              "avg_fp_quality": (ev.FP - ev.fp_cost) / ev.FP if ev.FP > 0 else 1.0}
    if scd:
        scores["avg_state_quality"] = _per_tp(ev.state, ev.TP)
    return scores


def _per_tp(total: float, tp: int) -> float:
    """Average over true positives, 0 without any."""
    return total / tp if tp > 0 else 0.0


def combine(scores: list[dict[str, float]]) -> dict[str, float]:
    """Plain mean of each per-file score (eval_omq `combine`; TP/FN/costs are not pooled)."""
    return {k: float(np.mean([s[k] for s in scores])) for k in scores[0]}


def scd_changes(objects0: list[dict[str, Any]], objects1: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """GT changes from scene 0 to 1 as (scene, index): removed objects of scene 0, then added objects of scene 1."""
    # whole-dict equality as eval_omq `evaluate_scd`: a moved or edited object is one removal plus one addition
    removed = [(0, i) for i, o in enumerate(objects0) if o not in objects1]
    return removed + [(1, j) for j, o in enumerate(objects1) if o not in objects0]


# ---------------------------------------------------------------- files
@dataclass(frozen=True)
class _GT:
    """A loaded ground-truth file: validated model plus the raw object dicts (SCD compares those)."""

    path: Path
    env: str
    model: BenchBotGT
    raw_objects: list[dict[str, Any]]


def _load_gt(path: Path) -> _GT:
    """Read and validate one GT file."""
    model = read_benchbot_gt(path)
    raw = read_json(path)["ground_truth"]["objects"]
    return _GT(path, f"{model.environment.name}:{model.environment.variant}", model, raw)


def _gt_class_ids(gt: _GT, space: ClassSpace) -> np.ndarray:
    """Internal class id of every object of a GT file; unknown classes are errors (the official crashes)."""
    ids = []
    for i, o in enumerate(gt.model.ground_truth.objects):
        cid = space.lookup(o.class_, f"object {i} of {gt.path}")
        if cid is None:
            raise SchemaError(gt.path, f"ground_truth.objects.{i}.class",
                              "a class of class_list or a synonym key (looked up lowercased)", o.class_)
        ids.append(cid)
    return np.asarray(ids, dtype=np.int64)


def _evaluate_file(res: BenchBotResults, gts: list[_GT], path: Path | str = "<results>",
                   precision: str = "float32") -> dict[str, Any]:
    """Score one results file against its GT file(s) (two for SCD, in environment_details order)."""
    scd = res.task_details.results_format == SCD_FORMAT
    # the official builds the class space from every GT passed, but takes synonyms from the first only
    space = ClassSpace([g.model.ground_truth.class_list for g in gts], gts[0].model.ground_truth.synonyms,
                       source=str(gts[0].path))
    ids = [_gt_class_ids(g, space) for g in gts]
    if scd:
        picks = scd_changes(gts[0].raw_objects, gts[1].raw_objects)
        state_ids = np.array([STATE_IDS["removed" if s == 0 else "added"] for s, _ in picks], dtype=np.int64)
    else:
        picks, state_ids = [(0, i) for i in range(len(ids[0]))], None
    objs = [gts[s].model.ground_truth.objects[i] for s, i in picks]
    gt_c = np.array([o.centroid for o in objs], dtype=np.float64).reshape(-1, 3)
    gt_e = np.array([o.extent for o in objs], dtype=np.float64).reshape(-1, 3)
    gt_ids = np.array([ids[s][i] for s, i in picks], dtype=np.int64)
    isgroup = np.array([bool(gts[s].raw_objects[i].get("isgroup")) for s, i in picks], dtype=bool)

    props = res.results.objects
    k = len(res.results.class_list)
    raw_labels = np.array([o.label_probs for o in props], dtype=np.float64).reshape(-1, k)
    labels = rebin_label_probs(raw_labels, res.results.class_list, space, f"results {path}")
    states = None
    if scd:
        states = np.array([o.state_probs for o in props], dtype=np.float64).reshape(-1, 3)
        # input_processor sanitises states only when the task *name* contains 'scd'
        if "scd" in res.task_details.name:
            states = sanitise_probs(states)
    ev = omq_map(gt_c, gt_e, gt_ids, np.array([o.centroid for o in props]).reshape(-1, 3),
                 np.array([o.extent for o in props]).reshape(-1, 3), labels, gt_isgroup=isgroup,
                 gt_state_ids=state_ids, prop_state_probs=states, precision=precision)
    return {"file": str(path), "environments": [f"{e.name}:{e.variant}" for e in res.environment_details],
            "task": "scd" if scd else "sslam", "scores": map_scores(ev, scd),
            "TP": ev.TP, "FP": ev.FP, "FN": ev.FN, "fp_cost": ev.fp_cost}


def score_omq(ground_truths: list[Path], results: list[Path], *, precision: str = "float32") -> dict[str, Any]:
    """OMQ of BenchBot results files against BenchBot GT files, matched by environment name:variant; mean over files."""
    _check_precision(precision)
    if not results:
        raise SchemaError("<results>", "results", "at least one results file")
    gts: dict[str, _GT] = {}
    for p in ground_truths:
        gt = _load_gt(Path(p))
        gts.setdefault(gt.env, gt)
    per_file: list[dict[str, Any]] = []
    first_format: str | None = None
    for p in map(Path, results):
        res = read_benchbot_results(p)
        fmt = res.task_details.results_format
        if first_format is not None and fmt != first_format:
            raise SchemaError(p, "task_details.results_format",
                              f"the format of the first results file ({first_format})", fmt)
        first_format = fmt
        envs = [f"{e.name}:{e.variant}" for e in res.environment_details]
        missing = [e for e in envs if e not in gts]
        if missing:
            raise SchemaError(p, "environment_details", f"environments with a ground truth among the given files "
                              f"({', '.join(sorted(gts)) or 'none'})", missing[0])
        per_file.append(_evaluate_file(res, [gts[e] for e in envs], p, precision))
    return {"kind": "omq", "precision": precision, "scores": combine([f["scores"] for f in per_file]),
            "per_file": per_file}
