"""OpenLex3D tiered segmentation: Top-N frequency and set ranking for one or many scenes."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from evaluation import set_ranking, topn
from evaluation.arrays import unit_rows
from evaluation.labels import CATEGORIES, EXCLUDED_LABELS, build_label_table
from evaluation.text_features import TextEncoder, check_texts
from evaluation.voxel import VOXEL_SIZE, downsample_predictions
from tiermap.formats.base import SchemaError
from tiermap.formats.openlex3d import GTCategories, check_ids_in_cloud, read_gt_categories, read_gt_cloud
from tiermap.formats.predictions import (
    EMBEDDINGS_FILE,
    Predictions,
    read_point_positions,
    read_predictions,
)

MISSING_DISTANCE = 0.05  # metres; GT points farther than this from every down-sampled prediction are "missing"
CHUNK_ROWS = 2048


@dataclass
class SegmentationScene:
    """One scene's inputs: GT cloud + labels and the method's predictions."""

    name: str
    gt_points: np.ndarray
    gt_ids: np.ndarray
    labels: GTCategories
    predictions: Predictions
    visible_points: np.ndarray | None = None


def load_scene(name: str, gt_labels: Path, gt_cloud: Path, predictions: Path, gt_ids: Path | None = None,
               visible_cloud: Path | None = None) -> SegmentationScene:
    """Read one scene's GT labels, GT cloud (PLY/PCD with object_id, or points.npy + ids.npy) and predictions."""
    points, ids = read_gt_cloud(gt_cloud, gt_ids)
    labels = read_gt_categories(gt_labels)
    check_ids_in_cloud(gt_labels, set(labels.by_id()), gt_ids or gt_cloud, ids, "dataset.samples.object_id")
    visible = read_point_positions(visible_cloud).astype(np.float64) if visible_cloud else None
    return SegmentationScene(name, points, ids, labels, read_predictions(predictions, allow_unassigned=False), visible)


