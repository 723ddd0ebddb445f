"""A rendered sequence in the Replica/NICE-SLAM layout: camera_params.json, meta.json, traj.txt and the frames."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from tiermap import atomic
from tiermap.formats.base import Finite, Model, PosInt, SchemaError, Vec3, read_model


class CameraParams(Model):
    """camera_params.json: pinhole intrinsics and the depth PNG scale (raw uint16 / depth_scale = metres)."""

    w: PosInt
    h: PosInt
    fx: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    fy: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    cx: Finite
    cy: Finite
    depth_scale: Annotated[float, Field(gt=0, allow_inf_nan=False)]

    def K(self) -> np.ndarray:
        """3×3 intrinsic matrix."""
        return np.array([[self.fx, 0, self.cx], [0, self.fy, self.cy], [0, 0, 1]], dtype=float)


class Light(Model):
    """A light source; `attached_to_camera` lights move with the camera."""

    name: str
    type: Literal["point", "spot", "directional", "ambient"]
    position: Vec3 | None = None
    direction: Vec3 | None = None
    color: Vec3 = [1.0, 1.0, 1.0]
    intensity: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    attached_to_camera: bool = False
    active: list[tuple[float, float]] | None = None
    """Intervals [start, end) of path progress (0..1) during which the light is on; None = always on."""

    def is_on(self, progress: float) -> bool:
        """Whether the light is on at this fraction of the path."""
        return self.active is None or any(a <= progress < b or (b >= 1.0 and progress >= 1.0) for a, b in self.active)


class Speed(Model):
    """Reference motion speeds."""

    linear: Annotated[float, Field(gt=0)]
    angular: Annotated[float, Field(gt=0)]


class SequenceMeta(Model):
    """meta.json of one rendered sequence."""

    scene: str
    condition: str
    lights: list[Light]
    speed: Speed
    fps: Annotated[float, Field(gt=0)]
    renderer: str
    seed: int
    frame_count: Annotated[int, Field(ge=0)]
    coverage: Coverage | None = None


class Coverage(Model):
    """How much of the scene a sequence shows: non-structure objects with ≥ min_pixels pixels in some frame, rooms the camera entered."""

    objects_seen: Annotated[int, Field(ge=0)]
    objects_total: Annotated[int, Field(ge=0)]
    fraction: Annotated[float, Field(ge=0, le=1)]
    rooms_entered: list[str]
    rooms_total: Annotated[int, Field(ge=0)]
    min_pixels: Annotated[int, Field(ge=1)]
    unseen: list[int] = []


SequenceMeta.model_rebuild()


def read_camera(path: Path | str) -> CameraParams:
    """camera_params.json."""
    return read_model(CameraParams, path)


def read_meta(path: Path | str) -> SequenceMeta:
    """meta.json."""
    return read_model(SequenceMeta, path)


def read_traj(path: Path | str) -> np.ndarray:
    """traj.txt: one row-major camera-to-world 4×4 per line → (N, 4, 4) float64."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    poses = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            vals = [float(x) for x in line.split()]
        except ValueError:
            raise SchemaError(path, f"line {n}", "16 numbers", line) from None
        if len(vals) != 16 or not all(math.isfinite(v) for v in vals):
            raise SchemaError(path, f"line {n}", "16 finite numbers (a row-major 4x4 pose)", len(vals))
        T = np.array(vals).reshape(4, 4)
        R = T[:3, :3]
        if not np.allclose(T[3], [0, 0, 0, 1], atol=1e-6) or not np.allclose(R @ R.T, np.eye(3), atol=1e-4):
            raise SchemaError(path, f"line {n}", "a rigid transform (orthonormal rotation, last row 0 0 0 1)")
        poses.append(T)
    return np.asarray(poses, dtype=float).reshape(-1, 4, 4)


def write_traj(path: Path | str, poses: np.ndarray) -> Path:
    """Write (N, 4, 4) camera-to-world poses as traj.txt."""
    poses = np.asarray(poses, dtype=float)
    if poses.ndim != 3 or poses.shape[1:] != (4, 4):
        raise SchemaError(path, "poses", "an array of shape (N, 4, 4)", poses.shape)
    lines = [" ".join(f"{v:.9g}" for v in T.reshape(-1)) for T in poses]
    return atomic.write_text(path, "\n".join(lines) + ("\n" if lines else ""))
