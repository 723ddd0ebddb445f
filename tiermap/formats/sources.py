"""Scene source datasets' own files: Replica's info_semantic.json and class maps."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from tiermap.formats.base import SchemaError, read_json, read_model


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
