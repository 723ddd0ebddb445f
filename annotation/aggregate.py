"""Aggregate annotators' labels into gt_categories.json (OpenLex3D §3.1.2).

Rules, in order (per dataset with `aggregate_dataset_with_report`):
1. Normalise every label (annotation.normalise: NFKC, lowercase, trim, collapse spaces, `_` → space); drop empty.
2. Correct spelling against the dataset's vocabulary (annotation.spelling; dataset level only, because the
   weights are uses over the whole dataset: the number of distinct (scene, object, annotator) per label, plus the
   known words passed as `vocabulary`).
3. Union over annotators: an object's label set is every label any annotator gave it.
4. Least specific category wins: a label given for the same object in several categories (by one or several
   annotators) is kept only in the least specific one, synonyms < depictions < vis_sim.
5. Variants are kept: plurals and spacing variants ("shelf" / "shelves", "counter top" / "countertop") stay
   distinct labels (the spelling step never merges them).
6. Ambiguity (paper: "significant disagreement in the synonyms category"): let N be the number of annotators who
   gave the object any label (any category). Two synonyms agree when they are equal up to spaces, hyphens and a
   plural ending (their `synonym_keys` intersect). The object is flagged `ambiguous` iff
   a. N >= 2 and no synonym key was typed in the synonyms field by more than half of the N annotators (so 2 of 2,
      2 of 3, or 3 of 4 must share a synonym); what was typed counts (after spelling correction, before rule 4
      moves labels); or
   b. it has no synonym left after rule 4 (nobody gave one, or every synonym was also given in a less specific
      category), so that every object without synonyms is flagged (this holds for a single annotator too).
Samples are sorted by object id; each category's labels are sorted.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from annotation.normalise import normalise_series
from annotation.spelling import spelling_corrections
from tiermap.formats.openlex3d import (
    GTCategories,
    GTSamples,
    ImageAttributes,
    Sample,
    SampleLabels,
)

# Specificity order: a label given in several categories keeps the least specific one (the last here).
SPECIFICITY = {"synonyms": 0, "depictions": 1, "vis_sim": 2}


def synonym_keys(label: str) -> list[str]:
    """Agreement keys of a synonym: spaces and hyphens removed, plus the singulars its ending may come from.

    Two synonyms agree when their keys intersect: "book shelves" / "bookshelf", "houses" / "house", "glasses" /
    "glass", "berries" / "berry", "knives" / "knife".
    """
    key = label.replace(" ", "").replace("-", "")
    keys = [key]
    if key.endswith("s") and not key.endswith("ss"):
        keys.append(key[:-1])
    if key.endswith("es"):
        keys.append(key[:-2])
    if key.endswith("ies"):
        keys.append(key[:-3] + "y")
    if key.endswith("ves"):
        keys += [key[:-3] + "f", key[:-3] + "fe"]
    return keys


def _normalised(labels: pd.DataFrame) -> pd.DataFrame:
    df = labels.copy()
    df["label"] = normalise_series(df["label"]).astype(object) if len(df) else df["label"]
    return df[df["label"] != ""]


def _apply(labels: pd.Series, fixes: Mapping[str, str]) -> pd.Series:
    return labels.map(dict(fixes)).fillna(labels).astype(object)


def label_uses(labels: pd.DataFrame) -> pd.Series:
    """Uses per label: the number of distinct (scene, object_id, annotator) that gave it (any category)."""
    return labels.drop_duplicates(["scene", "object_id", "annotator", "label"]).groupby("label").size()


def correct_dataset_labels(labels: pd.DataFrame, vocabulary: Iterable[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(labels normalised and spell-corrected, corrections report with columns label, corrected, uses, rows)."""
    df = _normalised(labels)
    known = {w for w in normalise_series(pd.Series(list(vocabulary), dtype=object)) if w} if vocabulary else set()
    uses = label_uses(df)
    fixes = spelling_corrections(uses.index.tolist(), known, uses.to_dict())
    rows = df["label"].isin(list(fixes)).groupby(df["label"]).sum() if fixes else pd.Series(dtype=int)
    report = pd.DataFrame({"label": list(fixes), "corrected": list(fixes.values()),
                           "uses": [int(uses[w]) for w in fixes], "rows": [int(rows.get(w, 0)) for w in fixes]})
    if fixes:
        df = df.assign(label=_apply(df["label"], fixes))
    return df, report.sort_values("label", ignore_index=True)


