"""Coverage planning on a five-room procedural scene: planning time, candidates, goals, path length, objects covered.

For reference the old random planner (`planner: random`, params' n_goals) on the same scene in the same run. Objects
seen are counted in ray-cast instance images at 64x48 with min_pixels scaled from params (50 at 320x240 -> 2).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generation.coverage import plan_coverage  # noqa: E402
from generation.geometry import ObjectGeometry, scene_geometry  # noqa: E402
from generation.procedural import generate_scene  # noqa: E402
from generation.sequence import (  # noqa: E402
    camera_from_params,
    make_renderer,
    scene_poses,
    view_from_params,
)
from generation.trajectory import STRUCTURE_CLASSES, walk_graph  # noqa: E402
from tiermap.formats.scene import Scene

ROOMS = ["living room", "bedroom", "office", "kitchen", "meeting room"]
SEED = 3
PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def seen_objects(scene: Scene, geometry: list[ObjectGeometry], poses: np.ndarray, params: dict) -> set[int]:
    """Non-structure objects with at least min_pixels pixels in some 64x48 ray-cast frame."""
    render = dict(params["render"], width=64, height=48)
    min_px = max(round(params["gt"]["min_pixels"] * 64 * 48 / (params["render"]["width"] * params["render"]["height"])), 1)
    r = make_renderer("raycast", geometry, camera_from_params(render))
    seen: set[int] = set()
    for pose in poses:
        ids, counts = np.unique(r.geometry(pose)["ids"], return_counts=True)
        seen |= set(ids[counts >= min_px].tolist())
    objects = {o.id for o in scene.objects if o.class_name not in STRUCTURE_CLASSES}
    return seen & objects


def main() -> None:
    """Print the coverage planner's figures and the random planner's coverage on the same scene."""
    params = yaml.safe_load(PARAMS.read_text())
    traj = params["trajectory"]
    scene = generate_scene("five", SEED, ROOMS)
    geometry = scene_geometry(scene, ".")
    objects = [o for o in scene.objects if o.class_name not in STRUCTURE_CLASSES]
    _, nodes, origin = walk_graph(scene, robot_radius=float(traj["robot_radius"]))
    xs = origin[0] + (np.asarray(nodes)[:, 0] + 0.5) * origin[2]
    reachable = [r.name for r in scene.rooms if ((xs > r.min[0]) & (xs < r.max[0])).any()]
    print(f"scene: {len(scene.rooms)} rooms ({', '.join(ROOMS)}), seed {SEED}, {len(objects)} objects; "
          f"rooms in the largest free region: {len(reachable)} ({', '.join(reachable)})")
    t = time.perf_counter()
    plan = plan_coverage(scene, geometry, seed=SEED, view=view_from_params(params), spacing=float(traj["candidate_spacing"]),
                         robot_radius=float(traj["robot_radius"]), camera_height=float(traj["camera_height"]))
    dt = time.perf_counter() - t
    for planner in ("coverage", "random"):
        p = dict(params, trajectory=dict(traj, planner=planner))
        t = time.perf_counter()
        poses = scene_poses(scene, p, 1.0, geometry)
        dt_poses = time.perf_counter() - t
        length = float(np.linalg.norm(np.diff(poses[:, :2, 3], axis=0), axis=1).sum())
        seen = seen_objects(scene, geometry, poses, params)
        line = f"{planner:8s}: poses {dt_poses:.2f} s, {len(poses)} frames at {traj['fps']} fps, path {length:.1f} m, " \
               f"objects seen {len(seen)}/{len(objects)} ({len(seen) / len(objects):.0%})"
        if planner == "coverage":
            line += (f"; planning {dt:.2f} s, {plan.candidates} candidates, {len(plan.goal_index)} goals, "
                     f"{plan.coverable_objects} objects coverable from the candidates")
        else:
            line += f"; {traj['n_goals']} random goals"
        print(line)


if __name__ == "__main__":
    main()
