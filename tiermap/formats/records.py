"""Pipeline records: validation.json, release.json, a baseline's method.json and captions, the Gemini suggestions cache."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, ValidationError, field_validator

from tiermap import atomic
from tiermap.formats.base import (
    Model,
    SchemaError,
    _pydantic_error,
    dump_json,
    read_json,
    read_model,
    write_model,
)

VALIDATION_FILE = "validation.json"
RELEASE_FILE = "release.json"
RELEASE_NOTES = "RELEASE.md"
METHOD_FILE = "method.json"
CAPTIONS_FILE = "captions.json"


# ---------------------------------------------------------------- validation.json
class CheckResult(Model):
    """One named check and what failed; `success` is None when it was not checked."""

    name: str
    success: bool | None = True
    failures: list[str] = []
    description: str = ""
    table: str = ""
    expectation: str = ""
    unexpected_count: int = 0
    skipped: str | None = None


class ValidationReport(Model):
    """validation.json: the label checks' verdicts, the md5 of every GT file checked, where the Data Docs are."""

    dataset: str | None = None
    file: str | None = None
    success: bool
    checks: list[CheckResult]
    checksums: dict[str, str] = {}
    data_docs: str | None = None

    def failed(self) -> list[CheckResult]:
        """Checks that ran and failed."""
        return [c for c in self.checks if c.success is False]


def read_validation_report(path: Path | str) -> ValidationReport:
    """validation.json."""
    return read_model(ValidationReport, path)


def write_validation_report(report: ValidationReport, path: Path | str) -> Path:
    """Write validation.json (every field, so `null` verdicts stay visible)."""
    return atomic.write_text(path, dump_json(report.model_dump(mode="json", exclude={"file"} if report.file is None else None)))


# ---------------------------------------------------------------- release.json
Labels = dict[str, list[str]]
"""Category → labels of one object."""


class LabelChange(Model):
    """Labels of one category of one object added and removed since the previous release."""

    object: str
    category: str
    added: list[str]
    removed: list[str]


class AnnotatorChange(Model):
    """The 'category: label' pairs one annotator added and removed on one object."""

    annotator: str
    object: str
    added: list[str]
    removed: list[str]


class ReleaseDiff(Model):
    """What changed since the previous release."""

    objects_added: list[str] = []
    objects_removed: list[str] = []
    label_changes: list[LabelChange] = []
    annotator_changes: list[AnnotatorChange] = []


class ReleaseManifest(Model):
    """release.json: labels per scene/object/category, conditions, each annotator's labels, GT checksums, the diff."""

    dataset: str
    version: str
    date: str
    scenes: dict[str, dict[str, Labels]]
    conditions: list[str]
    annotators: dict[str, dict[str, list[str]]] = {}
    checksums: dict[str, str]
    diff: ReleaseDiff | None = None


def parse_release_manifest(text: str, source: str) -> ReleaseManifest:
    """release.json text (e.g. from `git show TAG:path`) → ReleaseManifest."""
    import json

    try:
        return ReleaseManifest.model_validate(json.loads(text))
    except json.JSONDecodeError as err:
        raise SchemaError(source, "<file>", f"valid JSON ({err})") from None
    except ValidationError as err:
        raise _pydantic_error(Path(source), err) from None


def write_release_manifest(m: ReleaseManifest, path: Path | str) -> Path:
    """Write release.json."""
    return write_model(m, path)


# ---------------------------------------------------------------- a baseline's method.json and captions
class MethodInfo(Model):
    """method.json beside a method's predictions: what produced them (reports print the note; other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    method: str = ""
    captions: str = ""
    encoder: str = ""
    note: str = ""


def read_method(path: Path | str) -> MethodInfo:
    """method.json."""
    return read_model(MethodInfo, path)


def write_method(info: MethodInfo, path: Path | str) -> Path:
    """Write method.json."""
    return write_model(info, path)


def read_captions(path: Path | str) -> dict[int, str]:
    """captions.json (or a captions cache): {"<object id>": "caption"} → {object id: caption}."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise SchemaError(path, "<root>", 'a JSON object {"<object id>": "caption"}', type(data).__name__)
    out: dict[int, str] = {}
    for k, v in data.items():
        if not k.lstrip("-").isdigit():
            raise SchemaError(path, k, "object ids written as strings of integers", k)
        if not isinstance(v, str):
            raise SchemaError(path, k, "a caption string", v)
        out[int(k)] = v
    return out


def write_captions(path: Path | str, captions: dict[int, str]) -> Path:
    """Write {object id: caption} sorted by id."""
    return atomic.write_text(path, dump_json({str(k): v for k, v in sorted(captions.items())}))


# ---------------------------------------------------------------- the Gemini suggestions cache (annotation.suggest)
class SuggestedWords(Model):
    """A cached Gemini answer for one crop: labels per OpenLex3D category."""

    synonyms: list[str]
    depictions: list[str]
    visually_similar: list[str]


class SuggestionCache(Model):
    """labels/suggestions/<model>.json: answers by crop hash; per seat, the crop hash imported on each task id."""

    answers: dict[str, SuggestedWords] = {}
    imported: dict[str, dict[str, str]] = {}

    @field_validator("imported")
    @classmethod
    def _task_ids(cls, v: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for seat in v.values():
            bad = [k for k in seat if not k.isdigit()]
            if bad:
                raise ValueError(f"task ids written as strings of integers (bad: {bad[:3]})")
        return v


def read_suggestion_cache(path: Path | str) -> SuggestionCache:
    """A suggestions cache; a missing file is an empty cache."""
    return read_model(SuggestionCache, path) if Path(path).is_file() else SuggestionCache()


def write_suggestion_cache(cache: SuggestionCache, path: Path | str) -> Path:
    """Write the suggestions cache (after every answer, so nothing paid for is lost)."""
    return write_model(cache, path)


def as_dict(model: Model) -> dict[str, Any]:
    """A record as plain JSON data (for reports that embed it)."""
    return model.model_dump(mode="json")
