"""Pull annotations from every seat: raw exports kept untouched first, then the tamper check, then the tidy labels table."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from annotation.ledger import Flag, compare, ledger_tasks, seat_entries
from annotation.ls_client import Admin
from annotation.project import admins
from annotation.push import crop_tasks, read_tasks_record
from tiermap.formats.labels import FLAGGED_COLUMNS, FLAGGED_FILE, LABELS_FILE, write_labels, write_table_csv
from tiermap.formats.labelstudio import (
    LEDGER_FILE,
    TAMPER_COLUMNS,
    TAMPER_FILE,
    Ledger,
    LedgerEntry,
    decode_ls_export,
    read_ledger,
    write_ledger,
    write_raw_export,
    write_seat_users,
)
from tiermap.formats.layout import DatasetPaths


class TamperError(RuntimeError):
    """A pull found annotations that disappeared, changed or were written by someone else (exit 3)."""

    def __init__(self, flags: list[Flag], report: Path) -> None:
        self.flags = flags
        super().__init__(f"{len(flags)} annotation(s) flagged (listed in {report}); the pulled versions were kept. "
                         "Re-run with --accept-changes to accept changes and removals.")


def raw_dir(ds: DatasetPaths) -> Path:
    """labels/raw/: export files per pull and seat, never rewritten."""
    return ds.labels / "raw"


def ledger_path(ds: DatasetPaths) -> Path:
    """labels/ledger.json: accepted annotations (kept across pulls)."""
    return ds.labels / LEDGER_FILE


def tamper_report(ds: DatasetPaths) -> Path:
    """labels/tamper.csv: what the last pull flagged, one row per task and annotator."""
    return ds.labels / TAMPER_FILE


def _new_raw_path(ds: DatasetPaths, stamp: str, suffix: str) -> Path:
    path = raw_dir(ds) / f"{stamp}-{suffix}"
    n = 1
    while path.exists():
        path = raw_dir(ds) / f"{stamp}-{n}-{suffix}"
        n += 1
    return path


def save_raw(ds: DatasetPaths, stamp: str, slug: str, export: bytes, users: list[dict[str, Any]]) -> Path:
    """Store a seat's export bytes as received (plus its user list) before any parsing."""
    path = _new_raw_path(ds, stamp, f"{slug}-export.json")
    write_raw_export(path, export)
    write_seat_users(path.with_name(path.name.replace("export.json", "users.json")), users)
    return path


def parse_raw(path: Path, raw: bytes) -> list[dict[str, Any]]:
    """A raw export as a list of task dicts (validated), or a SchemaError naming the file."""
    return decode_ls_export(raw, path)


def labels_from_ledger(ds: DatasetPaths, ledger: Ledger, scenes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tidy labels and flagged rows of the accepted annotations; objects no longer cropped are flagged, not kept."""
    from annotation.tidy import tidy_export

    labels, flagged = tidy_export(ledger_tasks(ledger), ledger_path(ds))
    known = {(t["scene"], t["object_id"]) for t in crop_tasks(ds, scenes).values()}
    ours = pd.Series([(s, o) in known for s, o in zip(labels["scene"], labels["object_id"])], index=labels.index, dtype=bool)
    if not ours.all():
        extra = labels[~ours].assign(reason="unknown task: scene/object not in this dataset's crops")
        flagged = pd.concat([flagged, extra[[c for c in flagged.columns if c in extra.columns]]], ignore_index=True)
        labels = labels[ours]
    return labels.reset_index(drop=True), flagged.reset_index(drop=True)


def pull(ds: DatasetPaths, scenes: list[str], accept_changes: bool = False) -> dict[str, Any]:
    """Export every seat → labels/raw/ → compare with labels/ledger.json → labels.parquet, flagged.csv, tamper.csv.

    Raises TamperError after writing everything when annotations were flagged and `accept_changes` is off.
    """
    record = read_tasks_record(ds)
    ledger = read_ledger(ledger_path(ds))
    old = {(e.key, e.annotator): e for e in ledger.entries}
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    current: dict[str, dict[str, LedgerEntry]] = {}
    flags: list[Flag] = []
    raws = []
    seats = admins(ds)
    pushed = [ls for ls in seats if ls.seat.annotator in record.seats]
    flags += [Flag("*", ls.seat.annotator, "not pushed", "the seat has no tasks yet (run `tiermap annotate push`)")
              for ls in seats if ls not in pushed]

    def fetch(ls: Admin) -> tuple[bytes, list[dict[str, Any]]]:
        pid = record.seats[ls.seat.annotator].project_id
        raw = ls.export_bytes(pid) if any(p["id"] == pid for p in ls.projects()) else b"[]"
        return raw, ls.users()

    with ThreadPoolExecutor(max_workers=max(len(pushed), 1)) as pool:  # each seat is its own server process
        fetched = list(pool.map(fetch, pushed))
    for ls, (raw, users) in zip(pushed, fetched):
        seat, tasks = ls.seat, record.seats[ls.seat.annotator]
        path = save_raw(ds, stamp, seat.slug, raw, users)
        raws.append(path)
        entries, seat_flags = seat_entries(parse_raw(path, raw), seat, tasks, path.name, old)
        current[seat.annotator], flags = entries, flags + seat_flags
    new_ledger, changes, added = compare(ledger, current, accept_changes)
    flags += changes
    write_ledger(new_ledger, ledger_path(ds))
    labels, flagged = labels_from_ledger(ds, new_ledger, scenes)
    write_labels(ds.labels / LABELS_FILE, labels)
    write_table_csv(ds.labels / FLAGGED_FILE, flagged, FLAGGED_COLUMNS)
    rows = pd.DataFrame([[f.key, f.annotator, f.kind, f.detail] for f in flags], columns=TAMPER_COLUMNS)
    write_table_csv(tamper_report(ds), rows.sort_values(["key", "annotator", "kind"]), TAMPER_COLUMNS)
    blocking = [f for f in flags if f.kind not in ("not pushed",)]
    if blocking and not accept_changes:
        raise TamperError(blocking, tamper_report(ds))
    return {"raw exports": ", ".join(str(p) for p in raws), "seats": len(raws), "new annotations": added,
            "label rows": len(labels), "objects": labels.groupby(["scene", "object_id"]).ngroups,
            "annotators": labels["annotator"].nunique(), "flagged rows": len(flagged), "tamper flags": len(flags)}
