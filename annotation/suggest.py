"""LVLM pre-annotation: Gemini proposes the three label lists per crop; they become Label Studio predictions."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from annotation.ls_client import LabelStudio
from annotation.push import crop_records
from annotation.project import FIELDS, INSTRUCTIONS, find_project, textarea_result
from tiermap import atomic, schema

PROMPT = ("You label objects for a 3D scene-understanding benchmark. The image shows one object with its background "
          "removed. Follow these instructions and answer with three lists of short lowercase labels.\n" + INSTRUCTIONS)


class ObjectWords(BaseModel):
    """Gemini's structured answer."""

    synonyms: list[str]
    depictions: list[str]
    visually_similar: list[str]


def cache_path(ds: schema.DatasetPaths, model: str) -> Any:
    """labels/suggestions/<model>.json: answers by crop hash and which task got which prediction."""
    return ds.labels / "suggestions" / f"{model.replace('/', '_')}.json"


def suggest(ds: schema.DatasetPaths, scenes: list[str], ls: LabelStudio, model: str = "gemini-2.5-flash",
            log: Callable[[str], None] = print) -> dict[str, int]:
    """Ask Gemini once per crop (cached by crop hash) and import its answers as predictions (once per task)."""
    from tiermap.gemini import ask_image, gemini_client

    proj = find_project(ls, ds)
    if proj is None:
        raise schema.SchemaError(ls.url, "project", f"a Label Studio project for dataset {ds.name!r} (run `tiermap annotate push` first)")
    path = cache_path(ds, model)
    cache = schema.read_json(path) if path.is_file() else {"answers": {}, "imported": {}}
    records = crop_records(ds, scenes)
    tasks = [(t["id"], t["data"]) for t in ls.export(proj["id"]) if (t.get("data") or {}).get("key") in records]
    client = None
    asked = 0
    for tid, d in tasks:
        h = d["crop_hash"]
        if h in cache["answers"]:
            continue
        crop = ds.dir / "crops" / d["scene"] / records[d["key"]].crop
        if not crop.is_file():
            raise schema.SchemaError(crop, "<file>", f"the crop of task {tid} (re-run `tiermap annotate crops`)")
        client = client or gemini_client("tiermap annotate suggest --gemini")
        ans = ask_image(client, model, crop.read_bytes(), PROMPT, ObjectWords)
        cache["answers"][h] = ans.model_dump()
        atomic.write_text(path, json.dumps(cache, indent=1, sort_keys=True))
        asked += 1
        log(f"  gemini {asked}: {d['key']} -> {', '.join(ans.synonyms[:3])}")
    new = [(tid, d) for tid, d in tasks if cache["imported"].get(str(tid)) != d["crop_hash"]]
    if new:
        ls.import_predictions(proj["id"], [{
            "task": tid, "model_version": model, "score": 0.5,
            "result": textarea_result({k: ", ".join(cache["answers"][d["crop_hash"]][k]) for k in FIELDS})} for tid, d in new])
        ls.update_project(proj["id"], model_version=model)
        cache["imported"].update({str(tid): d["crop_hash"] for tid, d in new})
        atomic.write_text(path, json.dumps(cache, indent=1, sort_keys=True))
    return {"tasks": len(tasks), "gemini calls": asked, "predictions imported": len(new)}
