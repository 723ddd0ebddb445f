"""GT labels against the prompt list: per-object category of every prompt, label indices for set ranking."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from evaluation.arrays import lookup
from tiermap.formats.openlex3d import GTCategories

CATEGORIES = ("synonyms", "depictions", "vis_sim", "clutter", "missing", "incorrect")
"""Top-N categories in the official precedence order; a point takes the first one among its N labels."""
SYN, DEP, VIS, CLUTTER, MISSING, INCORRECT = range(6)
NONE = 6
EXCLUDED_LABELS = ("wall", "floor", "ceiling", "doorframe", "ledge", "windowledge")


def strip(label: str) -> str:
    """The official CategoriesHandler removes every space before matching ("polka dots" == "polkadots")."""
    return label.replace(" ", "")


@dataclass
class LabelTable:
    """Labels of one scene's objects, resolved against a prompt list."""

    object_ids: np.ndarray                 # (O,) ids with a JSON entry, sorted
    has_object: np.ndarray                 # (O,) bool: entry with a non-empty synonym list (official has_object)
    excluded: np.ndarray                   # (O,) bool: a synonym is an excluded label (wall, floor, ...)
    category: np.ndarray                   # (O, P) int8 code of every prompt for every object
    tiers: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)  # per object: S, D, V prompt indices
    missing_labels: int = 0                # labels absent from the prompt list (dropped by set ranking, as official)

    def row(self, ids: np.ndarray) -> np.ndarray:
        """Row of each id in the table, -1 for ids without a JSON entry."""
        pos, found = lookup(ids, self.object_ids)
        return np.where(found, pos, -1)


def build_label_table(gt: GTCategories, prompts: list[str], excluded: tuple[str, ...] = EXCLUDED_LABELS) -> LabelTable:
    """Resolve each object's tiers and clutter against the prompts (exact match after removing spaces)."""
    samples = sorted(gt.dataset.samples, key=lambda s: s.object_id)
    ids = np.array([s.object_id for s in samples], dtype=np.int64)
    sp = [strip(p) for p in prompts]
    first: dict[str, int] = {}
    for i, p in enumerate(sp):
        first.setdefault(p, i)
    tiers_text = [[[strip(x) for x in getattr(s.labels.image_attributes, c)] for c in CATEGORIES[:3]] for s in samples]
    by_id = {s.object_id: k for k, s in enumerate(samples)}
    cat = np.full((len(samples), len(prompts)), INCORRECT, dtype=np.int8)
    prompt_arr = np.array(sp, dtype=object)
    tiers: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    missing = 0
    for k, s in enumerate(samples):
        clutter_labels = set()
        for c in s.labels.image_attributes.clutter:
            j = by_id.get(int(c))
            if j is not None:
                clutter_labels.update(*tiers_text[j])
        if clutter_labels:
            cat[k, np.isin(prompt_arr, list(clutter_labels))] = CLUTTER
        for code in (VIS, DEP, SYN):  # most specific last, so it wins (official match order: S, D, VS, clutter)
            labels = tiers_text[k][code]
            if labels:
                cat[k, np.isin(prompt_arr, labels)] = code
        idx = []
        for labels in tiers_text[k]:
            found = [first[x] for x in labels if x in first]
            missing += len(labels) - len(found)
            idx.append(np.array(found, dtype=np.int64))
        tiers.append((idx[0], idx[1], idx[2]))
    has = np.array([bool(t[0]) for t in tiers_text], dtype=bool)
    excl_set = {strip(e) for e in excluded}
    excl = np.array([bool(excl_set & set(t[0])) for t in tiers_text], dtype=bool)
    return LabelTable(ids, has, excl, cat, tiers, missing)
