"""Caption baseline: per-object points fused from RGB-D + instance masks, one caption per object, text-embedded.

It writes predictions in the official OpenLex3D layout (object-centric: one embedding row per object). Its
segmentation comes from the sequence's instance images, so it measures only the language side; with `oracle`
captions (the GT class names) it is an upper bound on that side, and reports say so.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from evaluation.text_features import ClipEncoder, MiniLMEncoder, TextEncoder
from tiermap.extras import require
from tiermap.formats.base import SchemaError, read_json
from tiermap.formats.benchbot import (
    BENCHBOT_RESULTS_FILE,
    BenchBotResults,
    read_benchbot_gt,
    write_benchbot_results,
)
from tiermap.formats.classes import read_class_map
from tiermap.formats.method_graphs import write_conceptgraphs_graph
from tiermap.formats.openlex3d import read_prompt_list, read_query_mapping
from tiermap.formats.predictions import (
    TEXT_FEATURES_FILE,
    write_predictions,
    write_text_features,
)
from tiermap.formats.records import (
    CAPTIONS_FILE,
    METHOD_FILE,
    MethodInfo,
    read_captions,
    write_captions,
    write_method,
)
from tiermap.formats.scene_graph import SCENE_GRAPH_FILE
from tiermap.formats.sequence import (
    CAMERA_FILE,
    TRAJ_FILE,
    depth_path,
    instance_path,
    read_camera,
    read_depth,
    read_instance,
    read_rgb,
    read_traj,
    rgb_path,
)

FUSE_VOXEL = 0.02
ORACLE_NOTE = "oracle captions: each object is captioned with its GT class name (an upper bound on the language side)"


def fuse_objects(sequence: Path, stride: int = 2, voxel: float = FUSE_VOXEL) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, tuple[int, int]]]:
    """Back-project every `stride`-th frame's instance pixels → (points, object ids, colours, best view per object).

    Points are merged per object on a `voxel` grid (mean position and colour). The best view of an object is the frame
    where it covers the most pixels: (frame index, pixel count).
    """
    cam = read_camera(sequence / CAMERA_FILE)
    poses = read_traj(sequence / TRAJ_FILE)
    K_inv = np.linalg.inv(cam.K())
    v, u = np.mgrid[0:cam.h, 0:cam.w]
    rays = (np.stack([u.ravel(), v.ravel(), np.ones(u.size)], 1) @ K_inv.T).astype(np.float32)
    pts, ids, cols = [], [], []
    best: dict[int, tuple[int, int]] = {}
    for f in range(0, len(poses), max(stride, 1)):
        inst_file, depth_file = instance_path(sequence, f), depth_path(sequence, f)
        for p in (inst_file, depth_file):
            if not p.is_file():
                raise SchemaError(p, "<file>", f"frame {f} of the sequence (traj.txt has {len(poses)} poses)")
        inst = read_instance(inst_file, (cam.h, cam.w)).ravel().astype(np.int64)
        depth = read_depth(depth_file, cam).ravel()
        rgb = read_rgb(_rgb_path(sequence, f), (cam.h, cam.w)).reshape(-1, 3)
        ok = (inst > 0) & (depth > 0)
        T = poses[f]
        cam_pts = rays[ok] * depth[ok, None]
        pts.append(cam_pts @ T[:3, :3].T.astype(np.float32) + T[:3, 3].astype(np.float32))
        ids.append(inst[ok])
        cols.append(rgb[ok])
        uniq, counts = np.unique(inst[ok], return_counts=True)
        for i, c in zip(uniq.tolist(), counts.tolist(), strict=True):
            if c > best.get(i, (-1, 0))[1]:
                best[i] = (f, c)
    if not pts or not sum(len(p) for p in pts):
        raise SchemaError(sequence / "instance", "<pixels>", "frames with labelled pixels (instance id > 0)")
    P, I, C = np.concatenate(pts), np.concatenate(ids), np.concatenate(cols).astype(np.float64)
    key = np.concatenate([np.floor(P / voxel).astype(np.int64), I[:, None]], axis=1)
    _, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    mean = lambda a: np.stack([np.bincount(inv, a[:, k]) for k in range(a.shape[1])], 1) / counts[:, None]  # noqa: E731
    first = np.zeros(len(counts), dtype=np.int64)
    first[inv[::-1]] = np.arange(len(inv))[::-1]
    return mean(P.astype(np.float64)).astype(np.float32), I[first], mean(C).round().astype(np.uint8), best


def _rgb_path(sequence: Path, f: int) -> Path:
    for ext in (".png", ".jpg"):
        p = rgb_path(sequence, f, ext)
        if p.is_file():
            return p
    raise SchemaError(rgb_path(sequence, f, ".png"), "<file>", f"the RGB image of frame {f}")


def crop(sequence: Path, frame: int, object_id: int, pad: int = 8) -> bytes:
    """PNG bytes of the object's padded bounding box in one frame."""
    inst = read_instance(instance_path(sequence, frame), None)
    ys, xs = np.nonzero(inst == object_id)
    img = Image.fromarray(read_rgb(_rgb_path(sequence, frame), inst.shape))
    box = (max(xs.min() - pad, 0), max(ys.min() - pad, 0), min(xs.max() + pad + 1, img.width), min(ys.max() + pad + 1, img.height))
    buf = io.BytesIO()
    img.crop(tuple(int(b) for b in box)).save(buf, format="PNG")
    return buf.getvalue()


