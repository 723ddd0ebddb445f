"""A rendered sequence in the Replica/NICE-SLAM layout: camera_params.json, meta.json, traj.txt and the frames."""
from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from PIL import Image, UnidentifiedImageError
from pydantic import Field

from tiermap import atomic
from tiermap.formats.base import Finite, Model, PosInt, SchemaError, Vec3, read_model

CAMERA_FILE = "camera_params.json"
META_FILE = "meta.json"
TRAJ_FILE = "traj.txt"
RESULTS_DIR = "results"
INSTANCE_DIR = "instance"
RGB_SUFFIXES = (".jpg", ".png")
INSTANCE_NAME = re.compile(r"^(\d+)\.png$")


def rgb_path(sequence_dir: Path, frame: int, suffix: str = ".jpg") -> Path:
    """results/frame%06d.jpg|png."""
    return Path(sequence_dir) / RESULTS_DIR / f"frame{frame:06d}{suffix}"


def depth_path(sequence_dir: Path, frame: int) -> Path:
    """results/depth%06d.png (uint16, raw / depth_scale = metres)."""
    return Path(sequence_dir) / RESULTS_DIR / f"depth{frame:06d}.png"


def instance_path(sequence_dir: Path, frame: int) -> Path:
    """instance/%06d.png (uint16 object ids, 0 = none)."""
    return Path(sequence_dir) / INSTANCE_DIR / f"{frame:06d}.png"


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


@dataclass(frozen=True)
class Sequence:
    """A rendered sequence's frames (indices, RGB and instance files), their camera-to-world poses and the camera."""

    dir: Path
    frames: np.ndarray
    rgb: list[Path]
    instance: list[Path]
    poses: np.ndarray
    camera: CameraParams

    @property
    def shape(self) -> tuple[int, int]:
        """(height, width) of every image."""
        return self.camera.h, self.camera.w


def open_sequence(sequence_dir: Path | str) -> Sequence:
    """Index a Replica/NICE-SLAM sequence folder; missing parts are SchemaErrors naming the file."""
    d = Path(sequence_dir)
    if not d.is_dir():
        raise SchemaError(d, "<folder>", "an existing sequence folder (results/, instance/, traj.txt, camera_params.json)")
    camera = read_camera(d / CAMERA_FILE)
    inst_dir = d / INSTANCE_DIR
    found = sorted(inst_dir.glob("*.png")) if inst_dir.is_dir() else []
    if not found:
        raise SchemaError(inst_dir, "<folder>", "instance images %06d.png (uint16 object ids, 0 = none)")
    frames = []
    for p in found:
        m = INSTANCE_NAME.match(p.name)
        if m is None:
            raise SchemaError(p, "<name>", "instance images named %06d.png", p.name)
        frames.append(int(m.group(1)))
    rgb = []
    for i in frames:
        cands = [rgb_path(d, i, s) for s in RGB_SUFFIXES]
        hit = next((c for c in cands if c.is_file()), None)
        if hit is None:
            raise SchemaError(cands[0], "<file>", "an RGB image (frame%06d.jpg or .png) for every instance image")
        rgb.append(hit)
    traj = read_traj(d / TRAJ_FILE)
    if frames[-1] >= len(traj):
        raise SchemaError(d / TRAJ_FILE, "lines", f"one pose per frame (frame index {frames[-1]} needs {frames[-1] + 1} lines)", len(traj))
    idx = np.asarray(frames, dtype=np.int64)
    return Sequence(d, idx, rgb, found, traj[idx], camera)


def _read_image(path: Path, what: str, mode: str | None = None) -> np.ndarray:
    if not Path(path).is_file():
        raise SchemaError(path, "<file>", f"an existing {what}")
    try:
        with Image.open(path) as im:
            return np.asarray(im.convert(mode) if mode else im)
    except (UnidentifiedImageError, OSError) as err:
        raise SchemaError(path, "<file>", f"a readable {what} ({type(err).__name__})") from None


