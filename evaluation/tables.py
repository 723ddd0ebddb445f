"""Result tables: results.json, results.csv (one row per number) and results.md (markdown tables per kind)."""
from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.labels import CATEGORIES
from tiermap import atomic
from tiermap.formats.base import SchemaError
from tiermap.formats.results import (
    RESULTS_CSV,
    RESULTS_FILE,
    RESULTS_MD,
    result_kind,
    write_results,
)
from tiermap.formats.vqa import BINARY
from tiermap.formats.vqa import CATEGORIES as VQA_CATEGORIES

_FREQ_HEAD = ("S", "D", "VS", "C", "M", "I")
_SET_RANKING = {
    "overall": "mR",
    "synonyms": "R_S",
    "secondary": "R_DVS",
    "synonym_undershooting": "P_S←",
    "secondary_overshooting": "P_DVS→",
    "secondary_undershooting": "P_DVS←",
    "synonym_inlier_rate": "inlier S",
    "secondary_inlier_rate": "inlier DVS",
}
_RETRIEVAL = {"all_ap": "mAP", "all_ap_50%": "AP50", "all_ap_25%": "AP25", "avg_inverse_rank": "avg. inverse rank"}
_RETRIEVAL_PCT = frozenset({"all_ap", "all_ap_50%", "all_ap_25%"})
_OMQ = {"OMQ": "OMQ", "avg_pairwise": "pairwise", "avg_label": "label", "avg_spatial": "spatial",
        "avg_fp_quality": "FP quality"}
OSMA_COLUMNS = {"macc": "mAcc", "fmiou": "f-mIoU", "miou": "mIoU"}
_META = ("definition", "aggregate", "baseline", "note")
DASH = "–"

Row = tuple[str, str, str, float | None]


# ---------------------------------------------------------------- numbers
def _is_scalar(v: Any) -> bool:
    """A number (not a bool) or None: a metric value slot."""
    return v is None or (isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)))


def number(v: Any) -> float | None:
    """A metric value as float, None when missing or NaN."""
    if not _is_scalar(v) or v is None:
        return None
    f = float(v)
    return None if math.isnan(f) else f


def _pct(v: Any) -> str:
    """×100 with 2 decimals, a dash when missing."""
    f = number(v)
    return DASH if f is None else f"{f * 100:.2f}"


def _signed_pct(v: Any) -> str:
    """Signed ×100 with 2 decimals, a dash when missing."""
    f = number(v)
    return DASH if f is None else f"{f * 100:+.2f}"


def _raw(v: Any) -> str:
    """3 decimals, a dash when missing."""
    f = number(v)
    return DASH if f is None else f"{f:.3f}"


# ---------------------------------------------------------------- flatten
def _section(result: dict, key: str, src: Path | str, kind: type = dict) -> Any:
    """An optional section of the result (empty when absent), checked to be of `kind`."""
    value = result.get(key)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise SchemaError(src, key, f"a JSON {'object' if kind is dict else 'array'}", type(value).__name__)
    return value


def _leaves(d: Mapping, prefix: str, fallback: str) -> Iterator[tuple[str, str, float | None]]:
    """(group, metric, value) for every number under d; group is the key path below `prefix`."""
    for key, value in d.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, f"{prefix}/{key}" if prefix else str(key), fallback)
        elif isinstance(value, (list, tuple)):
            for i, x in enumerate(value):
                if _is_scalar(x):
                    yield prefix or fallback, f"{key}[{i}]", number(x)
        elif _is_scalar(value):
            yield prefix or fallback, str(key), number(value)


def _scoped(scope: str, d: Mapping, prefix: str, fallback: str, src: Path | str, field: str) -> list[Row]:
    """Rows of one scope, after checking the scope's metrics are an object."""
    if not isinstance(d, Mapping):
        raise SchemaError(src, field, "an object of metrics", type(d).__name__)
    return [(scope, g, m, v) for g, m, v in _leaves(d, prefix, fallback)]


