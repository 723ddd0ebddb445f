"""Label normalisation (OpenLex3D §3.1.2): lowercase, trim, collapse spaces, underscores to spaces."""
from __future__ import annotations

import re

_SPACES = re.compile(r"\s+")


def normalise_label(raw: str) -> str:
    """Canonical form of one label."""
    return _SPACES.sub(" ", raw.replace("_", " ").strip().lower()).strip()


def split_labels(field: str) -> list[str]:
    """Comma-separated annotator input → non-empty raw labels."""
    return [p for p in (s.strip() for s in field.split(",")) if p]
