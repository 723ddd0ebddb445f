"""LVLM pre-annotation: Gemini proposes the three label lists per crop; they become Label Studio predictions."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from annotation.project import FIELDS, INSTRUCTIONS, admins, textarea_result
from annotation.push import crop_records, read_tasks_record
from tiermap.formats.base import SchemaError
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.records import (
    SuggestedWords,
    read_suggestion_cache,
    write_suggestion_cache,
)


class ObjectWords(BaseModel):
    """Gemini's structured answer (the response schema: every list required)."""

    synonyms: list[str]
    depictions: list[str]
    visually_similar: list[str]


PROMPT = ("You label objects for a 3D scene-understanding benchmark. The image shows one object with its background "
          "removed. Follow these instructions and answer with three lists of short lowercase labels.\n" + INSTRUCTIONS)


def cache_path(ds: DatasetPaths, model: str) -> Any:
    """labels/suggestions/<model>.json: answers by crop hash and which task got which prediction."""
    return ds.labels / "suggestions" / f"{model.replace('/', '_')}.json"


def suggest(ds: DatasetPaths, scenes: list[str], model: str = "gemini-2.5-flash",
            log: Callable[[str], None] = print) -> dict[str, int]:
    """Ask Gemini once per crop (cached by crop hash) and import its answers as predictions on every seat (once per task)."""
    from tiermap.gemini import ask_image, gemini_client

    record = read_tasks_record(ds)
    path = cache_path(ds, model)
    cache = read_suggestion_cache(path)
    records = crop_records(ds, scenes)
    keys = [k for k in sorted(record.crop_hashes) if k in records]
    client = None
    asked = 0
    for key in keys:
        h = record.crop_hashes[key]
        if h in cache.answers:
            continue
        crop = ds.dir / "crops" / records[key].scene / records[key].crop
        if not crop.is_file():
            raise SchemaError(crop, "<file>", f"the crop of task {key} (re-run `tiermap annotate crops`)")
        client = client or gemini_client("tiermap annotate suggest --gemini")
        ans = ask_image(client, model, crop.read_bytes(), PROMPT, ObjectWords)
        cache.answers[h] = SuggestedWords.model_validate(ans.model_dump())
        write_suggestion_cache(cache, path)
        asked += 1
        log(f"  gemini {asked}: {key} -> {', '.join(ans.synonyms[:3])}")
    imported = 0
    for ls in admins(ds):
        seat = record.seats.get(ls.seat.annotator)
        if seat is None:
            continue
        done = cache.imported.setdefault(ls.seat.annotator, {})
        new = [(seat.tasks[k], record.crop_hashes[k]) for k in keys if k in seat.tasks and done.get(str(seat.tasks[k])) != record.crop_hashes[k]]
        if not new:
            continue
        ls.import_predictions(seat.project_id, [{
            "task": tid, "model_version": model, "score": 0.5,
            "result": textarea_result({f: ", ".join(getattr(cache.answers[h], f)) for f in FIELDS})} for tid, h in new])
        ls.update_project(seat.project_id, model_version=model)
        done.update({str(tid): h for tid, h in new})
        write_suggestion_cache(cache, path)
        imported += len(new)
    return {"tasks": len(keys), "gemini calls": asked, "predictions imported": imported}
