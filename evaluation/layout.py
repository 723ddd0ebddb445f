"""Where the inputs of each evaluation live: one scene from explicit files, or every scene of a released GT folder."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.arrays import lookup
from evaluation.text_features import TextEncoder
from tiermap.formats.base import SchemaError
from tiermap.formats.benchbot import OBJECTS_FILE
from tiermap.formats.classes import read_class_map
from tiermap.formats.openlex3d import (
    GT_CATEGORIES_FILE,
    GT_CLOUD_FILE,
    PROMPT_LIST_FILE,
    check_ids_in_cloud,
    query_mapping_file,
    read_gt_categories,
    read_gt_cloud,
    read_prompt_list,
    read_query_mapping,
)
from tiermap.formats.predictions import (
    EMBEDDINGS_FILE,
    POINT_LABELS_FILE,
    read_point_labels,
    read_predictions,
)
from tiermap.formats.records import METHOD_FILE, read_method

GT_CLOUD_NAMES = (GT_CLOUD_FILE, "gt_cloud.pcd", "gt_points.npy")

LEVELS = {"l0": ("level0",), "l1": ("level1",), "all": ("level0", "level1")}


def gt_scene_folders(gt_dir: Path, scenes: list[str] | None = None) -> list[Path]:
    """Scene folders of a released GT folder (those holding gt_categories.json), optionally a chosen subset."""
    if not gt_dir.is_dir():
        raise SchemaError(gt_dir, "<folder>", "a GT folder with one sub-folder per scene")
    found = sorted(p for p in gt_dir.iterdir() if (p / GT_CATEGORIES_FILE).is_file())
    if scenes:
        known = {p.name: p for p in found}
        unknown = [s for s in scenes if s not in known]
        if unknown:
            raise SchemaError(gt_dir, "--scene", f"scenes of this GT folder {sorted(known)}", unknown)
        found = [known[s] for s in scenes]
    if not found:
        raise SchemaError(gt_dir, GT_CATEGORIES_FILE, "at least one scene folder with gt_categories.json")
    return found


def scene_cloud(folder: Path) -> tuple[Path, Path | None]:
    """The GT cloud of a scene folder: gt_cloud.ply|pcd, or gt_points.npy + gt_ids.npy."""
    for name in GT_CLOUD_NAMES:
        if (folder / name).is_file():
            return folder / name, (folder / "gt_ids.npy" if name.endswith(".npy") else None)
    raise SchemaError(folder / GT_CLOUD_NAMES[0], "<file>", f"a GT cloud ({', '.join(GT_CLOUD_NAMES)})")


def _scene_inputs(predictions: Path, gt_labels: Path | None, gt_cloud: Path | None, gt_ids: Path | None,
                  gt_dir: Path | None, scenes: list[str] | None) -> list[tuple[str, Path | None, Path, Path | None, Path]]:
    """(scene, gt_labels, gt_cloud, gt_ids, predictions folder) for every scene to score."""
    if gt_dir is not None:
        out = []
        for folder in gt_scene_folders(gt_dir, scenes):
            cloud, ids = scene_cloud(folder)
            pred = predictions / folder.name
            if not pred.is_dir():
                raise SchemaError(pred, "<folder>", f"predictions for scene '{folder.name}' (one sub-folder per scene of --gt-dir)")
            out.append((folder.name, folder / GT_CATEGORIES_FILE, cloud, ids, pred))
        return out
    if gt_cloud is None:
        raise SchemaError("<options>", "--gt-cloud", "--gt-cloud FILE (and --gt-labels), or --gt-dir DIR")
    name = gt_labels.parent.name if gt_labels is not None else gt_cloud.parent.name
    return [(name, gt_labels, gt_cloud, gt_ids, predictions)]


def segmentation_scenes(predictions: Path, gt_labels: Path | None, gt_cloud: Path | None, gt_ids: Path | None,
                        gt_dir: Path | None, scenes: list[str] | None, prompt_list: Path | None,
                        visible_cloud: Path | None = None) -> tuple[list, list[str], Path]:
    """Segmentation scenes, the prompt list and its path."""
    from evaluation.segmentation import load_scene

    prompt_path = prompt_list or (gt_dir / PROMPT_LIST_FILE if gt_dir else None)
    if prompt_path is None:
        raise SchemaError("<options>", "--prompt-list", "the dataset's prompt_list.txt")
    prompts = read_prompt_list(prompt_path)
    loaded = []
    for name, labels, cloud, ids, pred in _scene_inputs(predictions, gt_labels, gt_cloud, gt_ids, gt_dir, scenes):
        if labels is None:
            raise SchemaError("<options>", "--gt-labels", "the scene's gt_categories.json")
        loaded.append(load_scene(name, labels, cloud, pred, ids, visible_cloud))
    return loaded, prompts, prompt_path


def retrieval_scenes(predictions: Path, gt_labels: Path | None, gt_cloud: Path | None, gt_ids: Path | None, queries: Path | None,
                     gt_dir: Path | None, scenes: list[str] | None, level: str) -> list:
    """Retrieval scenes with the query levels asked for (l0 → level0, l1 → level1, all → both)."""
    from evaluation.retrieval import RetrievalScene

    if level not in LEVELS:
        raise SchemaError("--level", level, "one of l0, l1, all")
    out = []
    for name, labels, cloud, ids, pred_dir in _scene_inputs(predictions, gt_labels, gt_cloud, gt_ids, gt_dir, scenes):
        qpath = queries if gt_dir is None else cloud.parent / query_mapping_file(level)
        if qpath is None:
            raise SchemaError("<options>", "--queries", "a query mapping file (gt_categories_query_to_object_mapping_<level>.json)")
        mapping = read_query_mapping(qpath)
        levels = {lv: getattr(mapping, lv) for lv in LEVELS[level] if getattr(mapping, lv) is not None}
        if not levels:
            raise SchemaError(qpath, LEVELS[level][0], f"the query level asked for by --level {level}")
        points, obj_ids = read_gt_cloud(cloud, ids)
        queried = {i for q in levels.values() for v in q.values() for i in v}
        if labels is not None:
            known = set(read_gt_categories(labels).by_id())
            check_ids_in_cloud(labels, known, ids or cloud, obj_ids, "dataset.samples.object_id")
            bad = sorted(queried - known)
            if bad:
                raise SchemaError(qpath, "object_ids", f"objects of {labels.name}", bad[:5])
        check_ids_in_cloud(qpath, queried, ids or cloud, obj_ids, "object_ids")
        pred = read_predictions(pred_dir, allow_unassigned=True)
        out.append(RetrievalScene(name, points, obj_ids, levels, pred.points.astype(np.float64), pred.index, pred.embeddings))
    return out


def class_labels(obj_ids: np.ndarray, class_map: dict[int, str]) -> tuple[np.ndarray, dict[int, str]]:
    """Per-point class ids (0 = background: ids without a class) and the class id → name table (1-based, sorted names)."""
    names = sorted(set(class_map.values()))
    cid = {n: i + 1 for i, n in enumerate(names)}
    vals = np.array([cid[v] for v in class_map.values()] + [0], dtype=np.int64)  # trailing 0: not found
    pos, found = lookup(obj_ids, np.array(list(class_map), dtype=np.int64))
    labels = vals[np.where(found, pos, len(class_map))]
    return labels, {0: "background", **{i: n for n, i in cid.items()}}


def condition_folders(predictions: Path, conditions: list[str] | None) -> dict[str, Path]:
    """{condition: predictions folder}: the folder itself when it holds a cloud, else its sub-folders."""
    if not predictions.is_dir():
        raise SchemaError(predictions, "<folder>", "a predictions folder or one sub-folder per condition")
    if (predictions / EMBEDDINGS_FILE).is_file() or (predictions / POINT_LABELS_FILE).is_file():
        return {conditions[0] if conditions else predictions.name: predictions}
    subs = {p.name: p for p in sorted(predictions.iterdir()) if p.is_dir()}
    if conditions:
        unknown = [c for c in conditions if c not in subs]
        if unknown:
            raise SchemaError(predictions, "--condition", f"sub-folders of the predictions folder {sorted(subs)}", unknown)
        subs = {c: subs[c] for c in conditions}
    if not subs:
        raise SchemaError(predictions, "<folder>", "predictions (embeddings.npy/labels.npy) or condition sub-folders")
    return subs


def osma_scene_gt(gt_cloud: Path, gt_ids: Path | None, gt_classes: Path | None) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """A scene's GT points, per-point class ids and the class table (classes from objects.json beside the cloud by default)."""
    points, obj_ids = read_gt_cloud(gt_cloud, gt_ids)
    labels, names = class_labels(obj_ids, read_class_map(gt_classes or gt_cloud.parent / OBJECTS_FILE))
    return points, labels, names


