"""Push crops to every annotator's seat as one task per (scene, object): idempotent, resumable, changed crops update."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

from annotation.ls_client import Admin
from annotation.project import admins, ensure_project
from tiermap.formats.base import SchemaError, read_model, write_model
from tiermap.formats.crops import INDEX_FILE, CropRecord, read_crop_index
from tiermap.formats.labelstudio import TASKS_FILE, SeatTasks, TasksRecord
from tiermap.formats.layout import DatasetPaths


def task_key(scene: str, object_id: int) -> str:
    """The stable identity of a task across pushes and seats."""
    return f"{scene}/{object_id}"


def local_url(rel: str) -> str:
    """URL Label Studio serves a file under its document root (the crops folder) from."""
    return f"/data/local-files/?d={quote(rel)}"


def crop_records(ds: DatasetPaths, scenes: list[str]) -> dict[str, CropRecord]:
    """Every cropped object's record (files relative to crops/<scene>/), keyed by task key."""
    out: dict[str, CropRecord] = {}
    for scene in scenes:
        for r in read_crop_index(ds.dir / "crops" / scene / INDEX_FILE).objects:
            out[task_key(scene, r.object_id)] = r
    return out


def crop_tasks(ds: DatasetPaths, scenes: list[str]) -> dict[str, dict[str, Any]]:
    """Task data of every cropped object, keyed by task key."""
    tasks: dict[str, dict[str, Any]] = {}
    for key, r in crop_records(ds, scenes).items():
        tasks[key] = {"key": key, "scene": r.scene, "object_id": r.object_id, "image": local_url(f"{r.scene}/{r.crop}"),
                      "context_images": [local_url(f"{r.scene}/{p}") for p in (r.context, *r.frames)], "crop_hash": r.sha256}
    return tasks


def existing_tasks(ls: Admin, pid: int) -> dict[str, list[dict[str, Any]]]:
    """Tasks already in a seat's project by key (a list: duplicates are reported, never created by push)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for t in ls.export(pid):
        key = (t.get("data") or {}).get("key")
        if key:
            out.setdefault(key, []).append(t)
    for rows in out.values():
        rows.sort(key=lambda t: t["id"])
    return out


def push_seat(ls: Admin, ds: DatasetPaths, scenes: list[str], wanted: dict[str, dict[str, Any]], batch_size: int = 250,
              on_batch: Callable[[str, int], None] | None = None, log: Callable[[str], None] = print) -> tuple[SeatTasks, dict[str, int]]:
    """Bring one seat's project up to date; its task ids and counts."""
    pid = ensure_project(ls, ds, scenes)
    have = existing_tasks(ls, pid)
    new = [k for k in wanted if k not in have]
    changed = [k for k in wanted if k in have and have[k][0]["data"].get("crop_hash") != wanted[k]["crop_hash"]]
    for i in range(0, len(new), batch_size):
        batch = new[i:i + batch_size]
        ids = ls.import_tasks(pid, [{"data": wanted[k]} for k in batch])
        for k, tid in zip(batch, ids):
            have[k] = [{"id": tid, "data": wanted[k]}]
        log(f"  {ls.seat.annotator}: imported {min(i + batch_size, len(new))}/{len(new)} new tasks")
        if on_batch:
            on_batch(ls.seat.annotator, i // batch_size)
    for k in changed:
        ls.update_task(have[k][0]["id"], wanted[k])
    record = SeatTasks(project_id=pid, tasks={k: int(have[k][0]["id"]) for k in sorted(wanted)})
    counts = {"created": len(new), "updated": len(changed), "duplicates_on_server": sum(len(v) - 1 for v in have.values()),
              "stale_on_server": len(set(have) - set(wanted))}
    return record, counts


def push(ds: DatasetPaths, scenes: list[str], annotators_wanted: int = 4, batch_size: int = 250,
         on_batch: Callable[[str, int], None] | None = None, log: Callable[[str], None] = print) -> dict[str, int]:
    """Push to every seat; write labels/tasks.json (per seat: project and task ids; crop hashes)."""
    wanted = crop_tasks(ds, scenes)
    seats = admins(ds)
    if len(seats) < annotators_wanted:
        log(f"  note: {len(seats)} annotator seat(s), params ask for {annotators_wanted} annotations per object")
    path = tasks_record(ds)
    old = read_model(TasksRecord, path) if path.is_file() else None
    records: dict[str, SeatTasks] = dict(old.seats) if old else {}
    totals = {"created": 0, "updated": 0, "duplicates_on_server": 0, "stale_on_server": 0}
    with ThreadPoolExecutor(max_workers=len(seats)) as pool:  # each seat is its own server process
        done = list(pool.map(lambda ls: push_seat(ls, ds, scenes, wanted, batch_size, on_batch, log), seats))
    for ls, (seat_tasks, counts) in zip(seats, done):
        records[ls.seat.annotator] = seat_tasks
        totals = {k: totals[k] + counts[k] for k in totals}
    write_model(TasksRecord(crop_hashes={k: wanted[k]["crop_hash"] for k in sorted(wanted)},
                                          seats={a: records[a] for a in sorted(records)}), path)
    return {"seats": len(seats), "tasks": len(wanted), **totals,
            "unchanged": len(wanted) * len(seats) - totals["created"] - totals["updated"]}


def tasks_record(ds: DatasetPaths) -> Path:
    """labels/tasks.json: what the last push left on the seats (the push stage's output)."""
    return ds.labels / TASKS_FILE


def read_tasks_record(ds: DatasetPaths) -> TasksRecord:
    """labels/tasks.json, or a clear error before the first push."""
    path = tasks_record(ds)
    if not path.is_file():
        raise SchemaError(path, "<file>", "the record of a push (run `tiermap annotate push` first)")
    return read_model(TasksRecord, path)
