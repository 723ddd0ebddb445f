"""Close-up views of every object under the reference lighting: what annotators are shown instead of far sequence frames.

Candidate cameras stand around each object's box (azimuths × elevations) at the distance where the box fills `fill`
of a square image, looking at the box centre. A candidate counts only in free space: inside a room, outside every
object's box (procedural parts; non-structure boxes of mesh scenes) and at least `clearance` from any surface. When
the line from the box towards the camera hits something, the camera moves closer, in front of it. Cheap id-only ray
casts at `score_size` pixels score the candidates (object pixels, the fraction not hidden by other geometry, border
contact); only the best `keep` are rendered with full shading at `size` pixels.

Output folder (written atomically, byte-identical on re-run):
    index.json                      CloseupIndex: parameters, every evaluated view per object, flagged objects
    <object_id>/rgb_<i>.png         the shaded close-up (size × size)
    <object_id>/instance_<i>.png    uint16 object ids of the same view (0 = none)
    <object_id>/camera_<i>.json     CloseupCamera: intrinsics and camera-to-world pose (OpenCV axes)
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import open3d as o3d
from tqdm import tqdm

from generation.conditions import load_condition, resolve_lights
from generation.geometry import (
    ObjectGeometry,
    box_corners,
    object_parts,
    pixel_rays,
    ray_scene,
    scene_geometry,
)
from generation.sequence import camera_from_params, make_renderer
from generation.trajectory import STRUCTURE_CLASSES
from tiermap.atomic import atomic_dir
from tiermap.formats.base import InputError, write_model
from tiermap.formats.crops import (
    INDEX_FILE,
    CloseupCamera,
    CloseupFlag,
    CloseupIndex,
    CloseupObject,
    CloseupView,
)
from tiermap.formats.scene import OBB, Scene, SceneObject, read_scene
from tiermap.formats.sequence import CameraParams, write_instance, write_rgb

NEAR = 0.05  # the renderers' near plane (metres): every box corner stays beyond it
BORDER_PENALTY = 0.75  # a view whose object mask touches the image border (object cut off) scores this much less
STEPS = (1.0, 0.8, 0.6, 0.45, 0.3, 0.15)  # fractions of the way from the nearest to the farthest camera distance tried


@dataclass(frozen=True)
class CloseupParams:
    """Parameters of params.yaml `annotation.closeups`."""

    size: int = 512
    hfov_deg: float = 60.0
    azimuths: int = 8
    elevations: tuple[float, ...] = (-20.0, 15.0, 45.0)
    fill: float = 0.8
    score_size: int = 64
    clearance: float = 0.1
    min_visible: float = 0.75
    keep: int = 1

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> CloseupParams:
        """Validated parameters from a params block (unknown keys and bad values are ValueErrors naming the key)."""
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise InputError(f"annotation.closeups: unknown key {bad[0]!r} (expected {sorted(known)})")
        try:
            if "elevations" in d:
                d["elevations"] = tuple(float(e) for e in d["elevations"])
            p = cls(**d)
        except (TypeError, ValueError) as err:
            raise InputError(f"annotation.closeups: expected numbers ({err})") from None
        checks = {"size": p.size >= 8, "hfov_deg": 0 < p.hfov_deg < 170, "azimuths": p.azimuths >= 1, "fill": 0 < p.fill <= 1,
                  "score_size": p.score_size >= 4, "clearance": p.clearance >= 0, "min_visible": 0 <= p.min_visible <= 1,
                  "keep": p.keep >= 1, "elevations": bool(p.elevations) and all(-85 <= e <= 85 for e in p.elevations)}
        for key, ok in checks.items():
            if not ok:
                raise InputError(f"annotation.closeups: field {key!r}: out of range (got {getattr(p, key)!r})")
        return p

    def camera(self, size: int | None = None) -> CameraParams:
        """Square pinhole camera of `size` pixels (default: the full render size) with the close-up field of view."""
        s = size or self.size
        return camera_from_params({"width": s, "height": s, "hfov_deg": self.hfov_deg})


def candidate_directions(azimuths: int, elevations: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Azimuths and elevations (degrees, elevation-major) and unit directions (N, 3) from an object towards its cameras."""
    az = np.tile(np.arange(azimuths) * 360.0 / azimuths, len(elevations))
    el = np.repeat(np.asarray(elevations, dtype=float), azimuths)
    a, e = np.radians(az), np.radians(el)
    return az, el, np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=1)