def _samples(df: pd.DataFrame, scene: str, object_names: Mapping[int, str]) -> GTCategories:
    """Rules 3, 4 and 6 on already normalised (and corrected) labels of one scene."""
    df = df.assign(rank=df["category"].map(SPECIFICITY))
    samples = []
    if len(df):
        best = df.groupby(["object_id", "label"], sort=True)["rank"].max().reset_index()
        n_ann = df.groupby("object_id")["annotator"].nunique()
        syn = df[df["category"] == "synonyms"]
        keys = pd.Series({w: synonym_keys(w) for w in syn["label"].unique()}, dtype=object)
        syn = syn.assign(key=syn["label"].map(keys)).explode("key")
        agree = syn.groupby(["object_id", "key"])["annotator"].nunique().groupby(level=0).max()
        by_rank = {r: c for c, r in SPECIFICITY.items()}
        per_object: dict[int, dict[str, list[str]]] = {}
        for oid, lbl, r in zip(best["object_id"].tolist(), best["label"].tolist(), best["rank"].tolist()):
            per_object.setdefault(int(oid), {c: [] for c in SPECIFICITY})[by_rank[int(r)]].append(str(lbl))
        n_ann_d, agree_d = n_ann.to_dict(), agree.to_dict()
        for oid in sorted(n_ann_d):
            cats = per_object[int(oid)]
            n = int(n_ann_d[oid])
            ambiguous = (n >= 2 and not int(agree_d.get(oid, 0)) > n / 2) or not cats["synonyms"]
            samples.append(Sample(
                name=f"{scene}_{object_names.get(int(oid), 'object')}_{int(oid)}".replace(" ", "_"), object_id=int(oid),
                labels=SampleLabels(image_attributes=ImageAttributes(**{c: sorted(v) for c, v in cats.items()}),
                                           flag="ambiguous" if ambiguous else None)))
    return GTCategories(dataset=GTSamples(samples=samples))


def aggregate_dataset_with_report(labels: pd.DataFrame, scenes: Mapping[str, Mapping[int, str]],
                                  vocabulary: Iterable[str] = ()) -> tuple[dict[str, GTCategories], pd.DataFrame]:
    """(gt_categories per scene, spelling corrections report with columns label, corrected, uses, rows).

    Normalise, correct spelling, then union / least specific / ambiguous. `scenes` maps scene → {object_id: class
    name} (used in sample names; every scene listed gets an entry, even without labels); `vocabulary` holds known
    words (e.g. every object lexicon) for the spelling step.
    """
    df, report = correct_dataset_labels(labels, vocabulary)
    out = {}
    groups = dict(iter(df.groupby("scene", sort=False))) if len(df) else {}
    for scene in sorted(set(scenes) | set(groups)):
        sub = groups.get(scene, df.iloc[:0])
        out[scene] = _samples(sub, scene, scenes.get(scene, {}))
    return out, report


def agreed_synonyms(labels: pd.DataFrame) -> dict[str, dict[int, list[str]]]:
    """Per scene and object: the synonyms typed by more than half of the object's annotators (the questions' wordings)."""
    df = _normalised(labels)
    out: dict[str, dict[int, list[str]]] = {}
    if not len(df):
        return out
    n = df.groupby(["scene", "object_id"])["annotator"].nunique()
    syn = df[df["category"] == "synonyms"].groupby(["scene", "object_id", "label"])["annotator"].nunique()
    for (scene, oid, label), k in syn.items():
        if k > n[(scene, oid)] / 2:
            out.setdefault(str(scene), {}).setdefault(int(oid), []).append(str(label))
    return out
