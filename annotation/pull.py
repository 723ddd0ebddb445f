"""Pull annotations: keep the raw export untouched (append-only, timestamped), then write the tidy labels table."""
from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from annotation.ls_client import LabelStudio
from annotation.project import find_project
from annotation.push import crop_tasks
from tiermap import atomic, schema


def raw_dir(ds: schema.DatasetPaths) -> Path:
    """labels/raw/: one export file per pull, never rewritten."""
    return ds.labels / "raw"


def _new_raw_path(ds: schema.DatasetPaths, suffix: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    path = raw_dir(ds) / f"{stamp}-{suffix}"
    n = 1
    while path.exists():
        path = raw_dir(ds) / f"{stamp}-{n}-{suffix}"
        n += 1
    return path


def save_raw(ds: schema.DatasetPaths, export: bytes, users: list[dict[str, Any]]) -> Path:
    """Store the export bytes as received (plus the user list that resolves annotator ids) before any parsing."""
    path = _new_raw_path(ds, "export.json")
    atomic.write_bytes(path, export)
    atomic.write_text(path.with_name(path.name.replace("export.json", "users.json")), json.dumps(users, indent=1))
    return path


def resolve_annotators(tasks: Any, users: list[dict[str, Any]]) -> Any:
    """A copy of the export with `completed_by` ids replaced by {id, email} (the raw file keeps the ids)."""
    if not isinstance(tasks, list):
        return tasks
    emails = {u.get("id"): u.get("email") for u in users}
    out = copy.deepcopy(tasks)
    for t in out:
        for a in (t.get("annotations") or []) if isinstance(t, dict) else []:
            if isinstance(a, dict) and isinstance(a.get("completed_by"), int) and a["completed_by"] in emails:
                a["completed_by"] = {"id": a["completed_by"], "email": emails[a["completed_by"]]}
    return out


def tidy_from_raw(ds: schema.DatasetPaths, raw_path: Path, users: list[dict[str, Any]], scenes: list[str],
                  raw: bytes | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tidy labels and flagged rows from one raw export (its bytes, if already in memory); tasks not ours are flagged."""
    from annotation.tidy import tidy_export

    try:
        tasks = json.loads(raw_path.read_bytes() if raw is None else raw)
    except json.JSONDecodeError as err:
        raise schema.SchemaError(raw_path, "<root>", f"a JSON list of Label Studio tasks ({err.msg} at line {err.lineno})") from None
    labels, flagged = tidy_export(resolve_annotators(tasks, users), raw_path)
    known = {(t["scene"], t["object_id"]) for t in crop_tasks(ds, scenes).values()}
    ours = pd.Series([(s, o) in known for s, o in zip(labels["scene"], labels["object_id"])], index=labels.index, dtype=bool)
    if not ours.all():
        extra = labels[~ours].assign(reason="unknown task: scene/object not in this dataset's crops")
        flagged = pd.concat([flagged, extra[[c for c in flagged.columns if c in extra.columns] or list(extra.columns)]], ignore_index=True)
        labels = labels[ours]
    return labels.reset_index(drop=True), flagged.reset_index(drop=True)


def pull(ds: schema.DatasetPaths, scenes: list[str], ls: LabelStudio) -> dict[str, Any]:
    """Export → labels/raw/<time>-export.json → labels/labels.parquet (+ labels/flagged.csv for rejected rows)."""
    proj = find_project(ls, ds)
    if proj is None:
        raise schema.SchemaError(ls.url, "project", f"a Label Studio project for dataset {ds.name!r} (run `tiermap annotate push` first)")
    users = ls.users()
    raw = ls.export_bytes(proj["id"])
    raw_path = save_raw(ds, raw, users)
    labels, flagged = tidy_from_raw(ds, raw_path, users, scenes, raw)
    schema.write_labels(ds.labels / "labels.parquet", labels)
    atomic.write_text(ds.labels / "flagged.csv", flagged.to_csv(index=False))
    return {"raw export": str(raw_path), "label rows": len(labels), "objects": labels.groupby(["scene", "object_id"]).ngroups,
            "annotators": labels["annotator"].nunique(), "flagged rows": len(flagged)}
