"""What annotators see: visibility.json, crop views and index, close-up index and cameras."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from tiermap import atomic
from tiermap.formats.base import (
    Finite,
    Model,
    NonNegInt,
    PosInt,
    SchemaError,
    _pydantic_error,
    dump_json,
    read_json,
    read_model,
    write_model,
)
from tiermap.formats.sequence import CameraParams

INDEX_FILE = "index.json"

CONTEXT_FILE = "context.png"

CROP_FILE = "crop.png"

VIEWS_FILE = "views.json"

VISIBILITY_FILE = "visibility.json"


class ObjectVisibility(Model):
    """visibility.json entry: pixels of the object over the reference sequence and frames with at least gt.min_pixels."""

    pixels: Annotated[int, Field(ge=0)]
    frames: Annotated[int, Field(ge=0)]


def read_visibility(path: Path | str) -> dict[int, ObjectVisibility]:
    """visibility.json: {"<object id>": {pixels, frames}} → {object id: ObjectVisibility}."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise SchemaError(path, "<root>", "a mapping of object id to {pixels, frames}", type(data).__name__)
    out: dict[int, ObjectVisibility] = {}
    for key, value in data.items():
        if not (key.isdigit() and 1 <= int(key) <= 65535):
            raise SchemaError(path, key, "object ids written as strings of integers in 1..65535", key)
        try:
            out[int(key)] = ObjectVisibility.model_validate(value)
        except ValidationError as err:
            e = _pydantic_error(path, err)
            raise SchemaError(path, key if e.field == "<root>" else f"{key}.{e.field}", e.expected) from None
    return out


def write_visibility(path: Path | str, visibility: dict[int, ObjectVisibility]) -> Path:
    """Write visibility.json ({"<object id>": {pixels, frames}}, ids ascending) atomically."""
    data = {str(k): ObjectVisibility.model_validate(v).model_dump() for k, v in sorted(visibility.items())}
    return atomic.write_text(path, dump_json(data))


PixelBox = Annotated[list[NonNegInt], Field(min_length=4, max_length=4)]
"""A pixel box [x0, y0, x1, y1) with exclusive ends, as Pillow's crop box."""


def _check_box(v: list[int]) -> list[int]:
    if not (v[0] < v[2] and v[1] < v[3]):
        raise ValueError(f"a non-empty pixel box [x0, y0, x1, y1) with x0 < x1 and y0 < y1 (got {v})")
    return v


def _check_relpath(v: str) -> str:
    parts = v.split("/")
    if not v or v.startswith("/") or "\\" in v or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"a relative path with '/' separators inside the crops folder (got {v!r})")
    return v


class CropView(Model):
    """One chosen view of an object: frame index, image file, visible pixels, mask box and whether it touches the border."""

    frame: NonNegInt
    file: str
    pixels: PosInt
    bbox: PixelBox
    border_cut: bool

    _box = field_validator("bbox")(_check_box)


class CropCloseup(Model):
    """The close-up render crop.png and context.png come from (files relative to closeups/<scene>/)."""

    rgb: str
    instance: str
    azimuth_deg: Finite
    elevation_deg: Finite
    distance: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    pixels: PosInt
    """Object pixels in the close-up's instance image."""
    bbox: PixelBox
    image_size: Annotated[list[PosInt], Field(min_length=2, max_length=2)]

    _box = field_validator("bbox")(_check_box)
    _rel = field_validator("rgb", "instance")(_check_relpath)


class CropViews(Model):
    """views.json of one object: chosen sequence views best first; crop.png and context.png come from `closeup` when
    there is one (context_bbox is then in the close-up image), else from views[0]."""

    scene: Annotated[str, Field(min_length=1)]
    condition: Annotated[str, Field(min_length=1)]
    object_id: Annotated[int, Field(ge=1, le=65535)]
    class_name: Annotated[str, Field(min_length=1)]
    image_size: Annotated[list[PosInt], Field(min_length=2, max_length=2)]
    """[width, height] of the sequence's frames."""
    context_bbox: PixelBox
    views: Annotated[list[CropView], Field(min_length=1)]
    closeup: CropCloseup | None = None

    _box = field_validator("context_bbox")(_check_box)


class CropRecord(Model):
    """index.json entry of one object: files relative to the crops folder and a sha256 over its image files."""

    scene: Annotated[str, Field(min_length=1)]
    object_id: Annotated[int, Field(ge=1, le=65535)]
    class_name: Annotated[str, Field(min_length=1)]
    crop: str
    context: str
    frames: Annotated[list[str], Field(min_length=1)]
    views: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    closeup_pixels: PosInt | None = None
    """Object pixels of the close-up crop.png comes from (none: it comes from the best sequence frame)."""

    @field_validator("crop", "context", "views")
    @classmethod
    def _relative(cls, v: str) -> str:
        return _check_relpath(v)

    @field_validator("frames")
    @classmethod
    def _relative_frames(cls, v: list[str]) -> list[str]:
        return [_check_relpath(p) for p in v]

    def files(self) -> list[str]:
        """The image files the hash covers, in hashing order: crop, context, frames."""
        return [self.crop, self.context, *self.frames]


