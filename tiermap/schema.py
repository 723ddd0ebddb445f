"""The data contract: typed models, readers and writers for every file tiermap reads or publishes.

Every reader validates and raises `SchemaError` with one line naming the file, the field and what was
expected; every writer is atomic. Other modules handle these typed objects, never raw dicts.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from tiermap import atomic

CATEGORIES = ("synonyms", "depictions", "vis_sim")
"""Annotator-given label categories, in OpenLex3D's key names (clutter is computed, not labelled)."""
GT_CATEGORIES = (*CATEGORIES, "clutter")
SCENE_SOURCES = ("procedural", "replica", "habitat", "mesh")


class SchemaError(ValueError):
    """A file does not match the data contract."""

    def __init__(self, path: Path | str, field: str, expected: str, got: Any = None) -> None:
        self.path, self.field, self.expected = str(path), field, expected
        msg = f"{path}: field '{field}': expected {expected}"
        if got is not None:
            shown = repr(got.item() if isinstance(got, np.generic) else got)
            msg += f", got {shown[:80] + '...' if len(shown) > 80 else shown}"
        super().__init__(msg)


Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = Annotated[list[Finite], Field(min_length=3, max_length=3)]
PosInt = Annotated[int, Field(gt=0)]


class Model(BaseModel):
    """Base: unknown fields are errors (they are usually typos)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# ---------------------------------------------------------------- scenes
class OBB(Model):
    """Oriented box: centre, full extent along its axes, rotation whose columns are the axes."""

    center: Vec3
    extent: Annotated[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(min_length=3, max_length=3)]
    R: Annotated[list[Vec3], Field(min_length=3, max_length=3)]

    @field_validator("R")
    @classmethod
    def _rotation(cls, v: list[list[float]]) -> list[list[float]]:
        r = np.asarray(v, dtype=float)
        if not np.allclose(r @ r.T, np.eye(3), atol=1e-5) or np.linalg.det(r) < 0:
            raise ValueError("a proper rotation matrix (orthonormal, det +1)")
        return v


class Lexicon(Model):
    """Plausible names of an object per category (drives simulated annotators and the demo baseline)."""

    synonyms: list[str] = []
    depictions: list[str] = []
    vis_sim: list[str] = []


class Appearance(Model):
    """Base colour and an optional procedural texture (a pattern, a motif, or `words` with `text`)."""

    color: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=3, max_length=3)] = [0.6, 0.6, 0.6]
    texture: str | None = None
    text: str | None = None


class SceneObject(Model):
    """One object of a scene; `id` is the instance id written to instance images (uint16, 0 = none).

    `parts` are world-space boxes the object is built from (none: the OBB itself is the geometry).
    """

    id: Annotated[int, Field(ge=1, le=65535)]
    class_name: Annotated[str, Field(min_length=1)]
    mesh: str | None = None
    obb: OBB
    parts: list[OBB] = []
    appearance: Appearance = Appearance()
    lexicon: Lexicon = Lexicon()
    room: str | None = None
    parent: int | None = None


class Room(Model):
    """An axis-aligned room footprint in world metres."""

    name: str
    kind: str
    min: Vec3
    max: Vec3


class Scene(Model):
    """scene.json: where a scene comes from and what is in it (metres, z-up world)."""

    name: Annotated[str, Field(min_length=1)]
    source: Literal["procedural", "replica", "habitat", "mesh"]
    seed: int = 0
    units: Literal["m"] = "m"
    up: Literal["z"] = "z"
    geometry: str | None = None
    habitat_scene: str | None = None
    rooms: list[Room] = []
    objects: list[SceneObject]

    @model_validator(mode="after")
    def _unique_ids(self) -> Scene:
        ids = [o.id for o in self.objects]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"unique object ids (duplicated: {dup})")
        return self

    def object(self, object_id: int) -> SceneObject:
        """The object with this id."""
        for o in self.objects:
            if o.id == object_id:
                return o
        raise KeyError(f"scene {self.name!r} has no object id {object_id}")


# ---------------------------------------------------------------- sequences
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


# ---------------------------------------------------------------- OpenLex3D GT
class ImageAttributes(Model):
    """Tiered labels of one object; clutter holds other objects' ids as strings (official form)."""

    synonyms: list[str] = []
    depictions: list[str] = []
    vis_sim: list[str] = []
    clutter: list[str] = []

    @field_validator("clutter")
    @classmethod
    def _int_strings(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if not c.lstrip("-").isdigit()]
        if bad:
            raise ValueError(f"object ids written as strings of integers (bad: {bad[:3]})")
        return v


class SampleLabels(Model):
    """The `labels` block of a sample."""

    image_attributes: ImageAttributes
    flag: Literal["ambiguous"] | None = None


class Sample(Model):
    """One annotated object."""

    name: str
    object_id: int
    labels: SampleLabels


class GTSamples(Model):
    """The `dataset` block."""

    samples: list[Sample]

    @model_validator(mode="after")
    def _unique(self) -> GTSamples:
        ids = [s.object_id for s in self.samples]
        if len(ids) != len(set(ids)):
            raise ValueError("one sample per object_id")
        return self


class GTCategories(Model):
    """gt_categories.json in the official OpenLex3D schema."""

    dataset: GTSamples

    def by_id(self) -> dict[int, Sample]:
        """Samples keyed by object id."""
        return {s.object_id: s for s in self.dataset.samples}


class QueryMapping(Model):
    """gt_categories_query_to_object_mapping_{l0,l1,all}.json: query text → object ids."""

    level0: dict[str, list[int]] | None = None
    level1: dict[str, list[int]] | None = None


# ---------------------------------------------------------------- BenchBot GT (OMQ)
class BBEnvironment(BaseModel):
    """Environment block; OMQ matches GT to results by name and variant."""

    model_config = ConfigDict(extra="allow")
    name: str
    variant: int


class BBFormat(BaseModel):
    """Format block."""

    model_config = ConfigDict(extra="allow")
    name: Literal["object_map_ground_truth"]


