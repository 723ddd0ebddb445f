"""habitat-sim backend (GPU workstations, ReplicaCAD / HM3D): plain mappings, habitat imported lazily.

habitat-sim has no wheels for this project's CPU machines (Python 3.11), so everything that does not
need the simulator (light setups per path segment, sensor specs, pose conversion) is plain data tested here;
`require_habitat()` gives the install instruction when the simulator is missing.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from generation.geometry import RendererUnavailableError
from tiermap.formats.scene import OBB, Lexicon, Room, Scene, SceneObject
from tiermap.formats.sequence import CameraParams, Light

INSTALL_HINT = ("habitat-sim is not installed (it has no wheels for this Python/CPU machine): on a GPU workstation run "
                "`conda install habitat-sim withbullet -c conda-forge -c aihabitat`, or use --renderer pyrender")


_ZUP_TO_YUP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
_CV_TO_GL3 = np.diag([1.0, -1.0, -1.0])


def require_habitat() -> Any:
    """Import habitat_sim or fail with the install instruction."""
    try:
        import habitat_sim  # type: ignore[import-not-found]
    except ImportError:
        raise RendererUnavailableError(INSTALL_HINT) from None
    return habitat_sim


def z_up_to_y_up(p: list[float] | np.ndarray) -> list[float]:
    """tiermap world (z up) → habitat world (y up, -z forward): (x, y, z) → (x, z, -y)."""
    return [float(v) for v in _ZUP_TO_YUP @ np.asarray(p, dtype=float)]


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
    return [float(v) for v in _ZUP_TO_YUP.T @ np.asarray(p, dtype=float)]


def habitat_camera_pose(pose: np.ndarray) -> tuple[list[float], np.ndarray]:
    """tiermap camera-to-world (OpenCV axes, z-up world) → habitat sensor position and rotation (OpenGL axes, y-up world)."""
    return z_up_to_y_up(pose[:3, 3]), _ZUP_TO_YUP @ np.asarray(pose[:3, :3]) @ _CV_TO_GL3


def segment_of(progress: float, n_segments: int) -> int:
    """Path segment of a frame at `progress` in [0, 1] (the last frame belongs to the last segment)."""
    return min(int(progress * n_segments), n_segments - 1)


class HabitatRenderer:
    """habitat-sim sensors (colour, depth, semantic) for a habitat scene; lights switch per path segment (OSMa-Bench)."""

    name = "habitat-sim"
    n_segments = 8

    def __init__(self, scene: Scene, camera: CameraParams) -> None:
        habitat_sim = require_habitat()
        import quaternion  # type: ignore[import-not-found]  # numpy-quaternion, a habitat-sim dependency

        self._hs, self._quat, self.camera = habitat_sim, quaternion, camera
        sim_cfg = habitat_sim.SimulatorConfiguration()
        sim_cfg.scene_id = str(scene.habitat_scene)
        sim_cfg.scene_light_setup = "tiermap"
        sim_cfg.override_scene_light_defaults = True
        sim_cfg.load_semantic_mesh = True
        specs = []
        for s in sensor_specs(camera, 0.0):
            spec = habitat_sim.CameraSensorSpec()
            spec.uuid, spec.resolution, spec.position = s["uuid"], s["resolution"], s["position"]
            spec.hfov = s["hfov"]
            spec.sensor_type = getattr(habitat_sim.SensorType, s["sensor_type"])
            specs.append(spec)
        agent = habitat_sim.agent.AgentConfiguration(sensor_specifications=specs)
        self.sim = habitat_sim.Simulator(habitat_sim.Configuration(sim_cfg, [agent]))
        self._lights_key: tuple[int, ...] | None = None
        self._obs: dict[str, np.ndarray] = {}

    def _set_lights(self, lights: list[Light], progress: float) -> bool:
        """Register this segment's lights under the scene's key (drawables update at once); True if they changed."""
        setups = light_setups(lights, self.n_segments)
        k = segment_of(progress, self.n_segments)
        key = tuple(i for i, L in enumerate(lights) if L.type != "ambient" and L.is_on((k + 0.5) / self.n_segments))
        if key == self._lights_key:
            return False
        gfx = self._hs.gfx
        infos = [gfx.LightInfo(vector=d["vector"], color=d["color"], model=getattr(gfx.LightPositionModel, d["model"].title()))
                 for d in setups[k]]
        self.sim.set_light_setup(infos, "tiermap")
        self._lights_key = key
        return True

    def geometry(self, pose: np.ndarray) -> dict[str, np.ndarray]:
        """Place the agent at the pose; depth (z, metres) and semantic ids from habitat's sensors."""
        position, R = habitat_camera_pose(pose)
        state = self._hs.AgentState(position=np.asarray(position, dtype=np.float32), rotation=self._quat.from_rotation_matrix(R))
        self.sim.get_agent(0).set_state(state, reset_sensors=True)
        self._obs = self.sim.get_sensor_observations()
        depth = np.asarray(self._obs["depth_sensor"], dtype=np.float64)
        ids = np.asarray(self._obs["semantic_sensor"])
        return {"depth": depth, "ids": np.clip(ids, 0, 65535).astype(np.uint16), "hit": depth > 0}

    def shade(self, g: dict[str, np.ndarray], pose: np.ndarray, lights: list[Light], progress: float) -> np.ndarray:
        """uint8 RGB from the colour sensor under the lights of this path segment."""
        if self._set_lights(lights, progress):
            self._obs = self.sim.get_sensor_observations()
        return np.ascontiguousarray(np.asarray(self._obs["color_sensor"])[..., :3]).astype(np.uint8)

    def close(self) -> None:
        """Shut the simulator down."""
        self.sim.close()
