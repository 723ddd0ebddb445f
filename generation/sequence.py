"""Render one (scene, condition) sequence in the Replica/NICE-SLAM layout, atomically."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from generation.conditions import load_condition, resolve_lights
from generation.coverage import View, plan_coverage, sequence_coverage
from generation.geometry import ObjectGeometry, sample_surface, scene_bounds, scene_geometry
from generation.trajectory import FLOORS, floor_z, plan_path, sample_poses, smooth
from tiermap.atomic import atomic_dir
from tiermap.formats.base import InputError, SchemaError, write_model
from tiermap.formats.loaders import write_loader_configs
from tiermap.formats.params import PARAMS_FILE
from tiermap.formats.scene import Scene, read_scene
from tiermap.formats.sequence import (
    CAMERA_FILE,
    INSTANCE_DIR,
    META_FILE,
    RESULTS_DIR,
    TRAJ_FILE,
    CameraParams,
    SequenceMeta,
    Speed,
    depth_path,
    instance_path,
    rgb_path,
    write_depth,
    write_instance,
    write_rgb,
    write_traj,
)


def camera_from_params(render: dict[str, Any]) -> CameraParams:
    """Intrinsics from the render block: horizontal field of view in degrees, centred principal point.

    OpenCV convention, pixel centres at integer coordinates (as gradslam/ConceptGraphs, NICE-SLAM, Replica and
    OSMa-Bench back-project): the image centre is ((w-1)/2, (h-1)/2).
    """
    w, h = int(render["width"]), int(render["height"])
    f = (w / 2) / np.tan(np.radians(float(render.get("hfov_deg", 90))) / 2)
    return CameraParams(w=w, h=h, fx=f, fy=f, cx=(w - 1) / 2, cy=(h - 1) / 2, depth_scale=float(render.get("depth_scale", 1000)))


def view_from_params(params: dict[str, Any]) -> View:
    """What a coverage goal can see, from the render block (field of view, aspect) and the trajectory block."""
    render, traj = params["render"], params["trajectory"]
    hfov = np.radians(float(render.get("hfov_deg", 90)))
    vfov = 2 * np.arctan(np.tan(hfov / 2) * int(render["height"]) / int(render["width"]))
    return View(hfov=hfov, vfov=vfov, view_range=float(traj.get("view_range", 4.0)),
                min_visible_samples=int(traj.get("min_visible_samples", 3)), min_solid_angle=float(traj.get("min_solid_angle", 0.003)))


def scene_poses(scene: Scene, params: dict[str, Any], speed_factor: float, geometry: list[ObjectGeometry] | None = None) -> np.ndarray:
    """Poses shared by every condition of a scene: same seed, same path; speed scales the sampling.

    Mesh scenes find free space from their surface points; procedural scenes from their object boxes. The coverage
    planner sees through the scene geometry (object boxes when there is none, as for habitat scenes).
    """
    traj = params["trajectory"]
    obstacles = None
    if scene.geometry is not None and geometry is not None:
        structure = {o.id for o in scene.objects if o.class_name in FLOORS}  # walls stay obstacles
        obstacles = sample_surface([g for g in geometry if g.id not in structure], density=400, seed=scene.seed, labelled_only=False)[0]
    planner = traj.get("planner", "random")
    turns: dict[int, np.ndarray] = {}
    if planner == "coverage":
        plan = plan_coverage(scene, geometry, seed=scene.seed, view=view_from_params(params), spacing=float(traj.get("candidate_spacing", 0.5)),
                             robot_radius=float(traj["robot_radius"]), camera_height=float(traj["camera_height"]), obstacles=obstacles)
        raw, turns = plan.path, plan.turns
    elif planner == "random":
        raw = plan_path(scene, seed=scene.seed, n_goals=int(traj["n_goals"]), robot_radius=float(traj["robot_radius"]), obstacles=obstacles)
    else:
        raise SchemaError(PARAMS_FILE, "trajectory.planner", "one of coverage, random", planner)
    return sample_poses(smooth(raw), linear=float(traj["linear_speed"]) * speed_factor, angular=float(traj["angular_speed"]) * speed_factor,
                        fps=float(traj["fps"]), height=floor_z(scene) + float(traj["camera_height"]), turns=turns)


RENDERERS = ("pyrender", "raycast", "habitat")


def make_renderer(name: str, geometry: list[ObjectGeometry], camera: CameraParams, antialias: bool = True):  # type: ignore[no-untyped-def]
    """Renderer by name: pyrender (default, Mesa EGL; `antialias`: 4x multisampling), raycast (Open3D only), habitat (GPU)."""
    if name == "pyrender":
        from generation.render_pyrender import PyrenderRenderer

        return PyrenderRenderer(geometry, camera, antialias=antialias)
    if name == "raycast":
        from generation.render_raycast import RaycastRenderer

        return RaycastRenderer(geometry, camera)
    if name == "habitat":
        from generation.habitat import require_habitat

        require_habitat()
        raise InputError("habitat-sim renders habitat scenes (ReplicaCAD/HM3D, made with --source habitat); "
                           "procedural and mesh scenes use pyrender or raycast")
    raise InputError(f"unknown renderer {name!r}: expected one of {', '.join(RENDERERS)}")


def _input_folder(out_dir: Path) -> str:
    """The sequence folder as NICE-SLAM's `data.input_folder`: relative to the working directory (DVC runs at the repo root)."""
    try:
        return Path(out_dir).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(out_dir).name