class BBObject(Model):
    """A GT object: axis-aligned cuboid (centroid, full extent) plus tiermap's oriented box."""

    # BenchBot's own GT template writes `id: ""` and `is_group`; OMQ ignores unknown fields.
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    class_: Annotated[str, Field(alias="class", min_length=1)]
    ID_name: str | None = None
    id: int | str | None = None
    centroid: Vec3
    extent: Annotated[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(min_length=3, max_length=3)]
    isgroup: bool = False
    obb: OBB | None = None


class BBGroundTruth(Model):
    """ground_truth block."""

    class_list: Annotated[list[str], Field(min_length=1)]
    synonyms: dict[str, str] = Field(default_factory=dict)
    objects: list[BBObject]


class BenchBotGT(Model):
    """objects.json in BenchBot's object_map_ground_truth form."""

    environment: BBEnvironment
    format: BBFormat
    ground_truth: BBGroundTruth

    @model_validator(mode="after")
    def _known_classes(self) -> BenchBotGT:
        known = set(self.ground_truth.class_list) | set(self.ground_truth.synonyms)
        # OMQ looks names up lowercased (eval_omq input_processor.get_nearest_class_id)
        bad = sorted({o.class_ for o in self.ground_truth.objects
                      if o.class_ not in known and o.class_.lower() not in known})
        if bad:
            raise ValueError(f"object classes in class_list or synonyms (unknown: {bad[:5]})")
        return self


# ---------------------------------------------------------------- BenchBot results (OMQ)
Prob = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class BBTaskDetails(BaseModel):
    """task_details block; OMQ reads the task name and the results format."""

    model_config = ConfigDict(extra="allow")
    name: str
    results_format: Literal["object_map", "object_map_with_states"]


class BBProposal(BaseModel):
    """A proposed object: label distribution over class_list, axis-aligned cuboid, optional [added, removed, unchanged]."""

    model_config = ConfigDict(extra="allow")
    label_probs: list[Prob]
    centroid: Vec3
    extent: Annotated[list[Prob], Field(min_length=3, max_length=3)]
    state_probs: Annotated[list[Prob], Field(min_length=3, max_length=3)] | None = None


class BBObjectMap(BaseModel):
    """results block: the object map."""

    model_config = ConfigDict(extra="allow")
    class_list: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    state_list: Annotated[list[str], Field(min_length=1)] | None = None
    objects: list[BBProposal]

    @field_validator("objects")
    @classmethod
    def _one_prob_per_class(cls, v: list[BBProposal], info: ValidationInfo) -> list[BBProposal]:
        if "class_list" in info.data:
            n = len(info.data["class_list"])
            bad = next((i for i, o in enumerate(v) if len(o.label_probs) != n), None)
            if bad is not None:
                raise ValueError(f"label_probs with one entry per class_list entry ({n}) in every object "
                                 f"(object {bad} has {len(v[bad].label_probs)})")
        return v


class BenchBotResults(BaseModel):
    """A BenchBot results file in format object_map (semantic SLAM) or object_map_with_states (SCD)."""

    model_config = ConfigDict(extra="allow")
    task_details: BBTaskDetails
    environment_details: Annotated[list[BBEnvironment], Field(min_length=1)]
    results: BBObjectMap

    @field_validator("environment_details")
    @classmethod
    def _scene_count(cls, v: list[BBEnvironment], info: ValidationInfo) -> list[BBEnvironment]:
        task = info.data.get("task_details")
        if task is not None and task.results_format == "object_map_with_states":
            if len(v) != 2 or v[0].name != v[1].name:
                raise ValueError(f"two scenes of one environment for object_map_with_states (got {len(v)} entries)")
        elif task is not None and len(v) != 1:
            raise ValueError(f"exactly one environment for object_map (got {len(v)})")
        return v

    @field_validator("results")
    @classmethod
    def _states_given(cls, v: BBObjectMap, info: ValidationInfo) -> BBObjectMap:
        task = info.data.get("task_details")
        if task is not None and task.results_format == "object_map_with_states":
            if v.state_list is None:
                raise ValueError("a state_list (non-empty list of strings) for object_map_with_states")
            bad = next((i for i, o in enumerate(v.objects) if o.state_probs is None), None)
            if bad is not None:
                raise ValueError(f"state_probs [added, removed, unchanged] in every object for object_map_with_states "
                                 f"(object {bad} has none)")
        return v


# ---------------------------------------------------------------- read / write
M = TypeVar("M", bound=BaseModel)


def _pydantic_error(path: Path, err: ValidationError) -> SchemaError:
    e = err.errors()[0]
    field = ".".join(str(p) for p in e["loc"]) or "<root>"
    msg = e["msg"].removeprefix("Value error, ")
    got = e.get("input") if e["type"] != "missing" else None
    if e["type"] == "missing":
        msg = "a value (field is missing)"
    return SchemaError(path, field, msg, got if isinstance(got, str | int | float) else None)


def read_json(path: Path | str) -> Any:
    """Parse a JSON file; a missing or malformed file is a SchemaError."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SchemaError(path, "<file>", f"valid JSON ({err})") from None


def read_model(cls: type[M], path: Path | str) -> M:
    """Read and validate a JSON file into `cls`."""
    path = Path(path)
    data = read_json(path)
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise _pydantic_error(path, err) from None


def dump_json(data: Any) -> str:
    """Canonical JSON text (stable key order and indentation, so equal data gives equal bytes)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_model(model: BaseModel, path: Path | str) -> Path:
    """Write a model as canonical JSON atomically."""
    return atomic.write_text(path, dump_json(model.model_dump(mode="json", by_alias=True, exclude_none=True)))


def read_scene(path: Path | str) -> Scene:
    """scene.json."""
    return read_model(Scene, path)


def read_camera(path: Path | str) -> CameraParams:
    """camera_params.json."""
    return read_model(CameraParams, path)


def read_meta(path: Path | str) -> SequenceMeta:
    """meta.json."""
    return read_model(SequenceMeta, path)


def read_gt_categories(path: Path | str) -> GTCategories:
    """gt_categories.json."""
    return read_model(GTCategories, path)


