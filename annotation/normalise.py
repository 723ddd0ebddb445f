"""Label normalisation (OpenLex3D §3.1.2): lowercase, trim, collapse spaces, underscores to spaces.

`normalise_label` (one string) and `normalise_series` (a pandas Series, vectorised) give the same result:
Unicode NFKC (full-width letters, ligatures), `_` → space, lowercase, whitespace runs → one space, and leading or
trailing spaces, quotes and full stops removed ('"Mug."' → 'mug').
"""
from __future__ import annotations

import re
import unicodedata

import pandas as pd

_SPACES = re.compile(r"\s+")
SEPARATORS = re.compile(r"[,;\n\r]")
"""What separates labels in one text field: commas (the instructions), and semicolons or new lines (typed anyway)."""
_EDGE = " \"'`.\u2018\u2019\u201c\u201d"


def normalise_label(raw: str) -> str:
    """Canonical form of one label."""
    text = unicodedata.normalize("NFKC", raw).replace("_", " ").lower()
    return _SPACES.sub(" ", text).strip(_EDGE).strip()


def normalise_series(raw: pd.Series) -> pd.Series:
    """`normalise_label` over a Series of strings, vectorised."""
    s = raw.astype(str).str.normalize("NFKC").str.replace("_", " ", regex=False).str.lower()
    return s.str.replace(_SPACES, " ", regex=True).str.strip(_EDGE).str.strip()


def split_labels(field: str) -> list[str]:
    """Annotator input (comma-, semicolon- or newline-separated) → non-empty raw labels, stripped."""
    return [p for p in (s.strip() for s in SEPARATORS.split(field)) if p]
