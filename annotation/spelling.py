"""Spelling correction of annotators' labels against the dataset's vocabulary (OpenLex3D §3.1.2).

The paper's curators "corrected spelling errors" but kept "variations such as plurals and differences in spacing
(e.g. 'shelves' and 'shelf' or 'counter top' and 'countertop')". The rule implemented here, on normalised labels:

- Weight: `counts[label]` = how many uses the label has in the dataset (in `aggregate_dataset_with_report`: the number of
  distinct (scene, object, annotator) that typed it; by default here: its number of rows in `labels`).
- Known words: the `vocabulary` argument (e.g. every object lexicon of the scenes, or a previous release's
  prompt list). A label is **trusted** when it is a known word or has been used at least twice.
- A label L that is not a known word is replaced by the closest (see ties) label T ≠ L within the edit limit when
  - L is rare (used at most once) and T is trusted, or
  - T is a known word used more often than L (L is "not in the vocabulary": the same typo made several times).
  The distance is Damerau–Levenshtein (optimal string alignment: insert, delete, substitute, swap two adjacent
  characters); the limit is 1 for labels L of 4–8 characters and 2 for 9 characters or more. Labels of 3
  characters or fewer are never corrected and never targets.
- Never a correction (both labels are kept as distinct labels):
  - plural/singular variants: one is a plural form of the other (+s when the singular does not end in s;
    +es after s, x, z, ch, sh, o; consonant+y ↔ ies; f/fe ↔ ves), for the whole label or for one word of a
    multi-word label with the other words equal ("cup holder" / "cups holder");
  - spacing variants: equal once spaces and hyphens are removed ("counter top" / "countertop"), also combined with
    a plural ("counter tops" / "countertop").
- Ties between targets: smaller distance, then known words, then more uses, then alphabetical order.
A target that is itself corrected (an unknown label used twice, going to a known word) is followed to its own
correction, so every label maps straight to its final form.

Distances and the candidate search are rapidfuzz's (`rapidfuzz.distance.OSA`, `rapidfuzz.process.extract` with the
edit limit as score cutoff, so every trusted label within the limit is a candidate).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from rapidfuzz import process
from rapidfuzz.distance import OSA

MIN_LENGTH = 4
"""Labels shorter than this are never corrected (and never used as a correction)."""


def max_distance(label: str) -> int:
    """Largest Damerau–Levenshtein distance at which `label` may be corrected: 0 (≤ 3 chars), 1 (4–8), 2 (≥ 9)."""
    n = len(label)
    return 0 if n < MIN_LENGTH else 1 if n <= 8 else 2


def _plural_forms(word: str) -> set[str]:
    forms = set()
    if not word.endswith("s"):
        forms.add(word + "s")
    if word.endswith(("s", "x", "z", "ch", "sh", "o")):
        forms.add(word + "es")
    if len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        forms.add(word[:-1] + "ies")
    if word.endswith("f"):
        forms.add(word[:-1] + "ves")
    if word.endswith("fe"):
        forms.add(word[:-2] + "ves")
    return forms


def _plural_pair(a: str, b: str) -> bool:
    return b in _plural_forms(a) or a in _plural_forms(b)


def _squash(label: str) -> str:
    return label.replace(" ", "").replace("-", "")


def is_variant(a: str, b: str) -> bool:
    """True when `a` and `b` are plural/singular or spacing variants of each other (kept distinct, never corrected)."""
    sa, sb = _squash(a), _squash(b)
    if sa == sb or _plural_pair(sa, sb) or _plural_pair(a, b):
        return True
    wa, wb = a.split(" "), b.split(" ")
    if len(wa) == len(wb) > 1:
        diff = [(x, y) for x, y in zip(wa, wb) if x != y]
        return len(diff) == 1 and _plural_pair(*diff[0])
    return False


def spelling_corrections(labels: Iterable[str], vocabulary: Iterable[str] = (),
                         counts: Mapping[str, int] | None = None) -> dict[str, str]:
    """{label: corrected label} for the distinct `labels` that the module rule corrects.

    `counts` gives each label's number of uses (default: occurrences in `labels`); `vocabulary` holds known words.
    """
    labels = list(labels)
    use = Counter(labels) if counts is None else Counter(dict(counts))
    known = {w for w in vocabulary if isinstance(w, str)}
    distinct = set(use) | set(labels)
    trusted = {w for w in distinct | known if (w in known or use.get(w, 0) >= 2) and len(w) >= MIN_LENGTH}
    # candidates: unknown labels; those used more than once may only go to a known word used more often
    cands_all = sorted(w for w in set(labels) if w not in known and max_distance(w) > 0 and (known or use.get(w, 0) <= 1))
    if not cands_all or not trusted:
        return {}
    targets = sorted(trusted)
    out: dict[str, str] = {}
    for w in cands_all:
        rare = use.get(w, 0) <= 1
        near = process.extract(w, targets, scorer=OSA.distance, score_cutoff=max_distance(w), limit=None)
        keys = [(dist, 0 if t in known else 1, -use.get(t, 0), t) for t, dist, _ in near
                if t != w and (rare or (t in known and use.get(t, 0) > use.get(w, 0))) and not is_variant(w, t)]
        if keys:
            out[w] = min(keys)[3]
    # a target used twice may itself go to a known word (second case): point straight at that word
    return {w: out.get(t, t) for w, t in out.items()}