def read_query_mapping(path: Path | str) -> QueryMapping:
    """gt_categories_query_to_object_mapping_*.json."""
    return read_model(QueryMapping, path)


def read_benchbot_gt(path: Path | str) -> BenchBotGT:
    """objects.json (BenchBot ground truth)."""
    return read_model(BenchBotGT, path)


def read_benchbot_results(path: Path | str) -> BenchBotResults:
    """A BenchBot results file (object_map / object_map_with_states)."""
    return read_model(BenchBotResults, path)


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


def read_prompt_list(path: Path | str) -> list[str]:
    """prompt_list.txt: one label per line; blank lines are an error (the official code silently scores them)."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            raise SchemaError(path, f"line {n}", "a non-blank prompt")
    return [ln.strip() for ln in lines]


def write_prompt_list(path: Path | str, labels: list[str] | set[str]) -> Path:
    """Write the sorted unique union of labels, one per line, no blank lines."""
    uniq = sorted({lbl.strip() for lbl in labels if lbl.strip()})
    return atomic.write_text(path, "".join(f"{lbl}\n" for lbl in uniq))


# ---------------------------------------------------------------- GT point cloud
def write_gt_cloud(path: Path | str, points: np.ndarray, ids: np.ndarray, colors: np.ndarray | None = None) -> Path:
    """Binary PLY with float32 x, y, z, uint8 red, green, blue and int32 object_id per point."""
    import io

    from plyfile import PlyData, PlyElement

    points = np.asarray(points, dtype=np.float32)
    ids = np.asarray(ids)
    if points.ndim != 2 or points.shape[1] != 3:
        raise SchemaError(path, "points", "an array of shape (N, 3)", points.shape)
    if ids.shape != (len(points),):
        raise SchemaError(path, "object_id", f"one id per point ({len(points)})", ids.shape)
    if colors is None:
        colors = np.full((len(points), 3), 128, dtype=np.uint8)
    dtype = [("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1"), ("object_id", "i4")]
    arr = np.empty(len(points), dtype=dtype)
    arr["x"], arr["y"], arr["z"] = points.T
    arr["red"], arr["green"], arr["blue"] = np.asarray(colors, dtype=np.uint8).T
    arr["object_id"] = ids.astype(np.int32)
    buf = io.BytesIO()
    PlyData([PlyElement.describe(arr, "vertex")]).write(buf)
    return atomic.write_bytes(path, buf.getvalue())


def read_gt_cloud(path: Path | str, ids_path: Path | str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GT cloud → (points (N, 3) float64, ids (N,) int64): a PLY/PCD with an object_id field, or points.npy + ids.npy."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    if ids_path is not None:
        points, ids = np.load(path), np.load(ids_path)
        if points.ndim != 2 or points.shape[1] != 3:
            raise SchemaError(path, "points", "an array of shape (N, 3)", points.shape)
        if ids.shape != (len(points),):
            raise SchemaError(ids_path, "ids", f"shape ({len(points)},)", ids.shape)
    elif path.suffix.lower() == ".pcd":
        import open3d as o3d

        pc = o3d.t.io.read_point_cloud(str(path))
        if "positions" not in pc.point:
            raise SchemaError(path, "positions", "a PCD file with x, y, z fields")
        if "object_id" not in pc.point:
            raise SchemaError(path, "object_id", "a per-point object_id field (or pass points.npy ids.npy)", sorted(pc.point))
        points, ids = pc.point.positions.numpy(), pc.point["object_id"].numpy().reshape(-1)
    else:
        from plyfile import PlyData

        try:
            v = PlyData.read(str(path))["vertex"]
        except Exception as err:
            raise SchemaError(path, "<file>", f"a PLY file with a vertex element ({type(err).__name__})") from None
        names = v.data.dtype.names
        if "object_id" not in names:
            raise SchemaError(path, "vertex.object_id", "a per-point object_id property", list(names))
        points = np.stack([v["x"], v["y"], v["z"]], axis=1)
        ids = v["object_id"]
    points = np.asarray(points, dtype=np.float64)
    if not np.isfinite(points).all():
        raise SchemaError(path, "points", "finite coordinates (found NaN/inf)")
    return points, np.asarray(ids, dtype=np.int64)


# ---------------------------------------------------------------- labels table
LABEL_COLUMNS = {"scene": "str", "object_id": "int", "annotator": "str", "category": "str", "label": "str", "raw_label": "str"}
PROVENANCE_COLUMNS = {"annotation_id": "int", "created_at": "str", "updated_at": "str"}
"""Which Label Studio annotation a label comes from and its timestamps (0 and "" for labels from no annotation)."""


def validate_labels_frame(df: Any, path: Path | str = "<labels>") -> Any:
    """Check the tidy labels table's columns and types; return it with canonical dtypes (provenance filled if absent)."""
    import pandas as pd

    missing = [c for c in LABEL_COLUMNS if c not in df.columns]
    if missing:
        raise SchemaError(path, missing[0], f"columns {list(LABEL_COLUMNS)}")
    df = df.copy()
    for col, kind in PROVENANCE_COLUMNS.items():
        if col not in df.columns:
            df[col] = pd.Series([0 if kind == "int" else ""] * len(df), index=df.index, dtype="int64" if kind == "int" else object)
    df = df[[*LABEL_COLUMNS, *PROVENANCE_COLUMNS]].copy()
    if len(df) and not pd.api.types.is_integer_dtype(df["annotation_id"]):
        raise SchemaError(path, "annotation_id", "integer annotation ids", str(df["annotation_id"].dtype))
    df["annotation_id"] = df["annotation_id"].astype("int64")
    if len(df) and not pd.api.types.is_integer_dtype(df["object_id"]):
        raise SchemaError(path, "object_id", "integer object ids", str(df["object_id"].dtype))
    for col, kind in {**LABEL_COLUMNS, **PROVENANCE_COLUMNS}.items():
        if kind == "str":
            bad = df[col].map(lambda v: not isinstance(v, str))
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise SchemaError(path, f"{col}[{row}]", "text", df[col].iloc[row])
            df[col] = df[col].astype(object)
    bad = ~df["category"].isin(CATEGORIES)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise SchemaError(path, f"category[{row}]", f"one of {list(CATEGORIES)}", df["category"].iloc[row])
    df["object_id"] = df["object_id"].astype("int64")
    return df.reset_index(drop=True)


