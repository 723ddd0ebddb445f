"""Lighting conditions as data: a named light set, a schedule along the path and a speed factor."""
from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tiermap.formats.base import SchemaError, _pydantic_error
from tiermap.formats.params import PARAMS_FILE
from tiermap.formats.scene import Scene
from tiermap.formats.sequence import Light


class LightSpec(BaseModel):
    """A light in params.yaml; `at` is a position as fractions of the scene's room bounds."""

    model_config = ConfigDict(extra="forbid")
    name: str
    type: str = "point"
    at: list[float] | None = Field(default=None, min_length=3, max_length=3)
    color: list[float] = [1.0, 1.0, 1.0]
    intensity: float = Field(ge=0)
    attached_to_camera: bool = False
    active: list[tuple[float, float]] | None = None


class Condition(BaseModel):
    """One condition: lights, ambient level, and speed factor (velocity doubles linear and angular speed).

    `scene_lights`: a scene that brings its own lights (a ReplicaCAD scene's default lighting) is lit by them instead
    of `lights`; scenes without lights (procedural, Replica, generic meshes) keep `lights`.
    """

    model_config = ConfigDict(extra="forbid")
    lights: list[LightSpec] = []
    scene_lights: bool = False
    ambient: float = Field(default=0.15, ge=0)
    speed_factor: float = Field(default=1.0, gt=0)


class UnknownConditionError(KeyError):
    """A condition name that params.yaml does not define."""

    def __str__(self) -> str:
        return str(self.args[0])


def load_condition(name: str, lighting: dict[str, Any]) -> Condition:
    """The named condition from the `lighting` block of params.yaml."""
    if name not in lighting:
        raise UnknownConditionError(f"unknown condition {name!r}: params.yaml lighting defines {sorted(lighting)}")
    try:
        return Condition.model_validate(lighting[name])
    except ValidationError as err:
        e = _pydantic_error(PARAMS_FILE, err)
        raise SchemaError(PARAMS_FILE, f"lighting.{name}.{e.field}", e.expected) from None


def resolve_lights(cond: Condition, scene: Scene) -> list[Light]:
    """World-space lights of a condition in a scene (ambient becomes an 'ambient' light; `scene_lights`: the scene's own)."""
    lo = np.min([r.min for r in scene.rooms], axis=0) if scene.rooms else np.zeros(3)
    hi = np.max([r.max for r in scene.rooms], axis=0) if scene.rooms else np.ones(3)
    out = [Light(name="ambient", type="ambient", intensity=cond.ambient)]
    if cond.scene_lights and scene.lights:
        return out + [L.model_copy(deep=True) for L in scene.lights]
    for spec in cond.lights:
        pos = None if spec.at is None else [float(v) for v in lo + np.asarray(spec.at) * (hi - lo)]
        out.append(Light(name=spec.name, type=spec.type, position=pos, color=spec.color, intensity=spec.intensity,
                         attached_to_camera=spec.attached_to_camera, active=spec.active))
    return out
