"""Label normalisation (OpenLex3D §3.1.2): lowercase, trim, collapse spaces, underscores to spaces.

`normalise_series` (a pandas Series, vectorised) gives each label's canonical form:
Unicode NFKC (full-width letters, ligatures), `_` → space, lowercase, whitespace runs → one space, and leading or
trailing spaces, quotes and full stops removed ('"Mug."' → 'mug').
"""
from __future__ import annotations

import re

import pandas as pd

_SPACES = re.compile(r"\s+")
SEPARATORS = re.compile(r"[,;\n\r]")
"""What separates labels in one text field: commas (the instructions), and semicolons or new lines (typed anyway)."""
_EDGE = " \"'`.\u2018\u2019\u201c\u201d"


def normalise_series(raw: pd.Series) -> pd.Series:
    """Canonical form of every label of a Series of strings."""
    s = raw.astype(str).str.normalize("NFKC").str.replace("_", " ", regex=False).str.lower()
    return s.str.replace(_SPACES, " ", regex=True).str.strip(_EDGE).str.strip()
