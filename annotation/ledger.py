"""Tamper-evident pulls: every pull is compared with the accepted annotations of earlier pulls (labels/ledger.json).

Per task and annotator, an annotation that disappeared, changed after it was accepted (other result, or deleted and
re-created), was written or last edited by another account than the seat's annotator, or duplicates the annotator's
accepted one is flagged. A flagged annotation never replaces the accepted one unless the maintainer accepts the
changes; foreign-authored and duplicate annotations are never accepted as the annotator's work.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tiermap.formats.labelstudio import Ledger, LedgerEntry, LSSeat, SeatTasks

@dataclass(frozen=True)
class Flag:
    """One finding of a pull, for one task and annotator."""

    key: str
    annotator: str
    kind: str
    detail: str

    def line(self) -> str:
        """The one line printed for it."""
        return f"{self.kind}: task {self.key}, annotator {self.annotator}: {self.detail}"


def result_hash(result: list[dict[str, Any]], was_cancelled: bool) -> str:
    """sha256 of an annotation's content (result items in canonical JSON, plus the cancelled flag)."""
    text = json.dumps({"result": result, "was_cancelled": was_cancelled}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _user_id(v: Any) -> int | None:
    if isinstance(v, dict):
        v = v.get("id")
    return v if isinstance(v, int) else None


def seat_entries(export: list[dict[str, Any]], seat: LSSeat, tasks: SeatTasks, raw_name: str,
                 ledger: dict[tuple[str, str], LedgerEntry]) -> tuple[dict[str, LedgerEntry], list[Flag]]:
    """The annotator's current annotation per task key on its seat, and flags for foreign, duplicate or unknown ones."""
    key_of = {tid: key for key, tid in tasks.tasks.items()}
    found: dict[str, list[LedgerEntry]] = {}
    flags: list[Flag] = []
    who = seat.annotator
    for t in export:
        anns = t.get("annotations") or []
        key = key_of.get(t.get("id"))
        if key is None:
            if anns:
                flags.append(Flag(f"task-id-{t.get('id')}", who, "unknown task", f"{len(anns)} annotation(s) on a task push did not create"))
            continue
        for a in anns:
            author, editor = _user_id(a.get("completed_by")), _user_id(a.get("updated_by"))
            if author != seat.user_id or editor not in (None, seat.user_id):
                flags.append(Flag(key, who, "foreign author", f"annotation {a.get('id')} written by user {author} "
                                  f"(last edited by {editor}), not the seat's annotator (user {seat.user_id}); not accepted"))
                continue
            scene, oid = key.rsplit("/", 1)
            result = a.get("result") or []
            cancelled = bool(a.get("was_cancelled", False))
            found.setdefault(key, []).append(LedgerEntry(
                key=key, scene=scene, object_id=int(oid), annotator=who, annotation_id=int(a["id"]), completed_by=seat.user_id,
                created_at=str(a.get("created_at") or ""), updated_at=str(a.get("updated_at") or ""), lead_time=a.get("lead_time"),
                was_cancelled=cancelled, result=result, sha256=result_hash(result, cancelled), pulled_from=raw_name))
    current: dict[str, LedgerEntry] = {}
    for key, entries in found.items():
        old = ledger.get((key, who))
        entries.sort(key=lambda e: (old is None or e.annotation_id != old.annotation_id, e.annotation_id))
        current[key] = entries[0]
        flags += [Flag(key, who, "duplicate", f"annotation {e.annotation_id} besides {entries[0].annotation_id}; not accepted")
                  for e in entries[1:]]
    return current, flags


def compare(ledger: Ledger, current: dict[str, dict[str, LedgerEntry]], accept: bool = False
            ) -> tuple[Ledger, list[Flag], int]:
    """(new ledger, flags, newly accepted count) from the ledger and each pulled annotator's current annotations."""
    old = {(e.key, e.annotator): e for e in ledger.entries}
    kept: dict[tuple[str, str], LedgerEntry] = {}
    flags: list[Flag] = []
    added = 0
    for who, entries in current.items():
        for key, cur in entries.items():
            prev = old.get((key, who))
            if prev is None:
                kept[(key, who)], added = cur, added + 1
            elif prev.annotation_id != cur.annotation_id or prev.sha256 != cur.sha256:
                what = ("deleted and re-created" if prev.annotation_id != cur.annotation_id else "result changed")
                flags.append(Flag(key, who, "changed", f"annotation {prev.annotation_id} {what} after it was pulled "
                                  f"(updated {cur.updated_at}); {'accepted' if accept else 'kept the pulled version'}"))
                kept[(key, who)] = cur if accept else prev
            else:
                kept[(key, who)] = prev
    for (key, who), prev in old.items():
        if (key, who) in kept:
            continue
        flags.append(Flag(key, who, "disappeared", f"annotation {prev.annotation_id} (pulled from {prev.pulled_from}) is gone; "
                          f"{'dropped' if accept else 'kept the pulled version'}"))
        if not accept:
            kept[(key, who)] = prev
    return Ledger(entries=sorted(kept.values(), key=lambda e: (e.key, e.annotator))), flags, added


def ledger_tasks(ledger: Ledger) -> list[dict[str, Any]]:
    """The accepted annotations as a Label Studio JSON export (completed_by resolved to the annotator's email)."""
    tasks: dict[str, dict[str, Any]] = {}
    for e in ledger.entries:
        t = tasks.setdefault(e.key, {"data": {"key": e.key, "scene": e.scene, "object_id": e.object_id}, "annotations": []})
        t["annotations"].append({"id": e.annotation_id, "completed_by": {"id": e.completed_by, "email": e.annotator},
                                 "result": e.result, "was_cancelled": e.was_cancelled, "created_at": e.created_at,
                                 "updated_at": e.updated_at})
    return [tasks[k] for k in sorted(tasks)]