def osma_class_features(encoder: TextEncoder, names: dict[int, str], labels: np.ndarray,
                        templates: tuple[str, ...]) -> tuple[np.ndarray, list[int]]:
    """Text features of the scene's GT vocabulary and their class ids, what embeddings are classified against."""
    from evaluation import osma

    ids, vocab = osma.vocabulary(names, labels)
    return osma.class_text_features(encoder, vocab, templates), ids


def osma_predictions(folder: Path, scene: str, classes: tuple[np.ndarray, list[int]] | None) -> tuple[np.ndarray, np.ndarray]:
    """Predicted points and class ids: labels.npy as given, or embeddings classified against the class features."""
    from evaluation import osma

    if not any((folder / n).is_file() for n in (EMBEDDINGS_FILE, POINT_LABELS_FILE)) and (folder / scene).is_dir():
        folder = folder / scene  # <condition>/<scene>/ layout
    if (folder / POINT_LABELS_FILE).is_file():
        pred_points, pred_labels = read_point_labels(folder)
    else:
        if classes is None:
            raise SchemaError(folder, POINT_LABELS_FILE, "per-point class ids, or pass --text-features/--clip-model to classify embeddings")
        pred = read_predictions(folder, allow_unassigned=True)
        pred_points, pred_labels = pred.points, osma.classify(pred.embeddings, pred.index, *classes)
    return np.asarray(pred_points, np.float64), pred_labels


