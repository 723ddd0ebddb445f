"""habitat-sim backend (GPU workstations, ReplicaCAD / HM3D): plain mappings, habitat imported lazily.

habitat-sim has no wheels for this project's CPU machines (Python 3.11), so everything that does not
need the simulator (light setups per path segment, sensor and agent specs) is plain data tested here;
`require_habitat()` gives the install instruction when the simulator is missing.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from tiermap.schema import OBB, CameraParams, Lexicon, Light, Room, Scene, SceneObject

INSTALL_HINT = ("habitat-sim is not installed (it has no wheels for this Python/CPU machine): on a GPU workstation run "
                "`conda install habitat-sim withbullet -c conda-forge -c aihabitat`, or use --renderer pyrender")


def require_habitat() -> Any:
    """Import habitat_sim or fail with the install instruction."""
    try:
        import habitat_sim  # type: ignore[import-not-found]
    except ImportError:
        raise RuntimeError(INSTALL_HINT) from None
    return habitat_sim


def z_up_to_y_up(p: list[float] | np.ndarray) -> list[float]:
    """tiermap world (z up) → habitat world (y up, -z forward): (x, y, z) → (x, z, -y)."""
    x, y, z = (float(v) for v in p)
    return [x, z, -y]


def light_info(light: Light, camera_height: float = 0.0) -> dict[str, Any]:
    """One habitat LightInfo as a dict: vector (w=1 point, w=0 directional), colour scaled by intensity, model."""
    if light.type == "directional":
        d = z_up_to_y_up(light.direction or [0.0, 0.0, -1.0])
        vector = [*d, 0.0]
    elif light.attached_to_camera or light.position is None:
        vector = [0.0, 0.0, 0.0, 1.0]  # at the camera origin in camera space
    else:
        vector = [*z_up_to_y_up(light.position), 1.0]
    model = "CAMERA" if light.attached_to_camera else "GLOBAL"
    return {"vector": vector, "color": [float(c) * light.intensity for c in light.color], "model": model}


def light_setups(lights: list[Light], n_segments: int) -> list[list[dict[str, Any]]]:
    """LightInfo lists per path segment: a light is in segment k if it is on at the segment's midpoint.

    Ambient lights are not habitat lights (habitat's ambient comes from the PBR IBL); they are dropped.
    """
    out = []
    for k in range(n_segments):
        mid = (k + 0.5) / n_segments
        out.append([light_info(L) for L in lights if L.type != "ambient" and L.is_on(mid)])
    return out


def sensor_specs(camera: CameraParams, height: float) -> list[dict[str, Any]]:
    """Colour, depth and semantic sensor specs with the camera's resolution and horizontal FOV."""
    hfov = math.degrees(2 * math.atan(camera.w / (2 * camera.fx)))
    base = {"resolution": [camera.h, camera.w], "position": [0.0, height, 0.0], "hfov": hfov}
    return [{"uuid": "color_sensor", "sensor_type": "COLOR", **base},
            {"uuid": "depth_sensor", "sensor_type": "DEPTH", **base},
            {"uuid": "semantic_sensor", "sensor_type": "SEMANTIC", **base}]


def agent_actions(linear_speed: float, angular_speed: float, fps: float) -> dict[str, dict[str, float]]:
    """Discrete actions that move at the reference speeds for one frame each (GreedyGeodesicFollower steps)."""
    return {"move_forward": {"amount": linear_speed / fps},
            "turn_left": {"amount": math.degrees(angular_speed / fps)},
            "turn_right": {"amount": math.degrees(angular_speed / fps)}}


def habitat_scene(name: str, scene_path: Path, seed: int = 0) -> Scene:
    """Objects of a habitat scene (ReplicaCAD/HM3D semantic scene) as a tiermap scene; geometry stays in habitat's files.

    `scene_path` is the scene file habitat loads (e.g. `<hm3d>/val/00800-TEEsavR23oF/TEEsavR23oF.basis.glb` or a
    ReplicaCAD `*.scene_instance.json`); the dataset config is looked for beside it or above it.
    """
    habitat_sim = require_habitat()
    cfg = habitat_sim.SimulatorConfiguration()
    cfg.scene_id = str(scene_path)
    configs = [p for d in (scene_path.parent, *scene_path.parents[:3]) for p in sorted(d.glob("*.scene_dataset_config.json"))]
    if configs:
        cfg.scene_dataset_config_file = str(configs[0])
    cfg.load_semantic_mesh = True
    sim = habitat_sim.Simulator(habitat_sim.Configuration(cfg, [habitat_sim.agent.AgentConfiguration()]))
    try:
        objects = []
        for obj in sim.semantic_scene.objects:
            if obj is None or obj.category is None:
                continue
            oid = int(obj.semantic_id)
            if not 1 <= oid <= 65535:
                continue
            box = obj.aabb  # axis-aligned in habitat's y-up world, so still axis-aligned in tiermap's z-up world
            size = [float(x) for x in box.sizes]
            objects.append(SceneObject(id=oid, class_name=str(obj.category.name()).lower(),
                                       obb=OBB(center=z_up_from_y_up(box.center), extent=[size[0], size[2], size[1]], R=np.eye(3).tolist()),
                                       lexicon=Lexicon(synonyms=[str(obj.category.name()).lower()])))
        lo, hi = sim.pathfinder.get_bounds()
        lo_z, hi_z = z_up_from_y_up(lo), z_up_from_y_up(hi)
        room = Room(name="room0", kind="habitat", min=np.minimum(lo_z, hi_z).tolist(), max=np.maximum(lo_z, hi_z).tolist())
    finally:
        sim.close()
    return Scene(name=name, source="habitat", seed=seed, geometry=None, rooms=[room], objects=objects, habitat_scene=str(scene_path))


def z_up_from_y_up(p: Any) -> list[float]:
    """habitat world (y up) → tiermap world (z up): (x, y, z) → (x, -z, y), the inverse of `z_up_to_y_up`."""
    x, y, z = (float(v) for v in p)
    return [x, -z, y]
