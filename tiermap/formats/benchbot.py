"""BenchBot OMQ files: the ground-truth objects.json and a method's results JSON."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tiermap.formats.base import Model, Vec3, read_model, write_model
from tiermap.formats.scene import OBB

BENCHBOT_RESULTS_FILE = "benchbot_results.json"

OBJECTS_FILE = "objects.json"


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


def read_benchbot_gt(path: Path | str) -> BenchBotGT:
    """objects.json (BenchBot ground truth)."""
    return read_model(BenchBotGT, path)


def read_benchbot_results(path: Path | str) -> BenchBotResults:
    """A BenchBot results file (object_map / object_map_with_states)."""
    return read_model(BenchBotResults, path)


def write_benchbot_results(results: BenchBotResults, path: Path | str) -> Path:
    """Write a BenchBot results file (a method's object map)."""
    return write_model(results, path)