class CropSkip(Model):
    """An object of the scene that got no crops, and why."""

    object_id: Annotated[int, Field(ge=1, le=65535)]
    reason: str


class CropIndex(Model):
    """index.json of one scene's crops folder: the parameters used, one record per cropped object, skipped objects."""

    scene: Annotated[str, Field(min_length=1)]
    condition: Annotated[str, Field(min_length=1)]
    k: PosInt
    min_pixels: NonNegInt
    pad: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    size: PosInt
    objects: list[CropRecord]
    skipped: list[CropSkip] = []

    @model_validator(mode="after")
    def _consistent(self) -> CropIndex:
        ids = [r.object_id for r in self.objects]
        if len(ids) != len(set(ids)):
            raise ValueError("one record per object_id")
        both = sorted(set(ids) & {s.object_id for s in self.skipped})
        if both:
            raise ValueError(f"an object either cropped or skipped, not both (ids {both[:5]})")
        other = [r.object_id for r in self.objects if r.scene != self.scene]
        if other:
            raise ValueError(f"records of scene {self.scene!r} only (object {other[0]} differs)")
        return self

    def by_id(self) -> dict[int, CropRecord]:
        """Records keyed by object id."""
        return {r.object_id: r for r in self.objects}


def read_crop_views(path: Path | str) -> CropViews:
    """<crops>/<object_id>/views.json."""
    return read_model(CropViews, path)


def read_crop_index(path: Path | str) -> CropIndex:
    """<crops>/index.json."""
    return read_model(CropIndex, path)


def write_crop_index(index: CropIndex, path: Path | str) -> Path:
    """Write index.json of a crops folder atomically (canonical JSON)."""
    return write_model(index, path)


CloseupStatus = Literal["chosen", "ok", "occluded", "not free", "unseen"]
"""Per candidate view: rendered (chosen); usable but not the best (ok); object mostly hidden by others (occluded);
camera outside the rooms, inside or too close to geometry (not free); object not in the image (unseen)."""


class CloseupView(Model):
    """One candidate camera of an object: where it stands, what the low-resolution ray cast saw, and the verdict."""

    azimuth_deg: Finite
    elevation_deg: Finite
    distance: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    """Camera to box centre, metres (after moving closer in front of a blocker)."""
    score_pixels: NonNegInt
    """Object pixels visible in the id-only ray cast at `score_size` (0 for cameras not in free space)."""
    visible_fraction: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    """Visible object pixels over the object's pixels with nothing else in the scene."""
    status: CloseupStatus
    pixels: PosInt | None = None
    """Object pixels in the full-size instance image (rendered views only)."""
    rgb: str | None = None
    instance: str | None = None
    camera: str | None = None

    @field_validator("rgb", "instance", "camera")
    @classmethod
    def _relative(cls, v: str | None) -> str | None:
        return None if v is None else _check_relpath(v)


class CloseupCamera(Model):
    """camera_<i>.json of a rendered close-up: intrinsics and the camera-to-world pose (OpenCV axes, row-major 4×4)."""

    intrinsics: CameraParams
    pose: Annotated[list[Annotated[list[Finite], Field(min_length=4, max_length=4)]], Field(min_length=4, max_length=4)]


class CloseupObject(Model):
    """index.json entry of one object: every evaluated view (rendered ones carry files and full-size pixels)."""

    object_id: Annotated[int, Field(ge=1, le=65535)]
    class_name: Annotated[str, Field(min_length=1)]
    views: list[CloseupView]

    def rendered(self) -> list[CloseupView]:
        """Rendered views, best first."""
        return sorted((v for v in self.views if v.pixels is not None), key=lambda v: -v.pixels)  # type: ignore[operator]


class CloseupFlag(Model):
    """An object no candidate viewpoint shows, and why."""

    object_id: Annotated[int, Field(ge=1, le=65535)]
    reason: str


class CloseupIndex(Model):
    """closeups/<scene>/index.json: parameters, one entry per object, and flagged objects (no view shows them)."""

    scene: Annotated[str, Field(min_length=1)]
    condition: Annotated[str, Field(min_length=1)]
    renderer: str
    size: PosInt
    hfov_deg: Annotated[float, Field(gt=0, lt=180)]
    fill: Annotated[float, Field(gt=0, le=1)]
    score_size: PosInt
    objects: list[CloseupObject]
    flagged: list[CloseupFlag] = []

    @model_validator(mode="after")
    def _unique(self) -> CloseupIndex:
        ids = [o.object_id for o in self.objects]
        if len(ids) != len(set(ids)):
            raise ValueError("one entry per object_id")
        return self

    def by_id(self) -> dict[int, CloseupObject]:
        """Entries keyed by object id."""
        return {o.object_id: o for o in self.objects}


def read_closeup_index(path: Path | str) -> CloseupIndex:
    """closeups/<scene>/index.json."""
    return read_model(CloseupIndex, path)


def read_closeup_camera(path: Path | str) -> CloseupCamera:
    """closeups/<scene>/<object_id>/camera_<i>.json."""
    return read_model(CloseupCamera, path)
