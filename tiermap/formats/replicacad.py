"""ReplicaCAD / habitat-sim scene datasets: scene instances, stage, object and lighting configs, URDFs, the class map.

habitat's JSON files carry many keys tiermap does not need; the models here read the ones it uses and ignore the rest.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tiermap.formats.base import Finite, SchemaError, Vec3, _pydantic_error, read_json

Quat = Annotated[list[Finite], Field(min_length=4, max_length=4)]
"""A rotation quaternion as habitat writes it: [w, x, y, z]."""

TranslationOrigin = Literal["COM", "asset_local", "unknown"]


class Lenient(BaseModel):
    """Base of the habitat models: keys tiermap does not use are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def _origin(v: Any) -> Any:
    """habitat spells translation_origin in any case (`COM`, `asset_local`, `ASSET_LOCAL`)."""
    if isinstance(v, str):
        low = v.lower()
        return "COM" if low == "com" else low
    return v


class TemplateRef(Lenient):
    """An instance naming a template (the stage instance)."""

    template_name: Annotated[str, Field(min_length=1)]


class ObjectInstance(Lenient):
    """One rigid object of a scene instance: its template, pose (y-up, metres) and scale."""

    template_name: Annotated[str, Field(min_length=1)]
    translation: Vec3 = [0.0, 0.0, 0.0]
    rotation: Quat = [1.0, 0.0, 0.0, 0.0]
    translation_origin: TranslationOrigin | None = None
    uniform_scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0
    non_uniform_scale: Vec3 = [1.0, 1.0, 1.0]
    motion_type: str | None = None

    @field_validator("translation_origin", mode="before")
    @classmethod
    def origin_case(cls, v: Any) -> Any:
        """Any spelling of the origin."""
        return _origin(v)


class ArticulatedInstance(ObjectInstance):
    """One articulated object (a URDF) of a scene instance; `fixed_base` is habitat's and does not change the geometry."""

    fixed_base: bool = False


class SceneInstance(Lenient):
    """`<name>.scene_instance.json`: the stage, the rigid and articulated objects, the default lighting."""

    stage_instance: TemplateRef
    object_instances: list[ObjectInstance] = []
    articulated_object_instances: list[ArticulatedInstance] = []
    default_lighting: str = ""
    translation_origin: TranslationOrigin | None = None

    @field_validator("translation_origin", mode="before")
    @classmethod
    def origin_case(cls, v: Any) -> Any:
        """Any spelling of the origin."""
        return _origin(v)


def _scale(v: Any) -> Any:
    """A scale as a number or [x, y, z]."""
    return [v, v, v] if isinstance(v, int | float) else v


class AssetConfig(Lenient):
    """What a stage and an object config share: the render asset (relative to the config) and a scale."""

    render_asset: Annotated[str, Field(min_length=1)]
    scale: Vec3 = [1.0, 1.0, 1.0]

    @field_validator("scale", mode="before")
    @classmethod
    def scale_number(cls, v: Any) -> Any:
        """A number is a uniform scale."""
        return _scale(v)


class StageConfig(AssetConfig):
    """`<name>.stage_config.json`."""


class ObjectConfig(AssetConfig):
    """`<name>.object_config.json`; `COM` is the centre of mass in the asset's frame (none: the bounds centre, as habitat)."""

    COM: Vec3 | None = None


