"""Class maps: which class name each object id has (a mesh source's classes.json, or a GT objects.json with ids)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tiermap.formats.base import SchemaError, read_json
from tiermap.formats.benchbot import read_benchbot_gt

EXPECTED = ('objects.json in BenchBot form with ids, a JSON object {"<object id>": "class name"}, '
            'or a list of {"id", "class_name"}')


def read_class_map(path: Path | str) -> dict[int, str]:
    """Object id (1..65535) → class name, from any of the three forms in EXPECTED."""
    data = read_json(path)
    items: Any
    if isinstance(data, dict) and "ground_truth" in data:
        gt = read_benchbot_gt(path)
        if any(o.id is None or str(o.id).strip() == "" for o in gt.ground_truth.objects):
            raise SchemaError(path, "ground_truth.objects.id", "an id on every object (to map GT cloud ids to classes)")
        items = [(o.id, o.class_) for o in gt.ground_truth.objects]
    elif isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list) and all(isinstance(d, dict) for d in data):
        items = [(d.get("id"), d.get("class_name")) for d in data]
    else:
        raise SchemaError(path, "<root>", EXPECTED, type(data).__name__)
    out: dict[int, str] = {}
    for k, name in items:
        try:
            oid = int(k)
        except (TypeError, ValueError):
            raise SchemaError(path, str(k), "an integer object id") from None
        if not 1 <= oid <= 65535:
            raise SchemaError(path, str(k), "an object id in 1..65535 (0 means unlabelled)", oid)
        if not isinstance(name, str) or not name.strip():
            raise SchemaError(path, str(k), "a non-empty class name", name)
        out[oid] = name
    return out
