"""Push crops to Label Studio as one task per (scene, object): idempotent, resumable, changed crops update their task."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from annotation.ls_client import LabelStudio
from annotation.project import ensure_project
from tiermap import atomic, schema


def task_key(scene: str, object_id: int) -> str:
    """The stable identity of a task across pushes."""
    return f"{scene}/{object_id}"


def local_url(rel: str) -> str:
    """URL Label Studio serves a file under its document root (the dataset folder) from."""
    return f"/data/local-files/?d={quote(rel)}"


def crop_records(ds: schema.DatasetPaths, scenes: list[str]) -> dict[str, schema.CropRecord]:
    """Every cropped object's record (files relative to crops/<scene>/), keyed by task key."""
    out: dict[str, schema.CropRecord] = {}
    for scene in scenes:
        for r in schema.read_crop_index(ds.dir / "crops" / scene / "index.json").objects:
            out[task_key(scene, r.object_id)] = r
    return out


def crop_tasks(ds: schema.DatasetPaths, scenes: list[str]) -> dict[str, dict[str, Any]]:
    """Task data of every cropped object, keyed by task key."""
    tasks: dict[str, dict[str, Any]] = {}
    for key, r in crop_records(ds, scenes).items():
        rel = f"crops/{r.scene}"
        tasks[key] = {"key": key, "scene": r.scene, "object_id": r.object_id, "image": local_url(f"{rel}/{r.crop}"),
                      "context_images": [local_url(f"{rel}/{p}") for p in (r.context, *r.frames)], "crop_hash": r.sha256}
    return tasks


def existing_tasks(ls: LabelStudio, pid: int) -> dict[str, list[dict[str, Any]]]:
    """Tasks already in the project by key (a list: duplicates are reported, never created by push)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for t in ls.export(pid):
        key = (t.get("data") or {}).get("key")
        if key:
            out.setdefault(key, []).append(t)
    return out


def push(ds: schema.DatasetPaths, scenes: list[str], ls: LabelStudio, annotations_per_task: int = 4, batch_size: int = 250,
         on_batch: Callable[[int], None] | None = None, log: Callable[[str], None] = print) -> dict[str, int]:
    """Create/update the project and its tasks; write labels/tasks.json (task key → id, crop hash)."""
    wanted = crop_tasks(ds, scenes)
    pid = ensure_project(ls, ds, annotations_per_task)
    have = existing_tasks(ls, pid)
    new = [k for k in wanted if k not in have]
    changed = [k for k in wanted if k in have and have[k][0]["data"].get("crop_hash") != wanted[k]["crop_hash"]]
    for i in range(0, len(new), batch_size):
        batch = new[i:i + batch_size]
        ids = ls.import_tasks(pid, [{"data": wanted[k]} for k in batch])
        for k, tid in zip(batch, ids):
            have[k] = [{"id": tid, "data": wanted[k]}]
        log(f"  imported {min(i + batch_size, len(new))}/{len(new)} new tasks")
        if on_batch:
            on_batch(i // batch_size)
    for k in changed:
        ls.update_task(have[k][0]["id"], wanted[k])
        have[k][0]["data"] = wanted[k]
    record = {"project_id": pid, "tasks": {k: {"id": have[k][0]["id"], "crop_hash": wanted[k]["crop_hash"]} for k in sorted(wanted)}}
    atomic.write_text(tasks_record(ds), schema.dump_json(record))
    return {"project": pid, "tasks": len(wanted), "created": len(new), "updated": len(changed),
            "unchanged": len(wanted) - len(new) - len(changed), "duplicates_on_server": sum(len(v) - 1 for v in have.values()),
            "stale_on_server": len(set(have) - set(wanted))}


def tasks_record(ds: schema.DatasetPaths) -> Path:
    """labels/tasks.json: what the last push left on the server (the push stage's output)."""
    return ds.labels / "tasks.json"
