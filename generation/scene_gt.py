"""Scene ground truth: GT point cloud with object ids, BenchBot objects.json, per-object visibility."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from generation.geometry import box_corners, sample_surface, scene_geometry
from tiermap.formats.base import write_model
from tiermap.formats.benchbot import (
    OBJECTS_FILE,
    BBEnvironment,
    BBFormat,
    BBGroundTruth,
    BBObject,
    BenchBotGT,
)
from tiermap.formats.crops import VISIBILITY_FILE, ObjectVisibility, write_visibility
from tiermap.formats.openlex3d import GT_CLOUD_FILE, write_gt_cloud
from tiermap.formats.scene import Scene, read_scene
from tiermap.formats.sequence import open_sequence, read_instance

GT_CLOUD = GT_CLOUD_FILE


def visibility(sequence_dir: Path, min_pixels: int) -> dict[int, dict[str, int]]:
    """Per object id: total pixels and number of frames with at least min_pixels pixels, from instance images."""
    seq = open_sequence(sequence_dir)
    pixels: dict[int, int] = {}
    seen: dict[int, int] = {}
    for f in seq.instance:
        ids, counts = np.unique(read_instance(f, seq.shape), return_counts=True)
        for i, c in zip(ids.tolist(), counts.tolist()):
            if i == 0:
                continue
            pixels[i] = pixels.get(i, 0) + c
            if c >= min_pixels:
                seen[i] = seen.get(i, 0) + 1
    return {i: {"pixels": pixels[i], "frames": seen.get(i, 0)} for i in sorted(pixels)}


def benchbot_gt(scene: Scene, env_variant: int = 1) -> BenchBotGT:
    """objects.json in BenchBot ground-truth form (axis-aligned centroid/extent plus the oriented box)."""
    objs = []
    for o in scene.objects:
        c = box_corners(o.obb)
        lo, hi = c.min(0), c.max(0)
        objs.append(BBObject(class_=o.class_name, id=o.id, ID_name=f"{o.class_name.replace(' ', '_')}_{o.id}",
                                    centroid=((lo + hi) / 2).round(4).tolist(), extent=(hi - lo).round(4).tolist(), obb=o.obb))
    classes = sorted({o.class_name for o in scene.objects}) + ["background"]
    return BenchBotGT(
        environment=BBEnvironment(name=scene.name, variant=env_variant),
        format=BBFormat(name="object_map_ground_truth"),
        ground_truth=BBGroundTruth(class_list=classes, synonyms={"bg": "background", "none": "background"}, objects=objs))


def build_scene_gt(scene_json: Path, reference_sequence: Path, out_dir: Path, density: float, min_pixels: int) -> dict[str, int]:
    """Write gt_cloud.ply, objects.json and visibility.json for one scene; return counts."""
    scene = read_scene(scene_json)
    points, ids, colors = sample_surface(scene_geometry(scene, scene_json.parent), density=density, seed=scene.seed)
    vis = visibility(reference_sequence, min_pixels)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_gt_cloud(out_dir / GT_CLOUD, points, ids, colors)
    write_model(benchbot_gt(scene), out_dir / OBJECTS_FILE)
    write_visibility(out_dir / VISIBILITY_FILE, {k: ObjectVisibility(**v) for k, v in vis.items()})
    return {"points": len(points), "objects": len(scene.objects), "visible": sum(v["frames"] > 0 for v in vis.values())}
