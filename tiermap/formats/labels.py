"""The tidy labels table (labels/labels.parquet): one row per label an annotator gave."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tiermap import atomic
from tiermap.formats.base import SchemaError
from tiermap.formats.openlex3d import CATEGORIES

LABELS_FILE = "labels.parquet"
FLAGGED_FILE = "flagged.csv"
"""labels/flagged.csv: label pieces the pull rejected (markup, unknown task), with the reason."""
SPELLING_FILE = "spelling_corrections.csv"
"""aggregated/spelling_corrections.csv: every label the aggregation corrected, what to, and how often it was used."""

LABEL_COLUMNS = {"scene": "str", "object_id": "int", "annotator": "str", "category": "str", "label": "str", "raw_label": "str"}
FLAGGED_COLUMNS = [*LABEL_COLUMNS, "reason"]
SPELLING_COLUMNS = ["label", "corrected", "uses", "rows"]
PROVENANCE_COLUMNS = {"annotation_id": "int", "created_at": "str", "updated_at": "str"}
"""Which Label Studio annotation a label comes from and its timestamps (0 and "" for labels from no annotation)."""


def validate_labels_frame(df: Any, path: Path | str = "<labels>") -> Any:
    """Check the tidy labels table's columns and types; return it with canonical dtypes (provenance filled if absent)."""
    import pandas as pd

    missing = [c for c in LABEL_COLUMNS if c not in df.columns]
    if missing:
        raise SchemaError(path, missing[0], f"columns {list(LABEL_COLUMNS)}")
    df = df.copy()
    for col, kind in PROVENANCE_COLUMNS.items():
        if col not in df.columns:
            df[col] = pd.Series([0 if kind == "int" else ""] * len(df), index=df.index, dtype="int64" if kind == "int" else object)
    df = df[[*LABEL_COLUMNS, *PROVENANCE_COLUMNS]].copy()
    if len(df) and not pd.api.types.is_integer_dtype(df["annotation_id"]):
        raise SchemaError(path, "annotation_id", "integer annotation ids", str(df["annotation_id"].dtype))
    df["annotation_id"] = df["annotation_id"].astype("int64")
    if len(df) and not pd.api.types.is_integer_dtype(df["object_id"]):
        raise SchemaError(path, "object_id", "integer object ids", str(df["object_id"].dtype))
    for col, kind in {**LABEL_COLUMNS, **PROVENANCE_COLUMNS}.items():
        if kind == "str":
            bad = df[col].map(lambda v: not isinstance(v, str))
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise SchemaError(path, f"{col}[{row}]", "text", df[col].iloc[row])
            df[col] = df[col].astype(object)
    bad = ~df["category"].isin(CATEGORIES)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise SchemaError(path, f"category[{row}]", f"one of {list(CATEGORIES)}", df["category"].iloc[row])
    df["object_id"] = df["object_id"].astype("int64")
    return df.reset_index(drop=True)


def read_labels(path: Path | str) -> Any:
    """labels.parquet → validated pandas DataFrame."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    try:
        df = pd.read_parquet(path)
    except Exception as err:  # pyarrow raises several types for corrupt files
        raise SchemaError(path, "<file>", f"a parquet table ({type(err).__name__})") from None
    return validate_labels_frame(df, path)


def write_labels(path: Path | str, df: Any) -> Path:
    """Validate and write labels.parquet atomically."""
    import io

    df = validate_labels_frame(df, path)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return atomic.write_bytes(path, buf.getvalue())


def write_table_csv(path: Path | str, df: Any, columns: list[str]) -> Path:
    """Write a report table as CSV atomically, after checking it has exactly `columns` (in that order)."""
    if list(df.columns) != list(columns):
        raise SchemaError(path, "<columns>", f"columns {columns}", list(df.columns))
    return atomic.write_text(path, df.to_csv(index=False))
