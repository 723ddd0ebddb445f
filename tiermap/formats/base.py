"""Shared pieces of every format: the input error types, the strict model base, JSON and .npy reading."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tiermap import atomic


class InputError(ValueError):
    """Input the user can fix (a file, an option, a name, the environment): the CLIs show it as one line, no traceback."""


class SchemaError(InputError):
    """A file does not match the data contract."""

    def __init__(self, path: Path | str, field: str, expected: str, got: Any = None) -> None:
        self.path, self.field, self.expected = str(path), field, expected
        msg = f"{path}: field '{field}': expected {expected}"
        if got is not None:
            shown = repr(got.item() if isinstance(got, np.generic) else got)
            msg += f", got {shown[:80] + '...' if len(shown) > 80 else shown}"
        super().__init__(msg)


Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = Annotated[list[Finite], Field(min_length=3, max_length=3)]
PosInt = Annotated[int, Field(gt=0)]


class Model(BaseModel):
    """Base: unknown fields are errors (they are usually typos)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


M = TypeVar("M", bound=BaseModel)


def _pydantic_error(path: Path, err: ValidationError) -> SchemaError:
    e = err.errors()[0]
    field = ".".join(str(p) for p in e["loc"]) or "<root>"
    msg = e["msg"].removeprefix("Value error, ")
    got = e.get("input") if e["type"] != "missing" else None
    if e["type"] == "missing":
        msg = "a value (field is missing)"
    elif e["type"] == "extra_forbidden":
        msg, got = "no such field (a typo?)", None
    return SchemaError(path, field, msg, got if isinstance(got, str | int | float) else None)


def read_json(path: Path | str) -> Any:
    """Parse a JSON file; a missing or malformed file is a SchemaError."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SchemaError(path, "<file>", f"valid JSON ({err})") from None


def read_npy(path: Path | str, field: str) -> np.ndarray:
    """One array from a .npy file; another container (an .npz archive, a pickle, text) is a SchemaError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing .npy file")
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise SchemaError(path, field, "a numpy .npy array (no pickled objects)", f"{type(err).__name__}: {str(err).split('. ')[0]}") from None
    if not isinstance(arr, np.ndarray):
        names = sorted(arr.files)
        arr.close()
        raise SchemaError(path, field, "a numpy .npy array (one array, not an .npz archive)", f"an .npz archive of {names}")
    return arr


def read_model(cls: type[M], path: Path | str) -> M:
    """Read and validate a JSON file into `cls`."""
    path = Path(path)
    data = read_json(path)
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise _pydantic_error(path, err) from None


def dump_json(data: Any) -> str:
    """Canonical JSON text (stable key order and indentation, so equal data gives equal bytes)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_model(model: BaseModel, path: Path | str) -> Path:
    """Write a model as canonical JSON atomically."""
    return atomic.write_text(path, dump_json(model.model_dump(mode="json", by_alias=True, exclude_none=True)))


NonNegInt = Annotated[int, Field(ge=0)]
