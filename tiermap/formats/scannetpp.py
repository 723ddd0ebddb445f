"""ScanNet++ scan annotations: `scans/segments.json` (segment per mesh vertex) and `scans/segments_anno.json` (objects)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from tiermap.formats.base import SchemaError, read_model

SCANNETPP_MESH = "scans/mesh_aligned_0.05.ply"
SCANNETPP_SEGMENTS = "scans/segments.json"
SCANNETPP_ANNO = "scans/segments_anno.json"


class Segments(BaseModel):
    """segments.json: `segIndices[v]` is the segment id of mesh vertex v (other keys such as params are ignored)."""

    model_config = ConfigDict(extra="ignore")

    segIndices: list[Annotated[int, Field(ge=0)]]


class SegGroup(BaseModel):
    """A segGroups entry: an annotated object as a set of segments (obb and other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    objectId: int | None = None
    id: int | None = None
    label: Annotated[str, Field(min_length=1)]
    segments: list[int]

    @property
    def object_id(self) -> int | None:
        """The id the ScanNet++ toolbox gives its vertices (`objectId`; `id` when a file lacks it)."""
        return self.objectId if self.objectId is not None else self.id


class SegmentsAnno(BaseModel):
    """segments_anno.json: the annotated objects."""

    model_config = ConfigDict(extra="ignore")

    segGroups: list[SegGroup]


def read_segments(path: Path | str) -> Segments:
    """segments.json, validated."""
    return read_model(Segments, path)


def read_segments_anno(path: Path | str) -> SegmentsAnno:
    """segments_anno.json, validated: every group has an object id in 1..65535, unique."""
    anno = read_model(SegmentsAnno, path)
    seen: dict[int, int] = {}
    for i, g in enumerate(anno.segGroups):
        oid = g.object_id
        if oid is None:
            raise SchemaError(path, f"segGroups[{i}].objectId", "an object id (objectId, or id)")
        if not 1 <= oid <= 65535:
            raise SchemaError(path, f"segGroups[{i}].objectId", "an id in 1..65535 (uint16 instance images, 0 = none)", oid)
        if oid in seen:
            raise SchemaError(path, f"segGroups[{i}].objectId", f"a unique object id (also segGroups[{seen[oid]}])", oid)
        seen[oid] = i
    return anno