def look_at(eyes: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Camera-to-world poses (N, 4, 4), OpenCV axes (x right, y down, z forward), z up in the image."""
    z = targets - eyes
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    x = np.cross(z, [0.0, 0.0, 1.0])
    flat = np.linalg.norm(x, axis=1) < 1e-9
    x[flat] = [1.0, 0.0, 0.0]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    poses = np.tile(np.eye(4), (len(eyes), 1, 1))
    poses[:, :3, :3] = np.stack([x, np.cross(z, x), z], axis=2)
    poses[:, :3, 3] = eyes
    return poses


def fill_distance(corners: np.ndarray, center: np.ndarray, rot: np.ndarray, tan_half: float, fill: float) -> np.ndarray:
    """Per camera rotation (N, 3, 3): the distance to the centre at which the box corners span `fill` of the image."""
    q = np.einsum("kd,ndc->nkc", corners - center, rot)  # corners in camera axes, relative to the centre
    need = np.maximum(np.abs(q[..., 0]), np.abs(q[..., 1])) / (tan_half * fill) - q[..., 2]
    return np.maximum(need.max(1), (NEAR - q[..., 2]).max(1))


def box_exit(obb: OBB, dirs: np.ndarray) -> np.ndarray:
    """Distance from the box centre along each unit direction (N, 3) to the box surface."""
    local = np.abs(dirs @ np.asarray(obb.R))
    half = np.asarray(obb.extent) / 2
    with np.errstate(divide="ignore"):
        return np.min(np.where(local > 1e-12, half / local, np.inf), axis=1)


def cast(rc: o3d.t.geometry.RaycastingScene, poses: np.ndarray, rays_cam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hit (N, h, w) bool, geometry index (N, h, w), -1 = miss) of images cast from camera-to-world poses (N, 4, 4)."""
    d = np.einsum("hwc,ndc->nhwd", rays_cam, poses[:, :3, :3].astype(np.float32))
    o = np.broadcast_to(poses[:, None, None, :3, 3].astype(np.float32), d.shape)
    ans = rc.cast_rays(o3d.core.Tensor(np.ascontiguousarray(np.concatenate([o, d], -1))))
    hit = np.isfinite(ans["t_hit"].numpy())
    return hit, np.where(hit, ans["geometry_ids"].numpy().astype(np.int64), -1)


@dataclass
class ObjectPlan:
    """Every candidate of one object: angles, distances, poses, verdicts and low-resolution pixel counts."""

    object_id: int
    azimuth: np.ndarray
    elevation: np.ndarray
    distance: np.ndarray
    poses: np.ndarray
    status: np.ndarray
    score_pixels: np.ndarray
    visible_fraction: np.ndarray
    score: np.ndarray

    def best(self, keep: int) -> list[int]:
        """Candidates to render, best first: unoccluded ones by score, else the best partly occluded one."""
        for usable in (self.status == "ok", self.status == "occluded"):
            if usable.any():
                order = np.lexsort((np.arange(len(self.score)), -np.where(usable, self.score, -1.0)))
                return [int(i) for i in order[: min(keep, int(usable.sum()))]]
        return []


class Planner:
    """Free-space tests and id-only ray casts of a scene's candidate close-up cameras."""

    def __init__(self, scene: Scene, geometry: list[ObjectGeometry], cp: CloseupParams) -> None:
        self.scene, self.cp = scene, cp
        self.geometry = {g.id: g for g in geometry if g.id != 0}
        self.rc, self.geom_to_obj = ray_scene(geometry)
        self.rooms = np.asarray([[r.min, r.max] for r in scene.rooms], dtype=float).reshape(-1, 2, 3)
        # Solid boxes a camera may not stand in: procedural parts are the exact geometry; mesh scenes use object boxes,
        # leaving out structure (a Replica wall's box can span the whole room).
        boxes = [b for o in scene.objects for b in object_parts(o)] if scene.geometry is None else \
            [o.obb for o in scene.objects if o.class_name not in STRUCTURE_CLASSES]
        self.box_c = np.asarray([b.center for b in boxes], dtype=float).reshape(-1, 3)
        self.box_R = np.asarray([b.R for b in boxes], dtype=float).reshape(-1, 3, 3)
        self.box_h = np.asarray([b.extent for b in boxes], dtype=float).reshape(-1, 3) / 2
        self.az, self.el, self.dirs = candidate_directions(cp.azimuths, cp.elevations)
        self.rays = pixel_rays(cp.camera(cp.score_size))
        self.tan_half = float(np.tan(np.radians(cp.hfov_deg) / 2))

    def free(self, points: np.ndarray, target: int = 0) -> np.ndarray:
        """Whether each point (N, 3) is free space: inside a room, outside every solid box, `clearance` from surfaces
        (the target object only needs to be beyond the near plane)."""
        c = self.cp.clearance
        in_room = ((points[:, None] > self.rooms[None, :, 0] + c) & (points[:, None] < self.rooms[None, :, 1] - c)).all(2).any(1)
        local = np.einsum("nbd,bde->nbe", points[:, None] - self.box_c[None], self.box_R)
        in_box = (np.abs(local) < self.box_h[None]).all(2).any(1)
        ans = self.rc.compute_closest_points(o3d.core.Tensor(points.astype(np.float32)))
        dist = np.linalg.norm(ans["points"].numpy() - points, axis=1)
        own = self.geom_to_obj[np.minimum(ans["geometry_ids"].numpy().astype(np.int64), len(self.geom_to_obj) - 1)] == target
        return in_room & ~in_box & (dist >= np.where(own & (target != 0), NEAR, c))

    def plan(self, o: SceneObject) -> ObjectPlan:
        """Place, test and score every candidate camera of one object."""
        n, center = len(self.dirs), np.asarray(o.obb.center, dtype=float)
        rot = look_at(center + self.dirs, np.broadcast_to(center, (n, 3)).copy())[:, :3, :3]
        dist = fill_distance(box_corners(o.obb), center, rot, self.tan_half, self.cp.fill)
        # Line of sight from the box outwards: a hit before the camera moves it in front of the obstacle.
        exit_t = box_exit(o.obb, self.dirs) + 1e-3
        origins = (center + self.dirs * exit_t[:, None]).astype(np.float32)
        hit_t = self.rc.cast_rays(o3d.core.Tensor(np.concatenate([origins, self.dirs.astype(np.float32)], 1)))["t_hit"].numpy()
        lo = exit_t + NEAR
        # Something on the line from the box to the camera: move in front of it, unless it hugs the box (then the
        # camera stays and the ray cast below decides how much it hides).
        front = exit_t + hit_t - self.cp.clearance
        far = np.where(front >= lo, np.minimum(dist, front), dist)
        # Still not free (e.g. grazing a wall)? Step closer along the view ray; the first free step wins.
        steps = lo[:, None] + (far - lo)[:, None] * np.asarray(STEPS)[None]
        eyes = center + self.dirs[:, None] * steps[..., None]
        ok = self.free(eyes.reshape(-1, 3), o.id).reshape(steps.shape)
        free = ok.any(1)
        dist = np.where(free, steps[np.arange(n), ok.argmax(1)], far)
        poses = look_at(center + self.dirs * dist[:, None], np.broadcast_to(center, (n, 3)).copy())
        status = np.where(free, "unseen", "not free").astype(object)
        pixels, frac, score = np.zeros(n, np.int64), np.zeros(n), np.zeros(n)
        g = self.geometry.get(o.id)
        if free.any() and g is not None:
            hit, gid = cast(self.rc, poses[free], self.rays)
            mask = hit & (self.geom_to_obj[gid] == o.id)
            alone = cast(ray_scene([g])[0], poses[free], self.rays)[0].sum((1, 2))
            vis = mask.sum((1, 2))
            border = mask[:, 0].any(1) | mask[:, -1].any(1) | mask[:, :, 0].any(1) | mask[:, :, -1].any(1)
            pixels[free], frac[free] = vis, np.divide(vis, alone, out=np.zeros(len(vis)), where=alone > 0)
            score[free] = vis * np.where(border, 1.0 - BORDER_PENALTY, 1.0)
            seen = free.copy()
            seen[free] = alone > 0  # in the image when nothing else is in the way
            status[seen] = np.where((frac[seen] >= self.cp.min_visible) & (pixels[seen] > 0), "ok", "occluded")
        return ObjectPlan(o.id, self.az, self.el, dist, poses, status, pixels, np.clip(frac, 0, 1), score)


def write_closeups(scene_json: Path | str, condition: str, lighting: dict[str, Any], out_dir: Path | str,
                   cp: CloseupParams | None = None, renderer_name: str = "pyrender", progress: bool | None = None) -> CloseupIndex:
    """Plan, render and write the close-ups of every object of a scene under a lighting condition; return the index."""
    cp = cp or CloseupParams()
    scene_json, out_dir = Path(scene_json), Path(out_dir)
    scene = read_scene(scene_json)
    lights = resolve_lights(load_condition(condition, lighting), scene)
    geometry = scene_geometry(scene, scene_json.parent)
    planner = Planner(scene, geometry, cp)
    camera = cp.camera()
    renderer = make_renderer(renderer_name, geometry, camera)
    entries, flagged = [], []
    try:
        with atomic_dir(out_dir) as tmp:
            for o in tqdm(sorted(scene.objects, key=lambda o: o.id), desc=f"closeups {scene.name}", unit="object", leave=False,
                          disable=None if progress is None else not progress):
                plan = planner.plan(o)
                files: dict[int, dict[str, Any]] = {}
                for rank, i in enumerate(plan.best(cp.keep)):
                    g = renderer.geometry(plan.poses[i])
                    ids = g["ids"].astype(np.uint16)
                    px = int((ids == o.id).sum())
                    if px == 0:
                        continue
                    rgb = renderer.shade(g, plan.poses[i], lights, progress=0.0)
                    folder = tmp / str(o.id)
                    folder.mkdir(exist_ok=True)
                    names = (f"rgb_{rank}.png", f"instance_{rank}.png", f"camera_{rank}.json")
                    write_rgb(folder / names[0], rgb)
                    write_instance(folder / names[1], ids)
                    write_model(CloseupCamera(intrinsics=camera, pose=plan.poses[i].tolist()), folder / names[2])
                    files[i] = {"rgb": f"{o.id}/{names[0]}", "instance": f"{o.id}/{names[1]}", "camera": f"{o.id}/{names[2]}", "pixels": px}
                views = []
                for i in range(len(plan.status)):
                    status = "chosen" if i in files else ("ok" if plan.status[i] == "ok" else str(plan.status[i]))
                    views.append(CloseupView(azimuth_deg=round(float(plan.azimuth[i]), 4), elevation_deg=round(float(plan.elevation[i]), 4),
                                                    distance=round(float(plan.distance[i]), 4), score_pixels=int(plan.score_pixels[i]),
                                                    visible_fraction=round(float(plan.visible_fraction[i]), 4), status=status, **files.get(i, {})))
                entries.append(CloseupObject(object_id=o.id, class_name=o.class_name, views=views))
                if not files:
                    flagged.append(CloseupFlag(object_id=o.id, reason=_flag_reason(plan, o.id in planner.geometry)))
            index = CloseupIndex(scene=scene.name, condition=condition, renderer=renderer.name, size=cp.size, hfov_deg=cp.hfov_deg,
                                        fill=cp.fill, score_size=cp.score_size, objects=entries, flagged=flagged)
            write_model(index, tmp / INDEX_FILE)
    finally:
        renderer.close()
    return index


def _flag_reason(plan: ObjectPlan, has_geometry: bool) -> str:
    """Why no candidate of an object was rendered."""
    if not has_geometry:
        return "the object has no geometry in the scene's mesh"
    counts = {s: int((plan.status == s).sum()) for s in ("not free", "unseen")}
    return "no viewpoint shows it (" + ", ".join(f"{v} {k}" for k, v in counts.items() if v) + f" of {len(plan.status)} candidates)"
