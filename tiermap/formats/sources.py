"""Scene source datasets' own files: Replica's info_semantic.json and class maps."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from tiermap.formats.base import read_model


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