def gemini_captions(sequence: Path, best: dict[int, tuple[int, int]], model: str, cache: Path) -> dict[int, str]:
    """One short caption per object from Gemini (image bytes + JSON schema); cached per object so re-runs are free."""
    from pydantic import BaseModel

    from tiermap.gemini import ask_image, gemini_client

    class Caption(BaseModel):
        caption: str

    done = read_captions(cache) if cache.is_file() else {}
    client = gemini_client("--captions gemini") if len(done) < len(best) else None
    for oid, (frame, _) in sorted(best.items()):
        if oid in done:
            continue
        ans = ask_image(client, model, crop(sequence, frame, oid), "Name the main object in this image in 1-4 words, as a person would call it.", Caption)
        if not ans.caption.strip():
            raise SchemaError(f"gemini:{model}", f"object {oid}", "a non-empty caption", ans.caption)
        done[oid] = ans.caption.strip().lower()
        write_captions(cache, done)
    return {oid: done[oid] for oid in best}


def object_boxes(objects: list[int], points: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned boxes of sorted `objects` over their points: (min corners, max corners), float64, one row each."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.searchsorted(sorted_ids, objects)
    if np.any(starts >= len(ids)) or np.any(sorted_ids[np.minimum(starts, len(ids) - 1)] != objects) or np.any(np.diff(starts) <= 0):
        raise ValueError("object_boxes needs sorted, distinct object ids that each have points")
    pts = points[order]
    return np.minimum.reduceat(pts, starts).astype(float), np.maximum.reduceat(pts, starts).astype(float)


def scene_graph_nodes(objects: list[int], points: np.ndarray, ids: np.ndarray, text: dict[int, str]) -> list[dict]:
    """One ConceptGraphs scene-graph node per object: its box over its fused points, its caption as tag and caption."""
    lo, hi = object_boxes(objects, points, ids)
    return [{"id": o, "bbox_extent": (hi[k] - lo[k]).tolist(), "bbox_center": ((lo[k] + hi[k]) / 2).tolist(),
             "possible_tags": [text[o]], "object_tag": text[o], "caption": text[o]} for k, o in enumerate(objects)]


def benchbot_results(gt_path: Path, objects: list[int], points: np.ndarray, ids: np.ndarray, emb: np.ndarray,
                     enc: TextEncoder, temperature: float = 0.05) -> dict:
    """The baseline as a BenchBot object map: each object's axis-aligned box, class probabilities from caption similarity."""
    gt = read_benchbot_gt(gt_path)
    classes = gt.ground_truth.class_list
    named = [c for c in classes if c != "background"]
    logits = emb @ enc(named).T / temperature
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    lows, highs = object_boxes(objects, points, ids)
    objs = []
    for k, (lo, hi) in enumerate(zip(lows, highs, strict=True)):
        full = [float(probs[k, named.index(c)]) if c in named else 0.0 for c in classes]
        objs.append({"label_probs": [round(v, 6) for v in full], "centroid": ((lo + hi) / 2).round(4).tolist(),
                     "extent": (hi - lo).round(4).tolist()})
    return {"task_details": {"name": "semantic_slam:passive:ground_truth", "results_format": "object_map"},
            "environment_details": [{"name": gt.environment.name, "variant": gt.environment.variant}],
            "results": {"class_list": classes, "objects": objs}}


def make_text_encoder(encoder: str, clip_pretrained: str | None = None) -> TextEncoder:
    """minilm (real weights, offline) or an open_clip model name."""
    return MiniLMEncoder() if encoder.lower() == "minilm" else ClipEncoder(encoder, clip_pretrained)


def caption_baseline(sequence: Path, out: Path, *, gt_classes: Path | None = None, captions: str = "oracle",
                     encoder: str | TextEncoder = "minilm", clip_pretrained: str | None = None, prompt_list: Path | None = None,
                     queries: list[Path] | None = None, stride: int = 2, gemini_model: str = "gemini-2.5-flash") -> dict:
    """Write the baseline's predictions (and text_features.npz for the prompts and queries) into `out`."""
    if captions not in {"oracle", "gemini"}:
        raise SchemaError("--captions", captions, "oracle or gemini")
    enc = make_text_encoder(encoder, clip_pretrained) if isinstance(encoder, str) else encoder  # a missing extra fails here
    if captions == "gemini":
        require("pipeline", "--captions gemini", ["google.genai"])
    points, ids, colors, best = fuse_objects(sequence, stride)
    objects = sorted(best)
    if captions == "oracle":
        if gt_classes is None:
            raise SchemaError("--gt-classes", "<missing>", "objects.json (the GT class names) for oracle captions")
        classes = read_class_map(gt_classes)
        unknown = [o for o in objects if o not in classes]
        if unknown:
            raise SchemaError(gt_classes, "ground_truth.objects.id", "every object id seen in the sequence", unknown[:5])
        text = {o: classes[o] for o in objects}
    else:
        text = gemini_captions(sequence, best, gemini_model, out.parent / f".{out.name}.captions.json")
    emb = enc([text[o] for o in objects])
    index = np.searchsorted(np.asarray(objects), ids)
    write_predictions(out, points, emb, index, colors)
    info = MethodInfo(method=f"caption-{captions}", captions=captions, encoder=str(getattr(enc, "name", encoder)),
                      note=ORACLE_NOTE if captions == "oracle" else f"captions from {gemini_model}")
    write_captions(out / CAPTIONS_FILE, {o: text[o] for o in objects})
    write_method(info, out / METHOD_FILE)
    write_conceptgraphs_graph(scene_graph_nodes(objects, points, ids, text), out / SCENE_GRAPH_FILE)
    if gt_classes is not None and "ground_truth" in read_json(gt_classes):
        bb = benchbot_results(gt_classes, objects, points, ids, emb, enc)
        write_benchbot_results(BenchBotResults.model_validate(bb), out / BENCHBOT_RESULTS_FILE)
    texts: list[str] = read_prompt_list(prompt_list) if prompt_list else []
    for q in queries or []:
        m = read_query_mapping(q)
        texts += [t for level in (m.level0, m.level1) if level for t in level]
    if texts:
        uniq = list(dict.fromkeys(texts))
        write_text_features(out / TEXT_FEATURES_FILE, uniq, enc(uniq))
    return {**info.model_dump(), "objects": len(objects), "points": int(len(points))}