def visible_ids(raw_points: np.ndarray, raw_ids: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Ids of the visible cloud: nearest raw GT point's id when strictly closer than 5 cm, else -1 (official)."""
    dist, j = cKDTree(raw_points).query(visible)
    return np.where(dist < MISSING_DISTANCE, raw_ids[j], -1)


def evaluate_scene(scene: SegmentationScene, prompts: list[str], prompt_feats: np.ndarray, top_n: tuple[int, ...] = (1, 5, 10),
                   with_set_ranking: bool = True, definition: str = "official", voxel: float = VOXEL_SIZE,
                   excluded: tuple[str, ...] = EXCLUDED_LABELS, keep_point_categories: bool = False) -> dict:
    """Top-N frequency (per-object normalised) and set ranking of one scene, as the official toolkit computes them."""
    import torch

    pred = scene.predictions
    emb_path = pred.folder / EMBEDDINGS_FILE
    if prompt_feats.shape != (len(prompts), pred.embeddings.shape[1]):
        raise SchemaError(emb_path, "embeddings", f"feature dimension {prompt_feats.shape[1]} (as the text features)",
                                 pred.embeddings.shape[1])
    if max(top_n) > len(prompts):
        raise SchemaError("--top-n", str(max(top_n)), f"at most the number of prompts ({len(prompts)})")
    gt_points, gt_ids = scene.gt_points, scene.gt_ids
    if scene.visible_points is not None:
        gt_ids = visible_ids(gt_points, gt_ids, scene.visible_points)
        gt_points = scene.visible_points
    table = build_label_table(scene.labels, prompts, excluded)
    n_obj = len(table.object_ids)

    ds_points, ds_rows = downsample_predictions(pred.points, pred.index, voxel)
    dist, nearest = cKDTree(ds_points).query(gt_points)
    point_row = ds_rows[nearest]
    obj_row = table.row(gt_ids)
    labelled = obj_row >= 0
    counted = labelled & (gt_ids != -100)
    counted[counted] = table.has_object[obj_row[counted]] & ~table.excluded[obj_row[counted]]
    missing = dist > MISSING_DISTANCE
    # Set ranking scores every labelled point (no exclusion, no 5 cm rule); Top-N only the counted, non-missing ones.
    needed = labelled if with_set_ranking else counted & ~missing
    key = point_row[needed] * max(n_obj, 1) + obj_row[needed]
    pair_key, pair_inv, pair_count = np.unique(key, return_inverse=True, return_counts=True)
    pair_pred, pair_obj = pair_key // max(n_obj, 1), pair_key % max(n_obj, 1)
    pair_of_point = np.full(len(gt_points), -1, dtype=np.int64)
    pair_of_point[needed] = pair_inv

    text = torch.from_numpy(unit_rows(np.asarray(prompt_feats, np.float32)))
    n_max = max(top_n)
    pair_top = np.zeros((len(pair_key), n_max), dtype=np.int64)
    sums = np.zeros((len(pair_key), len(set_ranking.FIELDS)))
    # np.unique sorts the keys row-major, so each chunk of prediction rows owns one contiguous run of pairs.
    rows, row_of_pair = np.unique(pair_pred, return_inverse=True)
    bounds = np.searchsorted(row_of_pair, np.arange(0, len(rows) + CHUNK_ROWS, CHUNK_ROWS))
    for c, start in enumerate(range(0, len(rows), CHUNK_ROWS)):
        feats = torch.from_numpy(unit_rows(pred.embeddings[rows[start:start + CHUNK_ROWS]].astype(np.float32)))
        logits = feats @ text.T
        desc_vals, desc_idx = torch.sort(logits, dim=1, descending=True)
        pairs = np.arange(bounds[c], bounds[c + 1])
        local = torch.from_numpy(row_of_pair[pairs] - start)
        pair_top[pairs] = desc_idx[local, :n_max].numpy()
        if with_set_ranking:
            asc = torch.flip(desc_vals, dims=[1])
            for o in np.unique(pair_obj[pairs]):
                sel = pairs[pair_obj[pairs] == o]
                li = torch.from_numpy(row_of_pair[sel] - start)
                obj_logits, obj_asc = logits[li], asc[li].contiguous()
                s_idx, d_idx, v_idx = table.tiers[o]
                ranks = []
                for idx in (s_idx, np.concatenate([d_idx, v_idx])):
                    vals = obj_logits[:, torch.from_numpy(idx)].contiguous()
                    # 0-based position in the descending ranking = number of prompts with a larger logit
                    ranks.append((len(prompts) - torch.searchsorted(obj_asc, vals, right=True)).numpy())
                sums[sel] = set_ranking.pair_sums(ranks[0], ranks[1], len(prompts))

    result: dict = {"frequency": {}, "n_gt_points": int(len(gt_points)), "n_pred_points": int(len(pred.points)),
                    "n_voxels": int(len(ds_points)), "n_objects_scored": int(len(np.unique(obj_row[counted]))),
                    "labels_not_in_prompt_list": table.missing_labels}
    point_pair = np.where(pair_of_point >= 0, pair_of_point, 0)
    for n in top_n:
        code = topn.pair_categories(table.category, pair_obj, pair_top[:, :n]) if len(pair_key) else np.zeros(0, np.int8)
        codes = topn.point_categories(code, point_pair, missing, counted)
        result["frequency"][f"top{n}"] = topn.frequency(codes, obj_row, n_obj)
        if keep_point_categories and n == min(top_n):
            names = np.array([*CATEGORIES, "none"])
            result["_point_categories"] = (gt_points, names[codes])
    if with_set_ranking:
        last_pair = np.full(n_obj, -1, dtype=np.int64)
        lab_idx = np.flatnonzero(labelled)
        last_pair[obj_row[lab_idx]] = pair_of_point[lab_idx]  # later points overwrite: the last point per object wins
        result["set_ranking"] = set_ranking.aggregate(sums, pair_obj, pair_count, last_pair, n_obj, definition)
    return result


def mean_over_scenes(per_scene: dict[str, dict]) -> dict:
    """Dataset level: unweighted mean of every number over scenes (NaN-skipping, as pandas groupby().mean())."""
    out: dict = {}
    first = next(iter(per_scene.values()))
    for group in ("frequency", "set_ranking"):
        if group not in first:
            continue
        sub = first[group]
        keys = [(k, kk) for k, v in sub.items() for kk in v] if group == "frequency" else [(k, None) for k in sub]
        out[group] = {}
        for k, kk in keys:
            vals = [s[group][k][kk] if kk else s[group][k] for s in per_scene.values()]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                v = float(np.nanmean(vals)) if not all(np.isnan(vals)) else float("nan")
            if kk:
                out[group].setdefault(k, {})[kk] = v
            else:
                out[group][k] = v
    return out


def check_options(top_n: tuple[int, ...] | list[int], definition: str) -> None:
    """SchemaError for a bad definition or top-N list (shared by the single run and the sweep)."""
    if definition not in {"official", "paper"}:
        raise SchemaError("--definition", definition, "'official' or 'paper'")
    if not top_n or min(top_n) < 1:
        raise SchemaError("--top-n", "values", "whole numbers >= 1 (prompts counted per point)", list(top_n))


def evaluate_segmentation(scenes: list[SegmentationScene], prompts: list[str], encoder: TextEncoder, *,
                          top_n: tuple[int, ...] = (1, 5, 10), with_set_ranking: bool = True, definition: str = "official",
                          method: str = "method", prompt_source: str = "<prompt list>", progress: bool = False,
                          keep_point_categories: bool = False) -> dict:
    """Score every scene and the dataset mean; the result follows the official key names."""
    from tqdm import tqdm

    check_options(top_n, definition)
    check_texts(prompts, prompt_source)
    feats = encoder(prompts)
    per_scene, extras = {}, {}
    for scene in tqdm(scenes, desc="segmentation", disable=not progress, unit="scene"):
        r = evaluate_scene(scene, prompts, feats, tuple(top_n), with_set_ranking, definition,
                           keep_point_categories=keep_point_categories)
        if "_point_categories" in r:
            extras[scene.name] = r.pop("_point_categories")
        per_scene[scene.name] = r
    result = {"kind": "segmentation", "method": method, "definition": definition, **mean_over_scenes(per_scene),
              "per_scene": per_scene, "n_prompts": len(prompts), "text_encoder": getattr(encoder, "name", "custom")}
    if extras:
        result["_point_categories"] = extras
    return result
