"""habitat-sim backend (GPU workstations, ReplicaCAD / HM3D): plain mappings, habitat imported lazily.

habitat-sim has no wheels for this project's CPU machines (Python 3.11), so everything that does not
need the simulator (light setups per path segment, sensor and agent specs) is plain data tested here;
`require_habitat()` gives the install instruction when the simulator is missing.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tiermap.schema import CameraParams, Light

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
