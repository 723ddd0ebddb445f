"""results.json (with results.csv and results.md beside it): what `tiermap eval` writes, of one of six kinds (a sweep holds one of the others per method and condition)."""
from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tiermap import atomic
from tiermap.formats.base import SchemaError

RESULTS_FILE = "results.json"
RESULTS_CSV = "results.csv"
RESULTS_MD = "results.md"
KINDS = ("segmentation", "retrieval", "omq", "osma", "vqa", "sweep")
REQUIRED = {"segmentation": "frequency", "retrieval": "overall", "omq": "scores", "osma": "conditions", "vqa": "conditions",
            "sweep": "results"}
"""The section each kind of result must carry (a JSON object)."""


def check_out_dir(path: Path | str) -> Path:
    """An output folder that can be written (report files are staged beside it), checked before any work; SchemaError otherwise."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise SchemaError(path, "--out", "a folder (a file is in the way)")
    need = [path] if path.is_dir() else []
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise SchemaError(path, "--out", f"a folder path ({parent} is a file)")
    for folder in [*need, parent]:
        try:
            shutil.rmtree(tempfile.mkdtemp(prefix=".tiermap-write-check.", dir=folder))
        except OSError as err:
            raise SchemaError(path, "--out", f"a writable folder ({folder}: {err.strerror or err})") from None
    return path


def result_kind(result: Any, src: Path | str) -> str:
    """The result's kind, after checking it is a result dict carrying its kind's required section."""
    if not isinstance(result, dict) or "kind" not in result:
        got = None if isinstance(result, dict) else type(result).__name__
        raise SchemaError(src, "kind", f"an object with 'kind' (one of {', '.join(KINDS)})", got)
    kind = result["kind"]
    if kind not in KINDS:
        raise SchemaError(src, "kind", f"one of {', '.join(KINDS)}", kind)
    if not isinstance(result.get(REQUIRED[kind]), dict):
        raise SchemaError(src, REQUIRED[kind], "an object", type(result.get(REQUIRED[kind])).__name__)
    return kind


def _jsonable(x: Any) -> Any:
    """JSON-ready copy: non-finite floats become None, numpy scalars and arrays become Python values."""
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Path):
        return str(x)
    return x


def read_results(path: Path | str) -> dict[str, Any]:
    """A results.json, checked to be an object with a known kind and that kind's section."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SchemaError(path, "kind", "a JSON object with 'kind'", f"invalid JSON ({err.__class__.__name__})") from None
    result_kind(data, path)
    return data


def write_results(path: Path | str, result: Mapping[str, Any]) -> Path:
    """Write a result as results.json (non-finite numbers as null), after checking its kind."""
    result_kind(result, path)
    return atomic.write_text(path, json.dumps(_jsonable(result), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