def flatten(result: dict, src: Path | str = "<result>") -> list[Row]:
    """(scope, group, metric, value) for every number of a result, NaN as None; errors name `src`."""
    kind = result_kind(result, src)
    rows: list[Row] = []
    if kind == "segmentation":
        overall = {k: result[k] for k in ("frequency", "set_ranking") if result.get(k) is not None}
        rows += _scoped("overall", overall, "", "overall", src, "frequency")
        for scene, d in _section(result, "per_scene", src).items():
            rows += _scoped(str(scene), d, "", "scene", src, f"per_scene.{scene}")
    elif kind == "retrieval":
        rows += _scoped("overall", result["overall"], "overall", "overall", src, "overall")
        for scene, d in _section(result, "per_scene", src).items():
            rows += _scoped(str(scene), d, "overall", "overall", src, f"per_scene.{scene}")
    elif kind == "omq":
        rows += _scoped("overall", result["scores"], "scores", "scores", src, "scores")
        for i, entry in enumerate(_section(result, "per_file", src, list)):
            if not isinstance(entry, Mapping):
                raise SchemaError(src, f"per_file[{i}]", "an object", type(entry).__name__)
            rest = {k: v for k, v in entry.items() if k != "file"}
            rows += _scoped(str(entry.get("file", f"file{i}")), rest, "", "file", src, f"per_file[{i}]")
    elif kind == "sweep":
        for m, conds in _section(result, "results", src).items():
            for c, r in conds.items():
                rows += [(f"{m}/{c}/{sc}", g, k, v) for sc, g, k, v in flatten(r, f"{src}:results.{m}.{c}")]
    elif kind == "vqa":
        for section, scope in (("conditions", "overall"), ("references", "reference")):
            for cond, d in _section(result, section, src).items():
                rows += _scoped(scope, d, str(cond), str(cond), src, f"{section}.{cond}")
        for cond, d in _section(result, "relative_change", src).items():
            rows += _scoped("overall", d, f"relative_change/{cond}", "relative_change", src, f"relative_change.{cond}")
    else:
        conditions = result["conditions"]
        for cond, d in conditions.items():
            if not isinstance(d, Mapping):
                raise SchemaError(src, f"conditions.{cond}", "an object", type(d).__name__)
            rows += _scoped("overall", d.get("overall") or {}, str(cond), str(cond), src, f"conditions.{cond}.overall")
        for cond, d in _section(result, "relative_change", src).items():
            rows += _scoped("overall", d, f"relative_change/{cond}", "relative_change", src, f"relative_change.{cond}")
        for cond, d in conditions.items():
            per_scene = d.get("per_scene") or {}
            if not isinstance(per_scene, Mapping):
                raise SchemaError(src, f"conditions.{cond}.per_scene", "an object", type(per_scene).__name__)
            for scene, sd in per_scene.items():
                field = f"conditions.{cond}.per_scene.{scene}"
                rows += _scoped(f"{cond}/{scene}", sd, str(cond), str(cond), src, field)
    return rows


# ---------------------------------------------------------------- markdown
def _cell(text: Any) -> str:
    """Markdown-safe table cell text."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Lines of a markdown table."""
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]


def metric_keys(dicts: list[Mapping], preferred: Mapping[str, str]) -> list[str]:
    """Scalar keys present in any dict: the preferred ones in their order, then the others as they come."""
    present = [k for d in dicts for k, v in d.items() if _is_scalar(v)]
    return [k for k in preferred if k in present] + list(dict.fromkeys(k for k in present if k not in preferred))


def top_keys(freq: Mapping) -> list[str]:
    """Top-N keys ordered by N, other keys after in their order."""
    tops = [k for k in freq if re.fullmatch(r"top\d+", str(k))]
    return sorted(tops, key=lambda k: int(str(k)[3:])) + [k for k in freq if k not in tops]


def result_scopes(result: dict) -> list[tuple[str, Mapping]]:
    """("overall", result) then (scene, per-scene dict) for segmentation and retrieval results."""
    per_scene = result.get("per_scene") or {}
    return [("overall", result)] + [(str(s), d) for s, d in per_scene.items() if isinstance(d, Mapping)]


