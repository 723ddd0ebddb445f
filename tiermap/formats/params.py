"""params.yaml: the pipeline's parameters, checked block by block (a missing or misspelt block names itself)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationError

from tiermap.formats.base import Model, PosInt, SchemaError, _pydantic_error
from tiermap.formats.layout import name_error
from tiermap.formats.scene_graph import RelationThresholds

PARAMS_FILE = "params.yaml"
DVC_FILE = "dvc.yaml"
"""The DVC pipeline file; tiermap only adds artifact declarations to it (comments and quoting kept)."""
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Seed = Annotated[int, Field(strict=True)]
"""A seed is an integer as written (`seed: "3"` is a string, not a seed)."""


def _plain(value: str) -> str:
    if name_error(value):
        raise ValueError(name_error(value))
    return value


Name = Annotated[str, AfterValidator(_plain)]
"""A dataset, scene or condition name: one folder under the data root (formats.layout.NAME_RULE)."""


class RenderParams(Model):
    """`render`: renderer and image size of every sequence."""

    renderer: str = "pyrender"
    width: PosInt
    height: PosInt
    hfov_deg: Annotated[float, Field(gt=0, lt=180)] = 90.0
    depth_scale: Positive = 1000.0
    antialias: bool = True           # pyrender: 4x multisampling (off: about twice the frame rate, aliased edges)


class TrajectoryParams(Model):
    """`trajectory`: the path planner and the robot's speed (OSMa-Bench nominal 0.75 m/s, 0.8 rad/s)."""

    planner: Literal["coverage", "random"] = "coverage"
    n_goals: PosInt = 2
    candidate_spacing: Positive = 0.5
    view_range: Positive = 4.0
    min_visible_samples: PosInt = 3
    min_solid_angle: NonNeg = 0.003
    robot_radius: NonNeg
    camera_height: Positive
    linear_speed: Positive
    angular_speed: Positive
    fps: Positive


class GTParams(Model):
    """`gt`: GT cloud density and when an object counts as seen."""

    density: Positive = 2500.0
    min_pixels: PosInt = 50


class CropParams(Model):
    """`annotation.crops`: views per object and crop geometry."""

    k: PosInt = 3
    min_pixels: PosInt = 50
    pad: NonNeg = 0.25
    size: PosInt = 256


class AnnotationParams(Model):
    """`annotation`: annotations per object, crops and close-ups (close-ups are checked by generation.closeup)."""

    annotators: PosInt = 4
    crops: CropParams = CropParams()
    closeups: dict[str, Any] = {}


class VQAParams(Model):
    """`vqa`: the GT question sets (seed, questions per category, per-object cap) and the relation thresholds."""

    seed: Seed = 0
    per_category: PosInt = 12
    max_per_object: PosInt = 6
    thresholds: RelationThresholds = RelationThresholds()


class ProceduralScene(Model):
    """A procedural scene of `scene`: seed and room kinds."""

    source: Literal["procedural"] = "procedural"
    seed: Seed
    rooms: list[str] | None = None


class MeshScene(Model):
    """A scene of `mesh_scene`: a labelled mesh source."""

    source: Literal["replica", "mesh", "habitat", "replicacad", "hm3d", "scannetpp"]
    input: str
    seed: Seed = 0
    classes: str | None = None
    up: str | None = None


class ClusterParams(Model):
    """The `cluster:` block: the Slurm jobs of `tiermap repro --cluster slurm` (dask-jobqueue SLURMCluster arguments)."""

    queue: str | None = None
    account: str | None = None
    cores: PosInt = 1             # cores per job (one Dask worker process per job unless `processes` says otherwise)
    processes: PosInt = 1
    memory: str = "4GB"
    walltime: str = "01:00:00"
    jobs: PosInt = 1              # cluster.scale(jobs=...)
    job_extra_directives: list[str] = []


class Params(Model):
    """params.yaml."""

    dataset: Name = "demo"
    scenes: Annotated[list[Name], Field(min_length=1)]
    scene: dict[Name, ProceduralScene] = {}
    mesh_scene: dict[Name, MeshScene] | None = None
    conditions: Annotated[list[Name], Field(min_length=1)]
    reference_condition: str = "baseline"
    render: RenderParams
    trajectory: TrajectoryParams
    lighting: dict[str, dict[str, Any]]
    gt: GTParams
    annotation: AnnotationParams = AnnotationParams()
    vqa: VQAParams = VQAParams()
    cluster: ClusterParams = ClusterParams()


def check_params(data: Any, path: Path | str = PARAMS_FILE) -> Params:
    """A parsed params.yaml → Params; SchemaError naming the block and field otherwise."""
    if not isinstance(data, dict):
        raise SchemaError(path, "<root>", "a mapping of parameter blocks", type(data).__name__)
    try:
        params = Params.model_validate(data)
    except ValidationError as err:
        raise _pydantic_error(Path(path), err) from None
    missing = [c for c in params.conditions if c not in params.lighting]
    if missing:
        raise SchemaError(path, f"lighting.{missing[0]}", f"a lighting block for every condition in `conditions` (have {sorted(params.lighting)})")
    if params.reference_condition not in params.conditions:
        raise SchemaError(path, "reference_condition", f"one of conditions {params.conditions}", params.reference_condition)
    return params


def read_params(path: Path | str = PARAMS_FILE) -> tuple[Params, dict[str, Any]]:
    """params.yaml → (checked Params, the mapping as written, which stages hand on unchanged so outputs stay byte-identical)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing params.yaml (run from the repository root or pass --params)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise yaml_error(path, err) from None
    return check_params(data, path), data


def yaml_error(path: Path | str, err: Exception) -> SchemaError:
    """A YAML parse error (PyYAML or ruamel) as one line naming the file, the line and the column."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "<file>"
    what = getattr(err, "problem", None) or getattr(err, "context", None) or type(err).__name__
    return SchemaError(path, where, f"valid YAML ({what})")


def add_dvc_artifact(path: Path | str, name: str, entry: dict[str, Any]) -> bool:
    """Declare an artifact under `artifacts:` of dvc.yaml unless already declared; True if the file changed."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from tiermap import atomic

    path = Path(path)
    y = YAML()
    y.preserve_quotes = True
    try:
        data = y.load(path.read_text(encoding="utf-8")) if path.is_file() else None
    except YAMLError as err:
        raise yaml_error(path, err) from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise SchemaError(path, "<root>", "a mapping (stages, artifacts, ...)", type(data).__name__)
    arts = data.setdefault("artifacts", {})
    if not isinstance(arts, dict):
        raise SchemaError(path, "artifacts", "a mapping of artifact name to its declaration", type(arts).__name__)
    if name in arts:
        return False
    arts[name] = entry
    buf = io.StringIO()
    y.dump(data, buf)
    atomic.write_text(path, buf.getvalue())
    return True
