"""Gather a sweep's per-leaf parts into one result: per method and condition, scenes combined as the single-run tools do."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluation.tables import OSMA_COLUMNS, number

SEG_HEADLINE = {"synonyms": "S", "depictions": "D", "vis_sim": "VS", "clutter": "C", "missing": "M", "incorrect": "I"}
RETRIEVAL_HEADLINE = {"all_ap": "mAP", "all_ap_50%": "AP50", "all_ap_25%": "AP25", "avg_inverse_rank": "avg. inverse rank"}


def _groups(leaves: list, parts: Mapping[str, Mapping[str, Any]]) -> tuple[dict, dict[str, str]]:
    """{method: {condition: {scene: part}}} of the scored leaves, and {leaf key: error} of the others."""
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    failed = {lf.key: parts[lf.key]["error"] for lf in leaves if "error" in parts[lf.key]}
    bad = {(k.split("/")[0], k.split("/")[1]) for k in failed}
    for lf in leaves:
        if (lf.method, lf.condition) not in bad:  # a mean over fewer scenes than asked for would mislead
            groups.setdefault(lf.method, {}).setdefault(lf.condition, {})[lf.scene] = parts[lf.key]["value"]
    return groups, failed


def headline(kind: str, result: Mapping[str, Any]) -> dict[str, float | None]:
    """The numbers one table cell per method x condition shows."""
    if kind == "segmentation":
        freq = result.get("frequency") or {}
        first = next(iter(freq), None)
        out = {f"{first} {short}": number((freq.get(first) or {}).get(k)) for k, short in SEG_HEADLINE.items()} if first else {}
        if isinstance(result.get("set_ranking"), Mapping):
            out["mR"] = number(result["set_ranking"].get("overall"))
        return out
    if kind == "vqa":
        (d,) = result["conditions"].values()
        return {"overall": number(d["overall"]["accuracy"]), "no Functional": number(d["overall_no_functional"]["accuracy"])}
    if kind == "retrieval":
        return {short: number(result["overall"][k]) for k, short in RETRIEVAL_HEADLINE.items() if k in result["overall"]}
    (cond,) = result["conditions"]
    return {short: number(result["conditions"][cond]["overall"].get(k)) for k, short in OSMA_COLUMNS.items()}


def gather(kind: str, leaves: list, parts: Mapping[str, Mapping[str, Any]], opts: Mapping[str, Any], *, layout: str,
           extra: Mapping[str, Any]) -> dict:
    """The sweep result: {method: {condition: the kind's result}}, a headline table and the leaves that failed."""
    from evaluation import osma
    from evaluation.retrieval import score_matches
    from evaluation.segmentation import mean_over_scenes

    groups, failed = _groups(leaves, parts)
    extra = dict(extra)
    questions = extra.pop("questions", None)
    results: dict[str, dict[str, Any]] = {}
    relative: dict[str, Any] = {}
    for method, conds in groups.items():
        if kind == "vqa":
            results[method] = _vqa(method, conds, questions, opts.get("baseline", "baseline"))
            continue
        if kind == "osma":
            r = osma.summarise_conditions(conds, opts.get("aggregate", "pooled"), opts.get("baseline", "baseline"))
            results[method] = {c: {"kind": "osma", "method": method, "condition": c, "aggregate": r["aggregate"],
                                   "baseline": r["baseline"], "conditions": {c: d},
                                   "relative_change": {c: r["relative_change"][c]} if c in r["relative_change"] else {}}
                               for c, d in r["conditions"].items()}
            relative[method] = r["relative_change"]
            continue
        results[method] = {}
        for cond, per_scene in conds.items():
            if kind == "segmentation":
                r = {"kind": "segmentation", "definition": opts.get("definition", "official"),
                     **mean_over_scenes(per_scene), "per_scene": per_scene, **extra}
            else:
                r = {**score_matches(per_scene, opts.get("metric", "ap"), opts.get("iou_threshold", 0.25)), **extra}
            results[method][cond] = {**r, "method": method, "condition": cond}
    table = [{"method": m, "condition": c, **headline(kind, r)} for m, conds in results.items() for c, r in conds.items()]
    out = {"kind": "sweep", "sweep_of": kind, "layout": layout, "results": results, "table": table,
           "methods": sorted({lf.method for lf in leaves}), "conditions": sorted({lf.condition for lf in leaves}),
           "scenes": sorted({lf.scene for lf in leaves}), "leaves": len(leaves), "failed": failed}
    if kind == "vqa":
        out["baseline"] = opts.get("baseline", "baseline")
    if kind == "osma":
        out |= {"relative_change": relative, "baseline": opts.get("baseline", "baseline"), "aggregate": opts.get("aggregate", "pooled")}
    return out


def _vqa(method: str, conds: Mapping[str, Mapping[str, Any]], questions: Mapping[str, list], reference: str) -> dict[str, Any]:
    """Per condition: accuracy over the questions of all scenes pooled (ids prefixed by scene), per scene, and the change."""
    from evaluation.vqa_score import relative_change, summarise

    out: dict[str, Any] = {}
    for cond, per_scene in conds.items():
        pooled_q, how, answers = [], {}, {}
        for scene, part in per_scene.items():
            pooled_q += [q.model_copy(update={"id": f"{scene}/{q.id}"}) for q in questions[scene]]
            how |= {f"{scene}/{k}": v for k, v in part["how"].items()}
            answers |= {f"{scene}/{k}": v for k, v in part["answers"].items()}
        summary = {"method": method, "condition": cond, **summarise(pooled_q, how, answers)}
        out[cond] = {"kind": "vqa", "method": method, "condition": cond, "reference": reference, "n_questions": len(pooled_q),
                     "conditions": {cond: summary}, "relative_change": {},
                     "per_scene": {s: summarise(questions[s], p["how"], p["answers"]) for s, p in per_scene.items()}}
    if reference in out:
        ref = out[reference]["conditions"][reference]
        for cond, r in out.items():
            if cond != reference:
                r["relative_change"] = {cond: relative_change(r["conditions"][cond], ref)}
    return out
