"""Label Studio JSON export → the tidy labels table (scene, object_id, annotator, category, label, raw_label).

Rules:
- The export is validated through `tiermap.formats.labelstudio.parse_ls_export` (models LSTask / LSAnnotation / LSResult):
  malformed structure is a SchemaError naming the source, the JSON path and the expectation.
- Cancelled annotations (`was_cancelled`) are skipped, and so are results of other fields than the three TextAreas
  (`synonyms`, `depictions`, `visually_similar` → category `vis_sim`).
- `annotator` is the email of a snapshot export's `completed_by` object, else `user<id>`.
- Each text is split on commas (the instructions), semicolons and new lines; empty pieces are separators, not
  labels. `raw_label` is the stripped piece as typed, `label` its normalised form (annotation.normalise).
- A piece is not kept but returned in `flagged` with a `reason` when it contains HTML markup (tags or entities),
  emoji or other non-text characters (control/format/private-use characters, pictographs; © ® ™ ° allowed),
  is longer than 64 characters once normalised, is empty after normalisation (e.g. "_"), has no letter or digit
  (e.g. "?"), or is a placeholder instead of a label ("none", "n/a", "unknown", ...).
- A label repeated by the same annotator for the same object and category is kept once (the first spelling).
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd

from annotation.normalise import SEPARATORS, normalise_series
from tiermap.formats.labels import (
    FLAGGED_COLUMNS,
    LABEL_COLUMNS,
    PROVENANCE_COLUMNS,
    validate_labels_frame,
)
from tiermap.formats.labelstudio import parse_ls_export

MAX_LABEL_CHARS = 64
PLACEHOLDERS = frozenset({"none", "n/a", "na", "nothing", "unknown", "idk", "null", "nil", "not sure", "unsure", "blank"})
"""Normalised answers that mean "no label" rather than naming something."""
_ENTITY = re.compile(r"(&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+));")
_HTML = re.compile(r"<\s*/?\s*[a-zA-Z!][^>]*>|&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_ALLOWED_SYMBOLS = frozenset("©®™°")


def _non_text(s: str) -> bool:
    """Emoji, pictographs, variation selectors, control/format/private-use/unassigned characters."""
    for ch in s:
        if ord(ch) < 128 or ch in _ALLOWED_SYMBOLS:
            continue
        cat = unicodedata.category(ch)
        if cat[0] == "C" or cat in ("So", "Sk") or 0xFE00 <= ord(ch) <= 0xFE0F or ord(ch) >= 0x1F000:
            return True
    return False


def flag_reasons(raw: pd.Series, label: pd.Series) -> pd.Series:
    """Why each label is not accepted (None = accepted); `raw` as typed (stripped), `label` normalised."""
    reason = pd.Series(np.full(len(raw), None, dtype=object), index=raw.index)

    def put(mask: pd.Series, why: str) -> None:
        reason[mask & reason.isna()] = why

    put(raw.str.contains(_HTML), "html markup")
    non_ascii = raw.str.contains(_NON_ASCII)
    odd = raw.str.contains(_ASCII_CONTROL)
    if non_ascii.any():
        odd = odd | (non_ascii & raw.where(non_ascii, "").map(_non_text))
    put(odd, "emoji or non-text characters")
    put(label.str.len() > MAX_LABEL_CHARS, f"longer than {MAX_LABEL_CHARS} characters")
    put(label == "", "empty after normalisation")
    put(~label.str.contains(r"[^\W_]", regex=True), "no letters or digits")
    put(label.isin(PLACEHOLDERS), "placeholder, not a label")
    return reason


def tidy_export(tasks: list, source: Path | str = "<export>") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(labels, flagged): the tidy table (LABEL_COLUMNS) and the rejected pieces with a `reason` column."""
    parsed = parse_ls_export(tasks, source)
    scenes: list[str] = []
    objects: list[int] = []
    annotators: list[str] = []
    cats: list[str] = []
    texts: list[str] = []
    prov: list[tuple[int, str, str]] = []
    for t in parsed:
        for a in t.annotations:
            if a.was_cancelled:
                continue
            who = a.annotator
            stamp = (a.id or 0, str(getattr(a, "created_at", None) or ""), str(getattr(a, "updated_at", None) or ""))
            for r in a.result:
                cat = r.category
                if cat is None or not r.value.text:
                    continue
                for text in r.value.text:
                    scenes.append(t.data.scene)
                    objects.append(t.data.object_id)
                    annotators.append(who)
                    cats.append(cat)
                    texts.append(text)
                    prov.append(stamp)
    df = pd.DataFrame({"scene": pd.Series(scenes, dtype=object), "object_id": pd.Series(objects, dtype="int64"),
                       "annotator": pd.Series(annotators, dtype=object), "category": pd.Series(cats, dtype=object),
                       "raw_label": pd.Series(texts, dtype=object),
                       "annotation_id": pd.Series([p[0] for p in prov], dtype="int64"),
                       "created_at": pd.Series([p[1] for p in prov], dtype=object),
                       "updated_at": pd.Series([p[2] for p in prov], dtype=object)})
    # an HTML entity's ';' (&amp;) is not a separator: protect it while splitting, so the piece is flagged whole
    protected = df["raw_label"].str.replace(_ENTITY, "\\1\x00", regex=True)
    df["raw_label"] = protected.str.split(SEPARATORS, regex=True)
    df = df.explode("raw_label", ignore_index=True)
    df["raw_label"] = df["raw_label"].astype(object).fillna("").str.replace("\x00", ";", regex=False).str.strip()
    df = df[df["raw_label"] != ""].reset_index(drop=True)
    df["label"] = normalise_series(df["raw_label"]).astype(object) if len(df) else pd.Series(dtype=object)
    df["scene"] = df["scene"].astype(object)
    reason = flag_reasons(df["raw_label"], df["label"]) if len(df) else pd.Series(dtype=object)
    bad = reason.notna().to_numpy()
    cols = [*LABEL_COLUMNS, *PROVENANCE_COLUMNS]
    flagged = df.loc[bad, list(LABEL_COLUMNS)].assign(reason=reason[bad].astype(object)).reset_index(drop=True)
    labels = df.loc[~bad, cols].drop_duplicates(["scene", "object_id", "annotator", "category", "label"])
    return validate_labels_frame(labels, source), flagged[FLAGGED_COLUMNS]