def _check_shape(path: Path, arr: np.ndarray, shape: tuple[int, int] | None, what: str) -> None:
    if shape is not None and arr.shape[:2] != tuple(shape):
        raise SchemaError(path, "shape", f"{what} of (h, w) = {tuple(shape)} as camera_params.json", arr.shape[:2])


def read_instance(path: Path | str, shape: tuple[int, int] | None) -> np.ndarray:
    """An instance PNG as a (h, w) uint16 id image, checked against the camera's image shape (None: any shape)."""
    arr = _read_image(Path(path), "PNG instance image")
    if shape is not None and arr.shape != tuple(shape):
        raise SchemaError(path, "shape", f"a single-channel image of (h, w) = {tuple(shape)} as camera_params.json", arr.shape)
    if arr.ndim != 2:
        raise SchemaError(path, "shape", "a single-channel image of object ids", arr.shape)
    if arr.dtype.kind not in "ui":
        raise SchemaError(path, "dtype", "integer object ids (uint16 PNG)", str(arr.dtype))
    if arr.dtype != np.uint16:
        if arr.size and (arr.min() < 0 or arr.max() > 65535):
            raise SchemaError(path, "values", "object ids in 0..65535", int(arr.max()))
        arr = arr.astype(np.uint16)
    return arr


def read_rgb(path: Path | str, shape: tuple[int, int] | None) -> np.ndarray:
    """An RGB frame as (h, w, 3) uint8, checked against the camera's image shape (None: any shape)."""
    arr = _read_image(Path(path), "RGB image", "RGB")
    _check_shape(Path(path), arr, shape, "an image")
    return arr


def read_depth(path: Path | str, camera: CameraParams) -> np.ndarray:
    """A depth PNG as (h, w) float32 metres (raw uint16 / depth_scale; 0 = no depth), checked against the camera."""
    arr = _read_image(Path(path), "uint16 depth PNG")
    if arr.ndim != 2 or arr.dtype.kind not in "ui" or arr.itemsize > 2:
        raise SchemaError(path, "dtype", "a single-channel 16-bit depth image", f"{arr.dtype} {arr.shape}")
    _check_shape(Path(path), arr, (camera.h, camera.w), "a depth image")
    return arr.astype(np.float32) / camera.depth_scale


# Frame writers write in place: sequences are built inside `atomic.atomic_dir`, so a frame needs no fsync of its own.
def encode_png(arr: np.ndarray) -> bytes:
    """PNG bytes of an image array (uint8 RGB/grey or uint16 ids/depth)."""
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def write_rgb(path: Path | str, rgb: np.ndarray, quality: int = 92) -> Path:
    """An (h, w, 3) uint8 frame as JPEG (or PNG by suffix)."""
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise SchemaError(path, "rgb", "an (h, w, 3) uint8 image", f"{rgb.dtype} {rgb.shape}")
    if Path(path).suffix.lower() == ".png":
        Path(path).write_bytes(encode_png(rgb))
    else:
        Image.fromarray(rgb).save(path, format="JPEG", quality=quality)
    return Path(path)


def write_depth(path: Path | str, depth_m: np.ndarray, camera: CameraParams) -> Path:
    """(h, w) metres as a uint16 PNG in units of 1 / depth_scale (clipped to 0..65535)."""
    raw = np.clip(np.round(np.asarray(depth_m) * camera.depth_scale), 0, 65535).astype(np.uint16)
    Path(path).write_bytes(encode_png(raw))
    return Path(path)


def write_instance(path: Path | str, ids: np.ndarray) -> Path:
    """(h, w) object ids as a uint16 PNG."""
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.dtype.kind not in "ui" or (ids.size and int(ids.max()) > 65535):
        raise SchemaError(path, "ids", "an (h, w) image of object ids in 0..65535", f"{ids.dtype} {ids.shape}")
    Path(path).write_bytes(encode_png(ids.astype(np.uint16)))
    return Path(path)