def render_sequence(scene_json: Path, condition: str, params: dict[str, Any], out_dir: Path, max_frames: int | None = None,
                    renderer_name: str | None = None) -> SequenceMeta:
    """Render the condition's sequence of a scene into out_dir (written to a temp folder, renamed at the end)."""
    scene = read_scene(scene_json)
    cond = load_condition(condition, params["lighting"])
    lights = resolve_lights(cond, scene)
    camera = camera_from_params(params["render"])
    name = renderer_name or params["render"].get("renderer", "pyrender")
    if name == "habitat" or scene.source == "habitat":
        if scene.source != "habitat":
            make_renderer("habitat", [], camera)  # the install hint, or: habitat renders habitat scenes only
        from generation.habitat import HabitatRenderer

        renderer = HabitatRenderer(scene, camera)  # imports habitat-sim or names its install
        poses = scene_poses(scene, params, cond.speed_factor)
    else:
        geometry = scene_geometry(scene, scene_json.parent)
        poses = scene_poses(scene, params, cond.speed_factor, geometry)
        renderer = make_renderer(name, geometry, camera, antialias=params["render"].get("antialias", True))
    if max_frames is not None:
        poses = poses[:max_frames]
    with atomic_dir(out_dir) as tmp:
        (tmp / RESULTS_DIR).mkdir()
        (tmp / INSTANCE_DIR).mkdir()
        n = len(poses)
        min_pixels = int(params.get("gt", {}).get("min_pixels", 50))
        seen: set[int] = set()
        for i, pose in enumerate(tqdm(poses, desc=f"render {scene.name}/{condition}", unit="frame", leave=False)):
            g = renderer.geometry(pose)
            rgb = renderer.shade(g, pose, lights, progress=i / max(n - 1, 1))
            write_rgb(rgb_path(tmp, i), rgb)
            write_depth(depth_path(tmp, i), g["depth"], camera)
            ids = g["ids"].astype(np.uint16)
            write_instance(instance_path(tmp, i), ids)
            u, c = np.unique(ids, return_counts=True)
            seen.update(u[c >= min_pixels].tolist())
        write_traj(tmp / TRAJ_FILE, poses)
        write_model(camera, tmp / CAMERA_FILE)
        write_loader_configs(tmp, camera, scene_bounds(scene), _input_folder(out_dir))
        traj = params["trajectory"]
        meta = SequenceMeta(
            scene=scene.name, condition=condition, lights=lights,
            speed=Speed(linear=float(traj["linear_speed"]) * cond.speed_factor, angular=float(traj["angular_speed"]) * cond.speed_factor),
            fps=float(traj["fps"]), renderer=renderer.name, seed=scene.seed, frame_count=n,
            coverage=sequence_coverage(scene, poses[:, :3, 3], seen, min_pixels))
        write_model(meta, tmp / META_FILE)
    renderer.close()
    return meta
