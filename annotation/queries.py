"""Query mappings l0 / l1 / all and the prompt list, in the official OpenLex3D form."""
from __future__ import annotations

from tiermap.formats.openlex3d import GTCategories, QueryMapping

EXCLUDED_LABELS = ("wall", "floor", "ceiling", "doorframe", "ledge", "windowledge")


def query_mappings(gt: GTCategories) -> dict[str, QueryMapping]:
    """level0 = synonyms; level1 = 'depiction synonym' pairs; excluded labels (space-stripped) dropped."""
    l0: dict[str, list[int]] = {}
    l1: dict[str, list[int]] = {}
    for s in gt.dataset.samples:
        a = s.labels.image_attributes
        for syn in a.synonyms:
            if syn.replace(" ", "") not in EXCLUDED_LABELS:
                l0.setdefault(syn, []).append(s.object_id)
            for dep in a.depictions:
                q = f"{dep} {syn}"
                if q.replace(" ", "") not in EXCLUDED_LABELS:
                    l1.setdefault(q, []).append(s.object_id)
    l0 = {k: sorted(set(v)) for k, v in sorted(l0.items())}
    l1 = {k: sorted(set(v)) for k, v in sorted(l1.items())}
    return {"l0": QueryMapping(level0=l0), "l1": QueryMapping(level1=l1),
            "all": QueryMapping(level0=l0, level1=l1)}


def prompt_labels(gts: list[GTCategories]) -> set[str]:
    """Union of synonyms, depictions and vis_sim over scenes."""
    out: set[str] = set()
    for gt in gts:
        for s in gt.dataset.samples:
            a = s.labels.image_attributes
            out.update(a.synonyms, a.depictions, a.vis_sim)
    return out
