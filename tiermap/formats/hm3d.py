"""HM3D-Semantics v0.2 `<id>.semantic.txt`: one row per annotated object, `id,hex colour,"category",region`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError

from tiermap.formats.base import Model, SchemaError

HM3D_HEADER = "HM3D Semantic Annotations"  # habitat-sim refuses a file whose first line lacks it
ROW_FORMAT = 'object_id,hex_colour,"category",region_id'
UNANNOTATED = 0  # black: habitat-sim's built-in object 0 "Unknown" (colour 0x000000, region -1)


class HM3DObject(Model):
    """A row of semantic.txt: the object id, its RGB colour in the semantic mesh, its category and region."""

    id: Annotated[int, Field(ge=1, le=65535)]
    color: Annotated[int, Field(ge=0, le=0xFFFFFF)]
    category: Annotated[str, Field(min_length=1)]
    region: int

    @property
    def hex(self) -> str:
        """The colour as written in the file (six lowercase hex digits)."""
        return f"{self.color:06x}"


def parse_row(line: str) -> tuple[int, int, str, int]:
    """One row split as habitat-sim does: on quotes (the category may hold commas), then id and colour on commas."""
    tokens = [t for t in line.split('"') if t]
    if len(tokens) != 3:
        raise ValueError("three quote-separated parts")
    head = [t.strip() for t in tokens[0].split(",") if t.strip()]
    tail = tokens[2].strip().strip(",").strip()
    if len(head) != 2 or not tokens[0].rstrip().endswith(","):
        raise ValueError("id and colour before the category")
    colour = head[1].removeprefix("#").removeprefix("0x")
    if len(colour) != 6:
        raise ValueError("a six-digit hex colour")
    return int(head[0]), int(colour, 16), tokens[1], int(tail)


def read_semantic_txt(path: Path | str) -> list[HM3DObject]:
    """semantic.txt → its objects; a missing header, a malformed row, a duplicate id or colour is a SchemaError."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing HM3D semantic.txt")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise SchemaError(path, "<file>", "UTF-8 text") from None
    if not lines or HM3D_HEADER not in lines[0]:
        raise SchemaError(path, "line 1", f"the header {HM3D_HEADER!r}", lines[0] if lines else "")
    rows: list[HM3DObject] = []
    ids: dict[int, int] = {}
    colours: dict[int, int] = {}
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            oid, colour, category, region = parse_row(line)
            row = HM3DObject(id=oid, color=colour, category=category, region=region)
        except (ValueError, ValidationError):
            raise SchemaError(path, f"line {n}", f"a row {ROW_FORMAT} with an id in 1..65535", line) from None
        if row.id in ids:
            raise SchemaError(path, f"line {n}", f"a unique object id (also on line {ids[row.id]})", row.id)
        if row.color in colours or row.color == 0:
            what = "black (000000) marks unannotated surfaces" if row.color == 0 else f"also on line {colours[row.color]}"
            raise SchemaError(path, f"line {n}", f"a unique, non-black colour ({what})", row.hex)
        ids[row.id], colours[row.color] = n, n
        rows.append(row)
    if not rows:
        raise SchemaError(path, "line 2", f"at least one row {ROW_FORMAT}")
    return rows
