"""The official OpenLex3D query evaluation, step by step in plain Python, as a reference for tests.

Written from the toolkit's procedure (`core/evaluation.py`, `core/cosine_similarity.py`, `scripts/evaluate_queries.py`,
`core/metric.py`), independently of evaluation/: per-instance dicts, torch.nn.functional.cosine_similarity in
batches of 100 rows, np.argsort top-k and ranks, brute-force per-mask alignment, the greedy AP loop with its
unvisited duplicate FPs, and the inverse rank. Small inputs only (loops everywhere).
"""
from __future__ import annotations

import numpy as np
import torch

THRESHOLDS = np.append(np.arange(0.5, 0.95, 0.05), 0.25)


def similarity(emb: np.ndarray, text: np.ndarray) -> np.ndarray:
    """compute_feature_to_prompt_similarity: torch cosine of 100-row batches against all texts, into float64."""
    out = np.zeros((emb.shape[0], text.shape[0]))
    text_t = torch.from_numpy(text).unsqueeze(0)
    for i in range(0, emb.shape[0], 100):
        out[i:i + 100] = torch.nn.functional.cosine_similarity(torch.from_numpy(emb[i:i + 100]).unsqueeze(1),
                                                               text_t, dim=2).numpy()
    return out


def confidences(emb: np.ndarray, text: np.ndarray) -> np.ndarray:
    """compute_normalized_cosine_similarities: (sim + 1)/2, then min-max per query over all rows."""
    s = (similarity(emb, text) + 1) / 2.0
    lo, hi = s.min(axis=0, keepdims=True), s.max(axis=0, keepdims=True)
    return (s - lo) / np.maximum(hi - lo, 1e-8)


def predictions(emb: np.ndarray, text: np.ndarray, aligned: set[int], criteria: str, top_k: int = 10,
                threshold: float = 0.5) -> list[tuple[int, int, float, int]]:
    """(query, instance, confidence, rank) as create_pred_instances_top_k / create_pred_instances create them."""
    s = confidences(emb, text)
    out = []
    if criteria == "top_k":
        top = np.argsort(-s, axis=0)[:top_k, :]
        for j in range(s.shape[1]):
            for i in top[:, j]:
                rank = np.argsort(-s[:, j]).tolist().index(i) + 1
                if i in aligned:
                    out.append((j, int(i), float(s[i, j]), rank))
    else:
        for i in sorted(aligned):
            for j in range(s.shape[1]):
                rank = np.argsort(-s[:, j]).tolist().index(i) + 1
                if s[i, j] > threshold:
                    out.append((j, i, float(s[i, j]), rank))
    return out


def scene_matches(gt_points: np.ndarray, gt_ids: np.ndarray, queries: dict[str, dict[str, list[int]]],
                  pred_points: np.ndarray, pred_index: np.ndarray, emb: np.ndarray, text_of: dict[str, np.ndarray],
                  top_k: int, threshold: float = 0.001) -> tuple[list[dict], list[dict]]:
    """GT and predicted instances of one scene with their matches, as get_matches_for_scene (top_k, per_mask)."""
    qlist = [(f"{level}_{t}", t, ids) for level, sub in queries.items() for t, ids in sub.items()]
    gt32, pred32 = gt_points.astype(np.float32), pred_points.astype(np.float32)
    masks = {}
    for i in range(emb.shape[0]):
        pts = pred32[pred_index == i].astype(np.float64)
        if len(pts):
            d2 = np.square(gt32.astype(np.float64)[:, None, :] - pts[None]).sum(-1).min(1)
            m = set(np.flatnonzero(d2 < threshold).tolist())
            if m:
                masks[i] = m
    gts = [{"query": qid, "mask": set(np.flatnonzero(gt_ids == o).tolist()), "matched": []}
           for qid, _, ids in qlist for o in ids if (gt_ids == o).any()]
    text = np.stack([text_of[t] for _, t, _ in qlist]).astype(np.float32)
    preds = [{"id": n, "query": qlist[j][0], "mask": masks[i], "conf": conf, "rank": rank, "matched": []}
             for n, (j, i, conf, rank) in enumerate(predictions(emb, text, set(masks), "top_k", top_k))]
    for p in preds:
        for g in gts:
            inter = len(p["mask"] & g["mask"])
            if g["query"] == p["query"] and inter > 0:
                g["matched"].append((p, inter))
                p["matched"].append((g, inter))
    return gts, preds


