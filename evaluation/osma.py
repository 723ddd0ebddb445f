"""OSMa-Bench semantic-segmentation scoring: vocabulary, CLIP classification, k-NN transfer, mAcc / f-mIoU / mIoU.

Reproduces `be2rlab/OSMa-Bench` semseg (`scripts/eval_semseg.py`, `scripts/src/eval.py::evaluate_scen`,
`scripts/compute_metrics.py`, `scripts/resuls_visualizer.py`) with numpy/scipy instead of torch/pytorch3d, and the
same `sklearn.metrics.confusion_matrix` call.
All metrics are fractions, as in the official `metrics.csv`.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from scipy.spatial import cKDTree
from sklearn.metrics import confusion_matrix

from evaluation import arrays
from tiermap.formats.base import SchemaError

METRICS = ("macc", "fmiou", "miou")
UNCLASSIFIED = -1
_CHUNK = 1 << 16

Scene = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def vocabulary(
    class_names: dict[int, str], present_ids: np.ndarray, excluded: tuple[int, ...] = (0,)
) -> tuple[list[int], list[str]]:
    """Scene label set (GT ids present, known and not excluded, sorted) and their prompt names."""
    present = arrays.ints(np.asarray(present_ids).ravel(), "<gt labels>", "present_ids")
    # eval_semseg.py::get_semseg_class_names renames id 0 to "background" whatever the class list calls it.
    names = {int(k): str(v) for k, v in class_names.items()} | {0: "background"}
    ids = sorted((set(names) & set(np.unique(present).tolist())) - set(excluded))
    return ids, [names[i].replace("_", " ") for i in ids]


def prompt_texts(names: list[str], templates: list[str]) -> list[list[str]]:
    """Per template, the prompts `template.format(name)` with only '_' turned into spaces (as official)."""
    return [[t.format(n.replace("_", " ")) for n in names] for t in templates]


def class_text_features(
    encode: Callable[[list[str]], np.ndarray], names: list[str], templates: Sequence[str] = ("an image of {}",)
) -> np.ndarray:
    """(C, D) class text features: per template encode and L2-normalise, average templates, re-normalise."""
    if not names:
        raise SchemaError("<vocabulary>", "names", "at least one class name", "[]")
    feats = []
    for prompts in prompt_texts(list(names), list(templates)):
        f = arrays.matrix(encode(prompts), "<text encoder>", "features")
        if len(f) != len(prompts):
            raise SchemaError("<text encoder>", "features", f"{len(prompts)} rows (one per prompt)", len(f))
        feats.append(arrays.unit_rows(f))
    return arrays.unit_rows(np.mean(feats, axis=0))


def classify(
    embeddings: np.ndarray, index: np.ndarray, class_feats: np.ndarray, class_ids: Sequence[int]
) -> np.ndarray:
    """(M,) class id per point: argmax cosine of its embedding row `index[m]`; index -1 gives -1."""
    emb = arrays.matrix(embeddings, "<predictions>", "embeddings")
    feats = arrays.matrix(class_feats, "<vocabulary>", "class_feats")
    norms = np.linalg.norm(feats, axis=1, keepdims=True)
    if (norms == 0).any():
        raise SchemaError("<vocabulary>", "class_feats", "non-zero class feature rows", "a zero row")
    feats = feats / norms
    ids = np.asarray(class_ids, dtype=np.int64)
    if feats.shape[0] != len(ids) or feats.shape[0] == 0:
        raise SchemaError("<vocabulary>", "class_ids", f"{feats.shape[0]} ids (one per feature row, >= 1)", len(ids))
    if emb.shape[1] != feats.shape[1]:
        raise SchemaError("<predictions>", "embeddings", f"dimension {feats.shape[1]} (as the text)", emb.shape[1])
    idx = arrays.ints(index, "<predictions>", "index")
    if len(idx) and (idx.min() < -1 or idx.max() >= len(emb)):
        raise SchemaError("<predictions>", "index", f"row indices in [-1, {len(emb)})", f"[{idx.min()}, {idx.max()}]")
    # With unit text features, argmax of the dot product is argmax cosine (an embedding's norm is a common factor).
    best = np.empty(len(emb), np.int64)
    for s in range(0, len(emb), _CHUNK):
        best[s : s + _CHUNK] = np.argmax(emb[s : s + _CHUNK] @ feats.T, axis=1)
    per_row = ids[best]
    return np.where(idx >= 0, per_row[np.maximum(idx, 0)] if len(emb) else UNCLASSIFIED, UNCLASSIFIED)


# ---------------------------------------------------------------- association
def _row_mode(a: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Row-wise mode over the `valid` entries; ties go to the smallest value (what torch.mode returns on CPU)."""
    valid = np.ones(a.shape, bool) if valid is None else valid
    out = np.empty(len(a), a.dtype)
    step = max(1, (1 << 24) // a.shape[1] ** 2)  # bounds the (rows, k, k) comparison block
    for s in range(0, len(a), step):
        blk, ok = a[s : s + step], valid[s : s + step]
        counts = np.where(ok, ((blk[:, :, None] == blk[:, None, :]) & ok[:, None, :]).sum(axis=2), -1)
        top = counts == counts.max(axis=1, keepdims=True)
        out[s : s + step] = np.where(top, blk, np.iinfo(a.dtype).max).min(axis=1)
    return out


def transfer_labels(
    gt_points: np.ndarray,
    pred_points: np.ndarray,
    pred_labels: np.ndarray,
    k: int = 1,
    float32: bool = True,
    pad_with_first: bool = True,
) -> np.ndarray:
    """Predicted label of every GT point: mode of its k nearest predicted points' labels, no distance cut-off."""
    gt = arrays.points(gt_points, "<gt>", "points")
    pred = arrays.points(pred_points, "<predictions>", "points", allow_empty=True)
    lab = arrays.ints(pred_labels, "<predictions>", "labels", n=len(pred))
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise SchemaError("<options>", "k", "a positive integer", k)
    if len(pred) == 0:
        # Deviation: the official code crashes here; an empty map leaves every GT point unclassified.
        return np.full(len(gt), UNCLASSIFIED, np.int64)
    if float32:
        # evaluate_scen feeds pytorch3d knn_points `.float()` coordinates.
        gt, pred = gt.astype(np.float32), pred.astype(np.float32)
    _, nn = cKDTree(pred).query(gt, k=int(k), workers=-1)
    if k == 1:
        return lab[nn]
    found = nn < len(pred)
    if pad_with_first:
        # pytorch3d knn_points pads missing neighbours (fewer than k predicted points) with index 0.
        return _row_mode(lab[np.where(found, nn, 0)])
    return _row_mode(lab[np.where(found, nn, 0)], found)


# ---------------------------------------------------------------- confusion and metrics
def confusion(gt_labels: np.ndarray, pred_labels: np.ndarray, ids: list[int]) -> np.ndarray:
    """Confusion matrix (rows GT, columns prediction) over labels `ids + [-1]`, as sklearn in evaluate_scen."""
    gt = arrays.ints(gt_labels, "<gt>", "labels")
    pred = arrays.ints(pred_labels, "<predictions>", "labels", n=len(gt))
    labels = np.array([*map(int, ids), UNCLASSIFIED], dtype=np.int64)
    if len(np.unique(labels)) != len(labels):
        raise SchemaError("<vocabulary>", "ids", "unique class ids other than -1", list(ids))
    # evaluate_scen drops GT outside ids ∪ {-1} (torch.isin) first; sklearn then drops predictions outside the labels.
    keep = np.isin(gt, labels)
    if not keep.any():
        # sklearn raises on empty input; with no GT point left every count is 0.
        return np.zeros((len(labels), len(labels)), np.int64)
    with warnings.catch_warnings():
        # A scene without classes gives the 1x1 matrix of label -1 on purpose.
        warnings.filterwarnings("ignore", "A single label was found", UserWarning)
        conf = confusion_matrix(gt[keep], pred[keep], labels=labels)
    return conf.astype(np.int64, copy=False)


def _nan_to_none(x: float) -> float | None:
    """JSON-ready: NaN becomes None."""
    return None if x is None or math.isnan(x) else float(x)


def metrics(conf: np.ndarray, labels: Sequence[int], excluded: tuple[int, ...] = (-1, 0)) -> dict[str, float]:
    """mAcc, f-mIoU and mIoU over valid classes (GT rows with points, label not excluded); NaN if none."""
    c = np.asarray(conf, dtype=np.float64)
    lab = np.asarray(labels, dtype=np.int64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] != len(lab):
        raise SchemaError("<confusion>", "conf", f"a square matrix of side len(labels)={len(lab)}", f"shape {c.shape}")
    rows, cols = c.sum(axis=1), c.sum(axis=0)
    valid = (rows != 0) & ~np.isin(lab, excluded)
    if not valid.any():
        return {m: math.nan for m in METRICS}
    tp = np.diag(c)[valid]
    fp, fn = cols[valid] - tp, rows[valid] - tp
    iou = tp / np.maximum(tp + fp + fn, 1e-7)
    return {
        "macc": float(np.mean(tp / np.maximum(tp + fn, 1e-7))),
        "fmiou": float(np.sum(iou * (tp + fn)) / np.sum(tp + fn)),
        "miou": float(np.mean(iou)),
    }


def evaluate_scene(
    gt_points: np.ndarray,
    gt_labels: np.ndarray,
    pred_points: np.ndarray,
    pred_labels: np.ndarray,
    ids: list[int] | None = None,
    k: int = 1,
    excluded: tuple[int, ...] = (0,),
    name: str = "<scene>",
) -> dict[str, Any]:
    """One scene: {"conf_matrix", "labels", "metrics"}; ids default to the GT ids present minus `excluded`."""
    gt = arrays.points(gt_points, name, "gt_points")
    gl = arrays.ints(gt_labels, name, "gt_labels", n=len(gt))
    pp = arrays.points(pred_points, name, "pred_points", allow_empty=True)
    pl = arrays.ints(pred_labels, name, "pred_labels", n=len(pp))
    if ids is None:
        # The class list never holds -1 (eval_semseg.py intersects the present ids with it).
        ids = sorted(set(np.unique(gl).tolist()) - set(excluded) - {UNCLASSIFIED})
    conf = confusion(gl, transfer_labels(gt, pp, pl, k=k), ids)
    labels = np.array([*ids, UNCLASSIFIED], dtype=np.int64)
    return {"conf_matrix": conf, "labels": labels, "metrics": metrics(conf, labels)}


def pool(per_scene: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum of per-scene confusion matrices scattered into one global label index by label id ("overall")."""
    if not per_scene:
        raise SchemaError("<scenes>", "per_scene", "at least one scene", "[]")
    all_labels = np.unique(np.concatenate([np.asarray(lab, np.int64) for _, lab in per_scene]))
    labels = np.concatenate([all_labels[all_labels != UNCLASSIFIED], all_labels[all_labels == UNCLASSIFIED]])
    total = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for conf, lab in per_scene:
        if np.shape(conf) != (len(lab), len(lab)):
            raise SchemaError("<scenes>", "conf_matrix", f"a square matrix of side {len(lab)}", np.shape(conf))
        pos, _ = arrays.lookup(np.asarray(lab, np.int64), labels)
        total[np.ix_(pos, pos)] += np.asarray(conf, dtype=np.int64)
    return total, labels


def overall_mean(per_scene_metrics: Sequence[Mapping[str, float | None]]) -> dict[str, float]:
    """Arithmetic mean of the per-scene metrics ("overall_mean"); scenes without a value are skipped."""
    out = {}
    for m in METRICS:
        vals = [v for s in per_scene_metrics if (v := s.get(m)) is not None and not math.isnan(v)]
        out[m] = float(np.mean(vals)) if vals else math.nan
    return out


# ---------------------------------------------------------------- conditions
def _change(value: float | None, base: float | None, round_percent: bool) -> float | None:
    """(value - base) / base, optionally on percentages rounded to 2 decimals; None if undefined."""
    if value is None or base is None or math.isnan(value) or math.isnan(base):
        return None
    if round_percent:
        # resuls_visualizer.py computes the change from `(metric * 100).round(2)` table values.
        value, base = float(np.round(value * 100, 2)), float(np.round(base * 100, 2))
    return None if base == 0 else (value - base) / base


def evaluate_conditions(
    data: Mapping[str, Mapping[str, Scene]],
    aggregate: Literal["pooled", "mean"] = "pooled",
    baseline: str = "baseline",
    k: int = 1,
    excluded: tuple[int, ...] = (0,),
    round_percent: bool = True,
) -> dict[str, Any]:
    """Scores {condition: {scene: (gt_points, gt_labels, pred_points, pred_labels)}} and relative change to baseline."""
    if aggregate not in ("pooled", "mean"):
        raise SchemaError("<options>", "aggregate", "'pooled' or 'mean'", aggregate)
    if not data:
        raise SchemaError("<conditions>", "conditions", "at least one condition", "{}")
    per_condition: dict[str, dict[str, dict[str, Any]]] = {}
    for cond, scenes in data.items():
        if not scenes:
            raise SchemaError(f"<{cond}>", "scenes", "at least one scene", "{}")
        per = per_condition[cond] = {}
        for scene, inputs in scenes.items():
            if not isinstance(inputs, (tuple, list)) or len(inputs) != 4:
                raise SchemaError(f"<{cond}/{scene}>", "scene", "(gt_points, gt_labels, pred_points, pred_labels)",
                                  type(inputs).__name__)
            per[scene] = evaluate_scene(*inputs, k=k, excluded=excluded, name=f"<{cond}/{scene}>")
    return summarise_conditions(per_condition, aggregate, baseline, round_percent)


def summarise_conditions(
    per_condition: Mapping[str, Mapping[str, Mapping[str, Any]]],
    aggregate: Literal["pooled", "mean"] = "pooled",
    baseline: str = "baseline",
    round_percent: bool = True,
) -> dict[str, Any]:
    """The OSMa result from per-scene `evaluate_scene` outputs {condition: {scene: ...}}: overall, per scene, change."""
    conditions: dict[str, Any] = {}
    for cond, per in per_condition.items():
        if aggregate == "pooled":
            overall = metrics(*pool([(r["conf_matrix"], r["labels"]) for r in per.values()]))
        else:
            overall = overall_mean([r["metrics"] for r in per.values()])
        conditions[cond] = {
            "overall": {m: _nan_to_none(overall[m]) for m in METRICS},
            "per_scene": {s: {m: _nan_to_none(r["metrics"][m]) for m in METRICS} for s, r in per.items()},
        }
    base = conditions.get(baseline, {}).get("overall", {})
    relative = {
        cond: {m: _change(res["overall"][m], base.get(m), round_percent) for m in METRICS}
        for cond, res in conditions.items()
        if cond != baseline
    }
    return {"kind": "osma", "aggregate": aggregate, "baseline": baseline, "conditions": conditions,
            "relative_change": relative}