def osma_inputs(gt_cloud: Path, gt_ids: Path | None, gt_classes: Path | None, predictions: Path, conditions: list[str] | None,
                encoder: TextEncoder | None, templates: tuple[str, ...]) -> dict[str, dict[str, tuple]]:
    """{condition: {scene: (gt_points, gt_labels, pred_points, pred_labels)}} for OSMa-Bench scoring.

    A predictions folder holds either per-point class ids (`labels.npy` beside the cloud, ids of the GT class table)
    or the official layout (embeddings classified against the scene's GT vocabulary with the text encoder).
    """
    points, labels, names = osma_scene_gt(gt_cloud, gt_ids, gt_classes)
    scene = gt_cloud.parent.name
    classes = None
    out: dict[str, dict[str, tuple]] = {}
    for cond, folder in condition_folders(predictions, conditions).items():
        needs = not (folder / POINT_LABELS_FILE).is_file() and not (folder / scene / POINT_LABELS_FILE).is_file()
        if classes is None and encoder is not None and needs:
            classes = osma_class_features(encoder, names, labels, templates)
        out[cond] = {scene: (points, labels, *osma_predictions(folder, scene, classes))}
    return out


def method_info(predictions: Path) -> dict[str, str]:
    """method.json written beside predictions by a method (name, note), searched in the folder and its sub-folders."""
    for p in [predictions / METHOD_FILE, *sorted(predictions.glob(f"*/{METHOD_FILE}"))]:
        if p.is_file():
            info = read_method(p)
            return {k: v for k, v in (("method", info.method), ("note", info.note)) if v}
    return {}