def _iou(g: dict, p: dict, inter: int) -> float:
    return inter / (len(g["mask"]) + len(p["mask"]) - inter)


def average_precision(scenes: list[tuple[list[dict], list[dict]]]) -> dict[str, float]:
    """compute_ap over all scenes pooled as one class, then compute_ap_averages (x100)."""
    aps = []
    for th in THRESHOLDS:
        visited: dict[int, bool] = {}
        y_true: list[float] = []
        y_score: list[float] = []
        hard_fn = 0
        has_gt = has_pred = False
        for si, (gts, preds) in enumerate(scenes):
            has_gt, has_pred = has_gt or bool(gts), has_pred or bool(preds)
            cur = []
            for g in gts:
                score = None
                for p, inter in g["matched"]:
                    key = (si, p["id"])
                    if visited.get(key) or _iou(g, p, inter) <= th:
                        continue
                    if score is None:
                        score, visited[key] = p["conf"], True
                    else:  # the lower of the two is an FP; this prediction stays unvisited
                        cur.append((0.0, min(score, p["conf"])))
                        score = max(score, p["conf"])
                if score is None:
                    hard_fn += 1
                else:
                    cur.append((1.0, score))
            for p in preds:
                if not any(_iou(g, p, inter) > th for g, inter in p["matched"]):
                    cur.append((0.0, p["conf"]))
            # GT scores first, then duplicate and lone FPs, as the official arrays are appended
            y_true += [t for t, _ in cur if t == 1.0] + [t for t, _ in cur if t == 0.0]
            y_score += [c for t, c in cur if t == 1.0] + [c for t, c in cur if t == 0.0]
        if not has_gt:
            aps.append(np.nan)
            continue
        if not has_pred:
            aps.append(0.0)
            continue
        order = np.argsort(y_score)
        ys, yt = np.array(y_score)[order], np.array(y_true)[order]
        csum = np.append(np.cumsum(yt), 0)
        _, first = np.unique(ys, return_index=True)
        n_true = csum[-2] if len(yt) else 0
        prec, rec = np.zeros(len(first) + 1), np.zeros(len(first) + 1)
        for r, idx in enumerate(first):
            before = csum[idx - 1]
            tp = n_true - before
            fp = len(ys) - idx - tp
            prec[r], rec[r] = tp / (tp + fp), tp / (tp + before + hard_fn)
        prec[-1], rec[-1] = 1.0, 0.0
        steps = np.convolve(np.concatenate([[rec[0]], rec, [0.0]]), [-0.5, 0, 0.5], "valid")
        aps.append(float(np.dot(prec, steps)))
    a = np.array(aps).reshape(1, 1, -1)
    sel = {"all_ap": np.where(~np.isclose(THRESHOLDS, 0.25)), "all_ap_50%": np.where(np.isclose(THRESHOLDS, 0.5)),
           "all_ap_25%": np.where(np.isclose(THRESHOLDS, 0.25))}
    return {k: float(np.nanmean(a[0, :, w]) * 100) for k, w in sel.items()}


def inverse_rank(scenes: list[tuple[list[dict], list[dict]]], iou_threshold: float = 0.25) -> float:
    """compute_query_inverse_rank: best unvisited match per GT, per-query adjustment, mean 1/r in sorted order."""
    final: list[int] = []
    for gts, _ in scenes:
        visited: set[int] = set()
        per_query: dict[str, list[int]] = {}
        for g in gts:
            best, best_iou = None, 0.0
            for p, inter in g["matched"]:
                iou = _iou(g, p, inter)
                if p["id"] not in visited and iou > iou_threshold and iou > best_iou:
                    best, best_iou = p, iou
            per_query.setdefault(g["query"], []).append(-1 if best is None else best["rank"])
            if best is not None:
                visited.add(best["id"])
        for ranks in per_query.values():
            valid = sorted(r for r in ranks if r != -1)
            final += sorted([r - i for i, r in enumerate(valid)] + [r for r in ranks if r == -1],
                            key=lambda x: (x == -1, x))
    final.sort(key=lambda x: (x == -1, x))
    inv = [0.0 if r == -1 or r <= 0 else 1.0 / r for r in final]
    return sum(inv) / len(inv) if inv else 0.0