def _meta_line(result: dict) -> str:
    """The method plus definition / aggregate / baseline / note when present."""
    parts = [f"**method:** {result.get('method') or DASH}"]
    parts += [f"**{k}:** {result[k]}" for k in _META if result.get(k) not in (None, "")]
    return " · ".join(parts)


def _md_segmentation(result: dict) -> list[str]:
    """Top-N frequency (×100) and set-ranking tables."""
    freq_rows, sr_rows = [], []
    for scope, d in result_scopes(result):
        freq = d.get("frequency") or {}
        for top in top_keys(freq):
            cats = freq[top] if isinstance(freq[top], Mapping) else {}
            freq_rows.append([scope, str(top)] + [_pct(cats.get(c)) for c in CATEGORIES])
        sr = d.get("set_ranking")
        if isinstance(sr, Mapping):
            sr_rows.append([scope] + [_raw(sr.get(k)) for k in _SET_RANKING])
    lines = ["## Top-N frequency (% of points)", ""] + markdown_table(["scope", "top-N", *_FREQ_HEAD], freq_rows)
    if sr_rows:
        lines += ["", "## Set ranking", ""] + markdown_table(["scope", *_SET_RANKING.values()], sr_rows)
    return lines


def _md_retrieval(result: dict) -> list[str]:
    """AP (×100) or average inverse rank per scope."""
    scopes = [(s, d.get("overall") if s == "overall" else d) for s, d in result_scopes(result)]
    scopes = [(s, d) for s, d in scopes if isinstance(d, Mapping)]
    keys = metric_keys([d for _, d in scopes], _RETRIEVAL)
    rows = [[s] + [(_pct if k in _RETRIEVAL_PCT else _raw)(d.get(k)) for k in keys] for s, d in scopes]
    head = [_RETRIEVAL.get(k, k) + (" (%)" if k in _RETRIEVAL_PCT else "") for k in keys]
    return ["## Retrieval", ""] + markdown_table(["scope", *head], rows)


def _md_omq(result: dict) -> list[str]:
    """The five OMQ scores, overall and per file."""
    scopes = [("overall", result["scores"])]
    for i, entry in enumerate(result.get("per_file") or []):
        if isinstance(entry, Mapping) and isinstance(entry.get("scores"), Mapping):
            scopes.append((str(entry.get("file", f"file{i}")), entry["scores"]))
    keys = metric_keys([d for _, d in scopes], _OMQ)
    rows = [[s] + [_raw(d.get(k)) for k in keys] for s, d in scopes]
    return ["## OMQ", ""] + markdown_table(["scope", *[_OMQ.get(k, k) for k in keys]], rows)


def _md_osma(result: dict) -> list[str]:
    """A table per condition (×100) and the relative change to the baseline (%)."""
    lines: list[str] = []
    for cond, d in result["conditions"].items():
        if not isinstance(d, Mapping):
            continue
        scopes = [("overall", d.get("overall") or {})]
        scopes += [(str(s), sd) for s, sd in (d.get("per_scene") or {}).items() if isinstance(sd, Mapping)]
        keys = metric_keys([sd for _, sd in scopes], OSMA_COLUMNS)
        rows = [[s] + [_pct(sd.get(k)) for k in keys] for s, sd in scopes]
        head = ["scope", *[OSMA_COLUMNS.get(k, k) for k in keys]]
        lines += [f"## Condition: {cond} (%)", ""] + markdown_table(head, rows) + [""]
    rel = {c: d for c, d in (result.get("relative_change") or {}).items() if isinstance(d, Mapping)}
    if rel:
        keys = metric_keys(list(rel.values()), OSMA_COLUMNS)
        rows = [[str(c)] + [_signed_pct(d.get(k)) for k in keys] for c, d in rel.items()]
        base = result.get("baseline") or "baseline"
        head = ["condition", *[OSMA_COLUMNS.get(k, k) for k in keys]]
        lines += [f"## Relative change vs {base} (%)", ""] + markdown_table(head, rows)
    return lines