class LightConfig(Lenient):
    """One light of a lighting config (habitat y-up); `position_model` global, camera or object."""

    type: Literal["point", "directional", "spot"] = "point"
    position: Vec3 | None = None
    direction: Vec3 | None = None
    intensity: Finite = 1.0
    color: Vec3 = [1.0, 1.0, 1.0]
    position_model: Literal["global", "camera", "object"] = "global"

    @field_validator("type", "position_model", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        """Any case."""
        return v.lower() if isinstance(v, str) else v


class LightingConfig(Lenient):
    """`<name>.lighting_config.json`: lights by key."""

    lights: dict[str, LightConfig] = {}


class PathsBlock(Lenient):
    """`paths` of one asset kind in a scene dataset config: file suffix → folders (globs) relative to the config."""

    paths: dict[str, list[str]] = {}


class SceneDatasetConfig(Lenient):
    """`<name>.scene_dataset_config.json`: where stage, object, URDF and lighting configs live."""

    stages: PathsBlock = PathsBlock()
    objects: PathsBlock = PathsBlock()
    articulated_objects: PathsBlock = PathsBlock()
    light_setups: PathsBlock = PathsBlock()


def _read(cls: type[Lenient], path: Path | str) -> Any:
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise SchemaError(path, "<root>", "a JSON object", type(data).__name__)
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise _pydantic_error(path, err) from None


def read_scene_instance(path: Path | str) -> SceneInstance:
    """A scene instance JSON."""
    return _read(SceneInstance, path)


def read_stage_config(path: Path | str) -> StageConfig:
    """A stage config JSON."""
    return _read(StageConfig, path)


def read_object_config(path: Path | str) -> ObjectConfig:
    """An object config JSON."""
    return _read(ObjectConfig, path)


def read_lighting_config(path: Path | str) -> LightingConfig:
    """A lighting config JSON."""
    return _read(LightingConfig, path)


def read_scene_dataset_config(path: Path | str) -> SceneDatasetConfig:
    """A scene dataset config JSON."""
    return _read(SceneDatasetConfig, path)


def read_template_class_map(path: Path | str) -> dict[str, str]:
    """A class map JSON {"<template name>": "class name"} (ReplicaCAD templates to tiermap classes)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise SchemaError(path, "<root>", "a JSON object {\"<template name>\": \"class name\"}", type(data).__name__)
    for k, v in data.items():
        if not isinstance(v, str) or not v.strip():
            raise SchemaError(path, k, "a non-empty class name", v)
    return dict(data)


class UrdfVisual(BaseModel):
    """A visual mesh of a URDF link: file (relative to the URDF), origin xyz/rpy and scale."""

    filename: str
    xyz: list[float] = [0.0, 0.0, 0.0]
    rpy: list[float] = [0.0, 0.0, 0.0]
    scale: list[float] = [1.0, 1.0, 1.0]


class UrdfJoint(BaseModel):
    """A URDF joint: parent and child link, origin xyz/rpy, type (at the default joint state 0 only the origin matters)."""

    name: str
    type: str
    parent: str
    child: str
    xyz: list[float] = [0.0, 0.0, 0.0]
    rpy: list[float] = [0.0, 0.0, 0.0]


class Urdf(BaseModel):
    """The parts of a URDF tiermap needs: links with their visual meshes, joints, and the root link."""

    name: str
    links: dict[str, list[UrdfVisual]]
    joints: list[UrdfJoint]
    root: str


def _floats(path: Path, field: str, text: str | None, n: int, default: list[float]) -> list[float]:
    if text is None:
        return default
    try:
        vals = [float(x) for x in text.split()]
    except ValueError:
        raise SchemaError(path, field, f"{n} numbers", text) from None
    if len(vals) == 1 and n == 3 and field.endswith("scale"):
        vals = vals * 3
    if len(vals) != n:
        raise SchemaError(path, field, f"{n} numbers", text)
    return vals


def read_urdf(path: Path | str) -> Urdf:
    """A URDF file: links, their visual meshes, joints; one root link (no link is a child of none) required."""
    import xml.etree.ElementTree as ET

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing URDF file")
    try:
        robot = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise SchemaError(path, "<file>", f"valid URDF XML ({err})") from None
    if robot.tag != "robot":
        raise SchemaError(path, "<root>", "a <robot> element", robot.tag)
    links: dict[str, list[UrdfVisual]] = {}
    for i, link in enumerate(robot.findall("link")):
        lname = link.get("name")
        if not lname:
            raise SchemaError(path, f"link[{i}].name", "a link name")
        vis = []
        for j, v in enumerate(link.findall("visual")):
            field = f"link[{lname}].visual[{j}]"
            mesh = v.find("geometry/mesh")
            if mesh is None:
                continue  # primitive shapes (box, cylinder) are not render assets
            fn = mesh.get("filename")
            if not fn:
                raise SchemaError(path, f"{field}.geometry.mesh.filename", "a mesh file name")
            o = v.find("origin")
            vis.append(UrdfVisual(filename=fn, xyz=_floats(path, f"{field}.origin.xyz", o.get("xyz") if o is not None else None, 3, [0.0] * 3),
                                  rpy=_floats(path, f"{field}.origin.rpy", o.get("rpy") if o is not None else None, 3, [0.0] * 3),
                                  scale=_floats(path, f"{field}.geometry.mesh.scale", mesh.get("scale"), 3, [1.0] * 3)))
        links[lname] = vis
    joints = []
    for i, j in enumerate(robot.findall("joint")):
        p, c = j.find("parent"), j.find("child")
        jname = j.get("name") or f"joint[{i}]"
        if p is None or c is None or p.get("link") not in links or c.get("link") not in links:
            raise SchemaError(path, f"joint[{jname}].parent/child", f"links of this URDF ({sorted(links)})",
                              f"{p.get('link') if p is not None else None} -> {c.get('link') if c is not None else None}")
        o = j.find("origin")
        joints.append(UrdfJoint(name=jname, type=j.get("type", "fixed"), parent=p.get("link", ""), child=c.get("link", ""),
                                xyz=_floats(path, f"joint[{jname}].origin.xyz", o.get("xyz") if o is not None else None, 3, [0.0] * 3),
                                rpy=_floats(path, f"joint[{jname}].origin.rpy", o.get("rpy") if o is not None else None, 3, [0.0] * 3)))
    roots = sorted(set(links) - {j.child for j in joints})
    if len(roots) != 1:
        raise SchemaError(path, "joint", "links forming one tree (exactly one root link)", roots)
    return Urdf(name=robot.get("name", path.stem), links=links, joints=joints, root=roots[0])
