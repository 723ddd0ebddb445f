"""Aggregate annotators' labels into gt_categories.json (OpenLex3D §3.1.2)."""
from __future__ import annotations

import pandas as pd

from annotation.normalise import normalise_label
from tiermap import schema

# Specificity order: a label given in several categories keeps the least specific one (the last here).
SPECIFICITY = {"synonyms": 0, "depictions": 1, "vis_sim": 2}


def aggregate_scene(labels: pd.DataFrame, scene: str, object_names: dict[int, str]) -> schema.GTCategories:
    """One scene's samples: union over annotators, least-specific category wins, ambiguous flag.

    Ambiguity rule: an object is flagged `ambiguous` when at least two annotators labelled it and no
    synonym was given by more than half of them.
    """
    df = labels[labels["scene"] == scene].copy()
    df["label"] = df["label"].map(normalise_label)
    df = df[df["label"] != ""]
    df["rank"] = df["category"].map(SPECIFICITY)
    samples = []
    for oid, g in df.groupby("object_id", sort=True):
        best = g.groupby("label")["rank"].max()
        cats: dict[str, list[str]] = {c: sorted(best.index[best == r]) for c, r in SPECIFICITY.items()}
        n_ann = g["annotator"].nunique()
        syn = g[g["category"] == "synonyms"].groupby("label")["annotator"].nunique()
        ambiguous = n_ann >= 2 and not (syn > n_ann / 2).any()
        samples.append(schema.Sample(
            name=f"{scene}_{object_names.get(int(oid), 'object')}_{int(oid)}".replace(" ", "_"), object_id=int(oid),
            labels=schema.SampleLabels(image_attributes=schema.ImageAttributes(**cats), flag="ambiguous" if ambiguous else None)))
    return schema.GTCategories(dataset=schema.GTSamples(samples=samples))