def _vqa_cell(d: Any) -> str:
    """accuracy % [95 % Wilson interval] of one {n, correct, accuracy, ci_low, ci_high}, a dash when missing."""
    if not isinstance(d, Mapping) or number(d.get("accuracy")) is None:
        return DASH
    return f"{_pct(d['accuracy'])} [{_pct(d.get('ci_low'))}–{_pct(d.get('ci_high'))}]"


def _md_vqa(result: dict) -> list[str]:
    """Accuracy per category and condition (with Wilson intervals), balanced accuracy, relative change (%)."""
    cols = [(str(c), d) for c, d in result["conditions"].items() if isinstance(d, Mapping)]
    cols += [(f"{r} (ref.)", d) for r, d in (result.get("references") or {}).items() if isinstance(d, Mapping)]
    cats = [c for c in VQA_CATEGORIES if any(c in (d.get("categories") or {}) for _, d in cols)]
    rows = []
    for c in cats:
        n = next((d["categories"][c].get("n") for _, d in cols if c in (d.get("categories") or {})), None)
        rows.append([c, str(n)] + [_vqa_cell((d.get("categories") or {}).get(c)) for _, d in cols])
    for key, name in (("overall", "overall"), ("overall_no_functional", "overall w/o Functional")):
        n = next((d[key].get("n") for _, d in cols if isinstance(d.get(key), Mapping)), None)
        rows.append([f"**{name}**", str(n)] + [_vqa_cell(d.get(key)) for _, d in cols])
    head = ["category", "n", *[name for name, _ in cols]]
    lines = ["## Accuracy (%, 95 % Wilson interval)", ""] + markdown_table(head, rows)
    bal = [[c] + [_pct(((d.get("categories") or {}).get(c) or {}).get("balanced_accuracy")) for _, d in cols]
           for c in BINARY if c in cats]
    if bal:
        lines += ["", "## Balanced accuracy of the binary categories (%)", ""] + markdown_table(["category", *head[2:]], bal)
    missing = [[name, str(d.get("missing", DASH))] for name, d in cols if name in result["conditions"]]
    if missing:
        lines += ["", "## Missing answers (counted as wrong)", ""] + markdown_table(["condition", "missing"], missing)
    rel = {c: d for c, d in (result.get("relative_change") or {}).items() if isinstance(d, Mapping)}
    if rel:
        keys = [k for k in (*VQA_CATEGORIES, "overall", "overall_no_functional") if any(k in d for d in rel.values())]
        rows = [[str(c)] + [_signed_pct(d.get(k)) for k in keys] for c, d in rel.items()]
        lines += ["", f"## Relative change vs {result.get('reference') or 'baseline'} (%)", ""]
        lines += markdown_table(["condition", *keys], rows)
    return lines


def _markdown(result: dict) -> str:
    """results.md text."""
    body = {"segmentation": _md_segmentation, "retrieval": _md_retrieval, "omq": _md_omq, "osma": _md_osma,
            "vqa": _md_vqa}
    lines = [f"# Evaluation report: {result['kind']}", "", _meta_line(result), ""] + body[result["kind"]](result)
    return "\n".join(lines).rstrip("\n") + "\n"


# ---------------------------------------------------------------- writing
def write_tables(out_dir: Path, result: dict) -> dict[str, Path]:
    """Write results.json, results.csv and results.md into out_dir (nothing when the result is malformed)."""
    out_dir = Path(out_dir)
    rows = flatten(result, out_dir / RESULTS_FILE)
    written = {RESULTS_FILE: write_results(out_dir / RESULTS_FILE, result)}
    table = pd.DataFrame(rows, columns=["scope", "group", "metric", "value"]).astype({"value": "float64"})
    written[RESULTS_CSV] = atomic.write_text(out_dir / RESULTS_CSV, table.to_csv(index=False, na_rep="nan"))
    written[RESULTS_MD] = atomic.write_text(out_dir / RESULTS_MD, _markdown(result))
    return written