def read_labels(path: Path | str) -> Any:
    """labels.parquet → validated pandas DataFrame."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    try:
        df = pd.read_parquet(path)
    except Exception as err:  # pyarrow raises several types for corrupt files
        raise SchemaError(path, "<file>", f"a parquet table ({type(err).__name__})") from None
    return validate_labels_frame(df, path)


def write_labels(path: Path | str, df: Any) -> Path:
    """Validate and write labels.parquet atomically."""
    import io

    df = validate_labels_frame(df, path)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return atomic.write_bytes(path, buf.getvalue())


# ---------------------------------------------------------------- dataset layout
class DatasetPaths:
    """Paths of one dataset under the data root (the layout of the data contract)."""

    def __init__(self, root: Path | str, name: str) -> None:
        self.root = Path(root)
        self.name = name
        self.dir = self.root / name

    def scene_dir(self, scene: str) -> Path:
        """datasets/<d>/scenes/<scene>/."""
        return self.dir / "scenes" / scene

    def sequence_dir(self, scene: str, condition: str) -> Path:
        """datasets/<d>/sequences/<scene>/<condition>/."""
        return self.dir / "sequences" / scene / condition

    @property
    def gt(self) -> Path:
        """datasets/<d>/gt/."""
        return self.dir / "gt"

    @property
    def labels(self) -> Path:
        """datasets/<d>/labels/."""
        return self.dir / "labels"

    @property
    def prompt_list(self) -> Path:
        """datasets/<d>/gt/prompt_list.txt (per dataset, as the official layout)."""
        return self.gt / "prompt_list.txt"

    @property
    def validation_report(self) -> Path:
        """datasets/<d>/validation.json, written by `tiermap validate` (git-tracked metrics)."""
        return self.dir / "validation.json"

    @property
    def release_notes(self) -> Path:
        """datasets/<d>/RELEASE.md."""
        return self.dir / "RELEASE.md"

    def gt_scenes(self) -> list[str]:
        """Scenes that have a GT folder."""
        if not self.gt.is_dir():
            return []
        return sorted(p.name for p in self.gt.iterdir() if p.is_dir())


GT_FILES = (
    "gt_categories.json",
    "gt_categories_query_to_object_mapping_l0.json",
    "gt_categories_query_to_object_mapping_l1.json",
    "gt_categories_query_to_object_mapping_all.json",
    "objects.json",
)
GT_READERS = {
    "gt_categories.json": read_gt_categories,
    "gt_categories_query_to_object_mapping_l0.json": read_query_mapping,
    "gt_categories_query_to_object_mapping_l1.json": read_query_mapping,
    "gt_categories_query_to_object_mapping_all.json": read_query_mapping,
    "objects.json": read_benchbot_gt,
}


# ---------------------------------------------------------------- predictions (official OpenLex3D layout)
POINT_CLOUD_SUFFIXES = (".pcd", ".ply")


def read_point_positions(path: Path | str) -> np.ndarray:
    """Positions of a PCD/PLY point cloud as stored (float32 stays float32), shape (N, 3)."""
    import open3d as o3d

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing point cloud file")
    pc = o3d.t.io.read_point_cloud(str(path))
    if "positions" not in pc.point or pc.point.positions.shape[0] == 0:
        raise SchemaError(path, "positions", "a non-empty point cloud (PCD or PLY with x, y, z)")
    pts = pc.point.positions.numpy()
    if not np.isfinite(pts).all():
        raise SchemaError(path, "positions", "finite coordinates (found NaN/inf)")
    return pts


def find_prediction_cloud(folder: Path | str) -> Path:
    """The prediction cloud of a folder: point_cloud.pcd|ply, input.ply, else the only *.pcd/*.ply."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SchemaError(folder, "<folder>", "an existing predictions folder (point_cloud.pcd|ply, embeddings.npy, index.npy)")
    for name in ("point_cloud.pcd", "point_cloud.ply", "input.ply"):
        if (folder / name).is_file():
            return folder / name
    found = sorted(p for p in folder.iterdir() if p.suffix in POINT_CLOUD_SUFFIXES)
    if len(found) != 1:
        raise SchemaError(folder, "point_cloud.pcd", "one point cloud file (point_cloud.pcd or .ply)", [p.name for p in found])
    return found[0]


def check_features(path: Path | str, field: str, feats: np.ndarray) -> np.ndarray:
    """A finite (rows, D) float feature matrix, or a SchemaError naming the file."""
    if feats.ndim != 2 or feats.shape[1] == 0:
        raise SchemaError(path, field, "a 2-D array (rows, feature dimension)", feats.shape)
    if not np.issubdtype(feats.dtype, np.floating):
        raise SchemaError(path, field, "floating-point features", str(feats.dtype))
    bad = ~np.isfinite(feats).all(axis=1)
    if bad.any():
        raise SchemaError(path, field, "finite features (no NaN/inf)", f"{int(bad.sum())} bad rows, first row {int(np.flatnonzero(bad)[0])}")
    return feats


class Predictions:
    """A method's output in the official layout: points (M, 3), embeddings (K, D), index (M,) point → row."""

    def __init__(self, folder: Path, cloud: Path, points: np.ndarray, embeddings: np.ndarray, index: np.ndarray) -> None:
        self.folder, self.cloud, self.points, self.embeddings, self.index = folder, cloud, points, embeddings, index


def read_predictions(folder: Path | str, allow_unassigned: bool = True) -> Predictions:
    """point_cloud.pcd|ply + embeddings.npy + index.npy, checked: index length, range, finite features."""
    folder = Path(folder)
    cloud = find_prediction_cloud(folder)
    points = read_point_positions(cloud)
    for name in ("embeddings.npy", "index.npy"):
        if not (folder / name).is_file():
            raise SchemaError(folder / name, "<file>", "an existing file (official OpenLex3D predictions layout)")
    try:
        emb = np.load(folder / "embeddings.npy", allow_pickle=False)
        index = np.load(folder / "index.npy", allow_pickle=False)
    except ValueError as err:
        raise SchemaError(folder, "embeddings.npy/index.npy", f"plain numpy arrays ({err})") from None
    check_features(folder / "embeddings.npy", "embeddings", emb)
    ipath = folder / "index.npy"
    if index.ndim != 1 or index.shape[0] != len(points):
        raise SchemaError(ipath, "index", f"shape ({len(points)},), one row per point of {cloud.name}", index.shape)
    if not np.issubdtype(index.dtype, np.integer):
        raise SchemaError(ipath, "index", "integer rows of embeddings.npy", str(index.dtype))
    low = -1 if allow_unassigned else 0
    bad = (index < low) | (index >= len(emb))
    if bad.any():
        v = int(index[np.flatnonzero(bad)[0]])
        # The official code silently reads index -1 as the last embedding row; refuse instead of scoring it.
        raise SchemaError(ipath, "index", f"rows in [{low}, {len(emb) - 1}] of embeddings.npy" + (" (-1 = no embedding)" if low < 0 else ""),
                          f"{int(bad.sum())} bad values, e.g. {v}")
    return Predictions(folder, cloud, points, emb, index.astype(np.int64))


def write_predictions(folder: Path | str, points: np.ndarray, embeddings: np.ndarray, index: np.ndarray,
                      colors: np.ndarray | None = None) -> Path:
    """Write predictions in the official layout (binary PLY point_cloud.ply, embeddings.npy, index.npy) atomically."""
    import io

    from plyfile import PlyData, PlyElement

    folder = Path(folder)
    points = np.asarray(points, dtype=np.float32)
    colors = np.full((len(points), 3), 128, np.uint8) if colors is None else np.asarray(colors, np.uint8)
    arr = np.empty(len(points), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])
    arr["x"], arr["y"], arr["z"] = points.T
    arr["red"], arr["green"], arr["blue"] = colors.T
    with atomic.atomic_dir(folder) as tmp:
        buf = io.BytesIO()
        PlyData([PlyElement.describe(arr, "vertex")]).write(buf)
        (tmp / "point_cloud.ply").write_bytes(buf.getvalue())
        np.save(tmp / "embeddings.npy", np.asarray(embeddings, dtype=np.float32))
        np.save(tmp / "index.npy", np.asarray(index, dtype=np.int64))
    return folder


def read_text_features(path: Path | str) -> dict[str, np.ndarray]:
    """Precomputed text features: an .npz with `texts` (P,) strings and `feats` (P, D) floats → {text: feature}."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing .npz file with arrays 'texts' and 'feats'")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as err:
        raise SchemaError(path, "<file>", f"a numpy .npz archive ({type(err).__name__})") from None
    for key in ("texts", "feats"):
        if key not in arrays:
            raise SchemaError(path, key, "an array named 'texts' (P,) and one named 'feats' (P, D)", sorted(arrays))
    texts, feats = arrays["texts"], arrays["feats"]
    if texts.ndim != 1 or texts.dtype.kind not in "US":
        raise SchemaError(path, "texts", "a 1-D array of strings", f"{texts.dtype} {texts.shape}")
    check_features(path, "feats", feats)
    if len(texts) != len(feats):
        raise SchemaError(path, "feats", f"one row per text ({len(texts)})", feats.shape)
    return {str(t): feats[i] for i, t in enumerate(texts)}


def write_text_features(path: Path | str, texts: list[str], feats: np.ndarray) -> Path:
    """Write an .npz of text features (`texts`, `feats`) atomically."""
    import io

    buf = io.BytesIO()
    np.savez(buf, texts=np.asarray(texts, dtype=str), feats=np.asarray(feats, dtype=np.float32))
    return atomic.write_bytes(path, buf.getvalue())


# ---------------------------------------------------------------- visibility and annotation crops
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


NonNegInt = Annotated[int, Field(ge=0)]
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


# ---------------------------------------------------------------- close-up views (generation.closeup)
CLOSEUP_STATUS = ("chosen", "ok", "occluded", "not free", "unseen")
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
    status: Literal["chosen", "ok", "occluded", "not free", "unseen"]
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


# ---------------------------------------------------------------- Label Studio JSON export (annotation.tidy)
from pydantic import AliasChoices, TypeAdapter  # noqa: E402  (appended section)

LS_TEXT_FIELDS = {"synonyms": "synonyms", "depictions": "depictions", "visually_similar": "vis_sim", "vis_sim": "vis_sim"}
"""Label Studio TextArea `from_name` → label category of the tidy table."""


class LSUser(BaseModel):
    """`completed_by` of a snapshot export (serialization option annotations__completed_by only_id=False)."""

    model_config = ConfigDict(extra="allow")
    id: int | None = None
    email: str | None = None

    @model_validator(mode="after")
    def _identified(self) -> LSUser:
        if self.id is None and not self.email:
            raise ValueError("a user with an id or an email")
        return self


class LSValue(BaseModel):
    """A result's value; TextArea answers are `text` (a list of strings, one per submitted text)."""

    model_config = ConfigDict(extra="allow")
    text: list[str] | None = None


class LSResult(BaseModel):
    """One region/field result of an annotation."""

    model_config = ConfigDict(extra="allow")
    from_name: str
    to_name: str | None = None
    type: str | None = None
    value: LSValue

    @property
    def category(self) -> str | None:
        """The tidy-table category of a label field (synonyms / depictions / vis_sim), else None."""
        return LS_TEXT_FIELDS.get(self.from_name)


class LSAnnotation(BaseModel):
    """One annotator's submission for a task."""

    model_config = ConfigDict(extra="allow")
    id: int | None = None
    completed_by: int | LSUser
    result: list[LSResult]
    was_cancelled: bool = False

    @property
    def annotator(self) -> str:
        """The annotator's email when the export has it, else 'user<id>'."""
        u = self.completed_by
        if isinstance(u, LSUser):
            return u.email or f"user{u.id}"
        return f"user{u}"


class LSTaskData(BaseModel):
    """Task data: the scene (`scene`, or `scene_id`) and the object's integer id, plus any other fields."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    scene: str = Field(validation_alias=AliasChoices("scene", "scene_id"))
    object_id: int


class LSTask(BaseModel):
    """One task of a Label Studio JSON export (`ls.projects.exports.as_json`)."""

    model_config = ConfigDict(extra="allow")
    id: int | None = None
    data: LSTaskData
    annotations: list[LSAnnotation] = []


_LS_EXPECTED = {
    None: "a task object with 'data' and 'annotations'",
    "data": "an object with the task data (scene, object_id)",
    "scene": "the scene name as a string (data.scene or data.scene_id)",
    "scene_id": "the scene name as a string (data.scene or data.scene_id)",
    "object_id": "an integer object id (data.object_id)",
    "annotations": "a list of annotations",
    "completed_by": "an int user id or a user object with an id or email",
    "result": "a list of results (one per labelling field)",
    "from_name": "the labelling field name as a string",
    "value": "an object with the result value",
    "text": "a list of strings (the TextArea answers)",
    "was_cancelled": "true or false",
}
_ls_adapter: TypeAdapter[list[LSTask]] | None = None


def _ls_error(source: Path | str, data: Any, err: ValidationError) -> SchemaError:
    """A one-line SchemaError with the JSON path ([3].annotations[0].result[1].value.text) of the first error."""
    e = err.errors()[0]
    loc, cur, path, key, item = list(e["loc"]), data, "", None, False
    for n, part in enumerate(loc):
        if isinstance(part, int) and isinstance(cur, list):
            path += f"[{part}]"
            cur, item = (cur[part] if part < len(cur) else None), True
        elif isinstance(part, str) and isinstance(cur, dict) and (part in cur or (n == len(loc) - 1 and e["type"] == "missing")):
            path += f".{part}"
            cur, key, item = cur.get(part), part, False
        # anything else is a union member tag (e.g. 'int', 'LSUser'): not part of the JSON path
    items = {"annotations": "an annotation object (completed_by, result)", "result": "a result object (from_name, value)",
             "text": "a string (one TextArea answer)"}
    expected = (items[key] if item and key in items else _LS_EXPECTED.get(key, e["msg"].removeprefix("Value error, ")))
    if e["type"] == "missing":
        return SchemaError(source, path or "<root>", f"{expected} (field is missing)")
    got = e.get("input")
    return SchemaError(source, path or "<root>", expected, got if isinstance(got, str | int | float | bool) else type(got).__name__)


def parse_ls_export(data: Any, source: Path | str = "<export>") -> list[LSTask]:
    """Validate a Label Studio JSON export (a list of tasks); errors name `source` and the JSON path."""
    global _ls_adapter
    if not isinstance(data, list):
        raise SchemaError(source, "<root>", "a JSON list of tasks (Label Studio JSON export)", type(data).__name__)
    if _ls_adapter is None:
        _ls_adapter = TypeAdapter(list[LSTask])
    try:
        tasks = _ls_adapter.validate_python(data)
    except ValidationError as err:
        raise _ls_error(source, data, err) from None
    for i, t in enumerate(tasks):
        for j, a in enumerate(t.annotations):
            for k, r in enumerate(a.result):
                if r.from_name in LS_TEXT_FIELDS and r.value.text is None:
                    raise SchemaError(source, f"[{i}].annotations[{j}].result[{k}].value.text", _LS_EXPECTED["text"] + " (field is missing)")
    return tasks


def read_ls_export(path: Path | str) -> list[LSTask]:
    """A Label Studio JSON export file → validated tasks."""
    return parse_ls_export(read_json(path), path)


# ---------------------------------------------------------------- Label Studio seats, tasks record, pull ledger
class LSSeat(Model):
    """One annotator's own Label Studio server: its admin secrets and address (credentials.json, mode 0600, never served)."""

    annotator: Annotated[str, Field(min_length=3)]
    slug: Annotated[str, Field(pattern=r"^seat-\d+$")]
    admin_password: str
    token: Annotated[str, Field(min_length=6, max_length=40)]
    user_id: NonNegInt = 0
    url: str = ""
    pid: NonNegInt = 0
    simulated: bool = False


class LSCredentials(Model):
    """labelstudio/credentials.json: the admin account shared by every seat and one record per seat."""

    admin_email: str
    seats: list[LSSeat] = []

    def seat(self, annotator: str) -> LSSeat | None:
        """The seat of an annotator, if any."""
        return next((s for s in self.seats if s.annotator == annotator), None)


class SeatTasks(Model):
    """The project and task ids of one seat (task key scene/object_id → task id)."""

    project_id: PosInt
    tasks: dict[str, PosInt]


class TasksRecord(Model):
    """labels/tasks.json: what the last push left on each seat's server, and the crop hash of every task (no secrets)."""

    crop_hashes: dict[str, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]]
    seats: dict[str, SeatTasks]


class LedgerEntry(Model):
    """One accepted annotation: what an annotator submitted for a task, as first pulled (or last accepted)."""

    key: str
    scene: str
    object_id: Annotated[int, Field(ge=1, le=65535)]
    annotator: str
    annotation_id: PosInt
    completed_by: NonNegInt
    created_at: str
    updated_at: str
    lead_time: float | None = None
    was_cancelled: bool = False
    result: list[dict[str, Any]]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    pulled_from: str


class Ledger(Model):
    """labels/ledger.json: the accepted annotations every pull is compared with (sorted by task key, annotator)."""

    entries: list[LedgerEntry] = []

    @model_validator(mode="after")
    def _unique(self) -> Ledger:
        keys = [(e.key, e.annotator) for e in self.entries]
        if len(keys) != len(set(keys)):
            raise ValueError("one entry per (task key, annotator)")
        return self


def read_ledger(path: Path | str) -> Ledger:
    """labels/ledger.json; a missing file is an empty ledger (no pull yet)."""
    return read_model(Ledger, path) if Path(path).is_file() else Ledger()


def write_ledger(ledger: Ledger, path: Path | str) -> Path:
    """Write the ledger sorted by (key, annotator), atomically."""
    ledger = Ledger(entries=sorted(ledger.entries, key=lambda e: (e.key, e.annotator)))
    return write_model(ledger, path)


# ---------------------------------------------------------------- labelled meshes (scene sources)
SCENE_MESH = "mesh.ply"
"""The normalised geometry of a mesh-sourced scene, beside its scene.json."""
_PLY_UV = (("s", "t"), ("texture_u", "texture_v"), ("u", "v"))


@dataclass
class SceneMesh:
    """A labelled triangle mesh: vertices (V, 3), triangles (F, 3), object id per triangle (0 = unlabelled), colours (V, 3) in [0, 1]."""

    vertices: np.ndarray
    triangles: np.ndarray
    object_ids: np.ndarray
    vertex_colors: np.ndarray


def triangulate(polygons: Any, path: Path | str, field: str = "face.vertex_indices") -> tuple[np.ndarray, np.ndarray]:
    """Fan-triangulate polygons (a list of index arrays, or an (F, k) array) → (triangles (T, 3), source polygon per triangle)."""
    if isinstance(polygons, np.ndarray) and polygons.dtype != object:
        polys = [polygons.reshape(len(polygons), -1)]
        rows = [np.arange(len(polygons))]
    else:
        sizes = np.fromiter((len(p) for p in polygons), dtype=np.int64, count=len(polygons))
        polys, rows = [], []
        for k in np.unique(sizes):
            idx = np.flatnonzero(sizes == k)
            polys.append(np.stack([np.asarray(polygons[i]) for i in idx]) if k else np.zeros((len(idx), 0), np.int64))
            rows.append(idx)
    tris, src = [], []
    for p, r in zip(polys, rows):
        k = p.shape[1]
        if k < 3:
            raise SchemaError(path, field, "polygons with at least 3 vertices", int(k))
        for j in range(1, k - 1):
            tris.append(p[:, [0, j, j + 1]])
            src.append(r)
    if not tris:
        return np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    order = np.argsort(np.concatenate(src), kind="stable")
    return np.concatenate(tris).astype(np.int64)[order], np.concatenate(src)[order]


def face_ids_from_vertices(triangles: np.ndarray, vertex_ids: np.ndarray) -> np.ndarray:
    """Per-vertex object ids → per-triangle ids: the id at least two corners share, else the first corner's."""
    a, b, c = (vertex_ids[triangles[:, k]] for k in range(3))
    return np.where((a != b) & (a != c) & (b == c), b, a)


def _sample_texture(path: Path, image_name: str, uv: np.ndarray, field: str) -> np.ndarray:
    """Colours (V, 3) in [0, 1] of a texture image at per-vertex uv (OpenGL: v up)."""
    from PIL import Image

    tex_path = path.parent / image_name
    if not tex_path.is_file():
        raise SchemaError(path, field, f"an existing texture image beside the mesh ({tex_path} is missing)", image_name)
    try:
        img = np.asarray(Image.open(tex_path).convert("RGB"), dtype=np.float32) / 255
    except Exception as err:
        raise SchemaError(tex_path, "<file>", f"a readable image ({type(err).__name__})") from None
    h, w = img.shape[:2]
    px = np.clip((np.mod(uv[:, 0], 1.0) * w).astype(int), 0, w - 1)
    py = np.clip(((1 - np.mod(uv[:, 1], 1.0)) * h).astype(int), 0, h - 1)
    return img[py, px]


def read_mesh_ply(path: Path | str, id_field: str = "object_id") -> SceneMesh:
    """A PLY mesh with a per-face (Replica `mesh_semantic.ply`) or per-vertex `object_id` → triangles, ids and colours.

    Polygons are fan-triangulated; colours come from vertex red/green/blue, else from a `comment TextureFile` image
    sampled at per-vertex texture coordinates, else grey.
    """
    from plyfile import PlyData

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing PLY mesh file")
    try:
        ply = PlyData.read(str(path), mmap=False)
        names = [e.name for e in ply.elements]
        if "vertex" not in names or "face" not in names:
            raise SchemaError(path, "element", "a mesh with 'vertex' and 'face' elements", names)
        v, f = ply["vertex"], ply["face"]
        vprops, fprops = v.data.dtype.names, f.data.dtype.names
        vertices = np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float64)
        faces = f["vertex_indices"] if "vertex_indices" in fprops else f["vertex_index"] if "vertex_index" in fprops else None
    except SchemaError:
        raise
    except Exception as err:
        raise SchemaError(path, "<file>", f"a readable PLY mesh ({type(err).__name__}: {str(err)[:60]})") from None
    if faces is None:
        raise SchemaError(path, "face.vertex_indices", "a list property of vertex indices per face", list(fprops))
    if not np.isfinite(vertices).all():
        raise SchemaError(path, "vertex.x/y/z", "finite coordinates (found NaN/inf)")
    triangles, src = triangulate(faces, path)
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(vertices)):
        raise SchemaError(path, "face.vertex_indices", f"indices in [0, {len(vertices)})", int(triangles.max()))
    if id_field in fprops:
        ids = np.asarray(f[id_field], dtype=np.int64)[src]
    elif id_field in vprops:
        ids = face_ids_from_vertices(triangles, np.asarray(v[id_field], dtype=np.int64))
    else:
        raise SchemaError(path, f"face.{id_field}", f"a per-face or per-vertex '{id_field}' property (an unlabelled mesh has none)",
                          f"face: {list(fprops)}, vertex: {list(vprops)}")
    if all(c in vprops for c in ("red", "green", "blue")):
        colors = np.stack([v["red"], v["green"], v["blue"]], axis=1).astype(np.float32)
        colors /= 255.0 if np.asarray(v["red"]).dtype.kind in "ui" else 1.0
    else:
        colors = np.full((len(vertices), 3), 0.6, dtype=np.float32)
        tex = [c.split(None, 1)[1].strip() for c in ply.comments if c.startswith("TextureFile") and len(c.split(None, 1)) == 2]
        if tex:
            uv_names = next((p for p in _PLY_UV if all(n in vprops for n in p)), None)
            if uv_names is None:
                raise SchemaError(path, "vertex.s/t", "per-vertex texture coordinates for 'comment TextureFile'", list(vprops))
            uv = np.stack([v[uv_names[0]], v[uv_names[1]]], axis=1).astype(np.float64)
            colors = _sample_texture(path, tex[0], uv, "comment TextureFile")
    return SceneMesh(vertices, triangles, ids, np.clip(colors, 0, 1).astype(np.float32))


def write_scene_mesh(path: Path | str, mesh: SceneMesh) -> Path:
    """Binary PLY: float x, y, z and uint8 red, green, blue per vertex; vertex_indices and int object_id per triangle."""
    import io

    from plyfile import PlyData, PlyElement

    vdt = [("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")]
    va = np.empty(len(mesh.vertices), dtype=vdt)
    va["x"], va["y"], va["z"] = np.asarray(mesh.vertices, dtype=np.float32).T
    rgb = (np.clip(mesh.vertex_colors, 0, 1) * 255 + 0.5).astype(np.uint8)
    va["red"], va["green"], va["blue"] = rgb.T
    fa = np.empty(len(mesh.triangles), dtype=[("vertex_indices", "i4", (3,)), ("object_id", "i4")])
    fa["vertex_indices"] = mesh.triangles.astype(np.int32)
    fa["object_id"] = mesh.object_ids.astype(np.int32)
    buf = io.BytesIO()
    PlyData([PlyElement.describe(va, "vertex"), PlyElement.describe(fa, "face")]).write(buf)
    return atomic.write_bytes(path, buf.getvalue())


def read_scene_mesh(path: Path | str) -> SceneMesh:
    """The normalised mesh of a mesh-sourced scene (written by `write_scene_mesh`)."""
    return read_mesh_ply(path)


def read_mesh_gltf(path: Path | str) -> SceneMesh:
    """A GLB/glTF scene with object ids as a per-vertex `_OBJECT_ID` attribute or a trailing integer in node names.

    Vertices stay in the file's frame (glTF is y-up by specification). Textures are sampled to vertex colours.
    """
    import re

    import trimesh

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing GLB/glTF file")
    if path.suffix.lower() == ".gltf":
        doc = read_json(path)
        for key in ("images", "buffers"):
            for i, item in enumerate(doc.get(key, []) if isinstance(doc, dict) else []):
                uri = item.get("uri", "") if isinstance(item, dict) else ""
                if uri and not uri.startswith("data:") and not (path.parent / uri).is_file():
                    what = "an existing texture image" if key == "images" else "an existing binary buffer"
                    raise SchemaError(path, f"{key}[{i}].uri", f"{what} beside the file ({path.parent / uri} is missing)", uri)
    try:
        scene = trimesh.load(str(path), force="scene", process=False)
    except Exception as err:
        raise SchemaError(path, "<file>", f"a readable GLB/glTF mesh ({type(err).__name__}: {str(err)[:60]})") from None
    parts: list[SceneMesh] = []
    for node in scene.graph.nodes_geometry:
        T, gname = scene.graph[node]
        g = scene.geometry[gname]
        if not isinstance(g, trimesh.Trimesh) or len(g.faces) == 0:
            continue
        verts = trimesh.transform_points(np.asarray(g.vertices, dtype=np.float64), T)
        tris = np.asarray(g.faces, dtype=np.int64)
        attr = getattr(g, "vertex_attributes", {}).get("_OBJECT_ID")
        if attr is not None:
            ids = face_ids_from_vertices(tris, np.rint(np.asarray(attr).reshape(-1)).astype(np.int64))
        else:
            m = re.search(r"(\d+)$", str(node))
            ids = np.full(len(tris), int(m.group(1)) if m else 0, dtype=np.int64)
        visual = g.visual.to_color() if hasattr(g.visual, "to_color") else g.visual  # textures sampled at the vertices
        colors = np.asarray(visual.vertex_colors, dtype=np.float32)[:, :3] / 255
        parts.append(SceneMesh(verts, tris, ids, colors))
    if not parts:
        raise SchemaError(path, "meshes", "at least one triangle mesh")
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    return SceneMesh(np.concatenate([p.vertices for p in parts]), np.concatenate([p.triangles + o for p, o in zip(parts, offsets)]),
                     np.concatenate([p.object_ids for p in parts]), np.concatenate([p.vertex_colors for p in parts]))


def read_class_map(path: Path | str) -> dict[int, str]:
    """A class map for a generic mesh: JSON {"<object id>": "class name"} (or a list of {"id", "class_name"})."""
    data = read_json(path)
    items = data.items() if isinstance(data, dict) else ((d.get("id"), d.get("class_name")) for d in data if isinstance(d, dict)) \
        if isinstance(data, list) else None
    if items is None:
        raise SchemaError(path, "<root>", 'a JSON object {"<object id>": "class name"}', type(data).__name__)
    out: dict[int, str] = {}
    for k, name in items:
        try:
            oid = int(k)
        except (TypeError, ValueError):
            raise SchemaError(path, str(k), "an integer object id as key") from None
        if not 1 <= oid <= 65535:
            raise SchemaError(path, str(k), "an object id in 1..65535 (0 means unlabelled)", oid)
        if not isinstance(name, str) or not name.strip():
            raise SchemaError(path, str(k), "a non-empty class name", name)
        out[oid] = name
    return out


class ReplicaClass(BaseModel):
    """A class of Replica's info_semantic.json."""

    id: int
    name: str


class ReplicaObject(BaseModel):
    """An object of Replica's info_semantic.json (other keys such as oriented_bbox are ignored)."""

    id: int
    class_id: int | None = None
    class_name: str | None = None


class ReplicaInfo(BaseModel):
    """Replica's info_semantic.json: classes and objects (object ids match mesh_semantic.ply's face object_id)."""

    classes: list[ReplicaClass] = []
    objects: list[ReplicaObject]


def read_replica_info(path: Path | str) -> ReplicaInfo:
    """info_semantic.json → validated classes and objects."""
    return read_model(ReplicaInfo, path)
