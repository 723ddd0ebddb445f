"""Evaluation reports: results.json / results.csv / results.md, default plots, and side-by-side comparison."""
from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.labels import CATEGORIES
from tiermap import atomic
from tiermap.formats.base import SchemaError

KINDS = ("segmentation", "retrieval", "omq", "osma")
REQUIRED = {"segmentation": "frequency", "retrieval": "overall", "omq": "scores", "osma": "conditions"}
"""The section each kind of result must carry (a JSON object)."""

FREQ_CATEGORIES = CATEGORIES
"""OpenLex3D Top-N frequency categories in the paper's column order (S D VS C M I)."""
CATEGORY_COLORS = {
    "synonyms": "#2ca02c",
    "depictions": "#1f77b4",
    "vis_sim": "#17becf",
    "clutter": "#ff7f0e",
    "missing": "#7f7f7f",
    "incorrect": "#d62728",
    "none": "#d9d9d9",
}
LOWER_IS_BETTER = frozenset({"missing", "incorrect"})
TOPDOWN_MAX_POINTS = 200_000

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
_OSMA = {"macc": "mAcc", "fmiou": "f-mIoU", "miou": "mIoU"}
_META = ("definition", "aggregate", "baseline", "note")
_DASH = "–"

Row = tuple[str, str, str, float | None]


# ---------------------------------------------------------------- numbers
def _is_scalar(v: Any) -> bool:
    """A number (not a bool) or None: a metric value slot."""
    return v is None or (isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)))


def _num(v: Any) -> float | None:
    """A metric value as float, None when missing or NaN."""
    if not _is_scalar(v) or v is None:
        return None
    f = float(v)
    return None if math.isnan(f) else f


def _pct(v: Any) -> str:
    """×100 with 2 decimals, a dash when missing."""
    f = _num(v)
    return _DASH if f is None else f"{f * 100:.2f}"


def _signed_pct(v: Any) -> str:
    """Signed ×100 with 2 decimals, a dash when missing."""
    f = _num(v)
    return _DASH if f is None else f"{f * 100:+.2f}"


def _raw(v: Any) -> str:
    """3 decimals, a dash when missing."""
    f = _num(v)
    return _DASH if f is None else f"{f:.3f}"


def _jsonable(x: Any) -> Any:
    """JSON-ready copy: non-finite floats become None, numpy scalars and arrays become Python values."""
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Path):
        return str(x)
    return x


# ---------------------------------------------------------------- flatten
def _check(result: Any, src: Path | str) -> str:
    """The result's kind, after checking it is a result dict carrying its kind's required section."""
    if not isinstance(result, dict) or "kind" not in result:
        got = None if isinstance(result, dict) else type(result).__name__
        raise SchemaError(src, "kind", f"an object with 'kind' (one of {', '.join(KINDS)})", got)
    kind = result["kind"]
    if kind not in KINDS:
        raise SchemaError(src, "kind", f"one of {', '.join(KINDS)}", kind)
    if not isinstance(result.get(REQUIRED[kind]), dict):
        raise SchemaError(src, REQUIRED[kind], "an object", type(result.get(REQUIRED[kind])).__name__)
    return kind


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
                    yield prefix or fallback, f"{key}[{i}]", _num(x)
        elif _is_scalar(value):
            yield prefix or fallback, str(key), _num(value)


def _scoped(scope: str, d: Mapping, prefix: str, fallback: str, src: Path | str, field: str) -> list[Row]:
    """Rows of one scope, after checking the scope's metrics are an object."""
    if not isinstance(d, Mapping):
        raise SchemaError(src, field, "an object of metrics", type(d).__name__)
    return [(scope, g, m, v) for g, m, v in _leaves(d, prefix, fallback)]


def _flatten(result: dict, src: Path | str) -> list[Row]:
    """flatten() naming `src` in errors."""
    kind = _check(result, src)
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


def flatten(result: dict) -> list[tuple[str, str, str, float | None]]:
    """(scope, group, metric, value) for every number of a result; NaN becomes None."""
    return _flatten(result, "<result>")


# ---------------------------------------------------------------- markdown
def _cell(text: Any) -> str:
    """Markdown-safe table cell text."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Lines of a markdown table."""
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]


def _keys(dicts: list[Mapping], preferred: Mapping[str, str]) -> list[str]:
    """Scalar keys present in any dict: the preferred ones in their order, then the others as they come."""
    present = [k for d in dicts for k, v in d.items() if _is_scalar(v)]
    return [k for k in preferred if k in present] + list(dict.fromkeys(k for k in present if k not in preferred))


def _top_keys(freq: Mapping) -> list[str]:
    """Top-N keys ordered by N, other keys after in their order."""
    tops = [k for k in freq if re.fullmatch(r"top\d+", str(k))]
    return sorted(tops, key=lambda k: int(str(k)[3:])) + [k for k in freq if k not in tops]


def _scopes(result: dict) -> list[tuple[str, Mapping]]:
    """("overall", result) then (scene, per-scene dict) for segmentation and retrieval results."""
    per_scene = result.get("per_scene") or {}
    return [("overall", result)] + [(str(s), d) for s, d in per_scene.items() if isinstance(d, Mapping)]


def _meta_line(result: dict) -> str:
    """The method plus definition / aggregate / baseline / note when present."""
    parts = [f"**method:** {result.get('method') or _DASH}"]
    parts += [f"**{k}:** {result[k]}" for k in _META if result.get(k) not in (None, "")]
    return " · ".join(parts)


def _md_segmentation(result: dict) -> list[str]:
    """Top-N frequency (×100) and set-ranking tables."""
    freq_rows, sr_rows = [], []
    for scope, d in _scopes(result):
        freq = d.get("frequency") or {}
        for top in _top_keys(freq):
            cats = freq[top] if isinstance(freq[top], Mapping) else {}
            freq_rows.append([scope, str(top)] + [_pct(cats.get(c)) for c in FREQ_CATEGORIES])
        sr = d.get("set_ranking")
        if isinstance(sr, Mapping):
            sr_rows.append([scope] + [_raw(sr.get(k)) for k in _SET_RANKING])
    lines = ["## Top-N frequency (% of points)", ""] + _table(["scope", "top-N", *_FREQ_HEAD], freq_rows)
    if sr_rows:
        lines += ["", "## Set ranking", ""] + _table(["scope", *_SET_RANKING.values()], sr_rows)
    return lines


def _md_retrieval(result: dict) -> list[str]:
    """AP (×100) or average inverse rank per scope."""
    scopes = [(s, d.get("overall") if s == "overall" else d) for s, d in _scopes(result)]
    scopes = [(s, d) for s, d in scopes if isinstance(d, Mapping)]
    keys = _keys([d for _, d in scopes], _RETRIEVAL)
    rows = [[s] + [(_pct if k in _RETRIEVAL_PCT else _raw)(d.get(k)) for k in keys] for s, d in scopes]
    head = [_RETRIEVAL.get(k, k) + (" (%)" if k in _RETRIEVAL_PCT else "") for k in keys]
    return ["## Retrieval", ""] + _table(["scope", *head], rows)


def _md_omq(result: dict) -> list[str]:
    """The five OMQ scores, overall and per file."""
    scopes = [("overall", result["scores"])]
    for i, entry in enumerate(result.get("per_file") or []):
        if isinstance(entry, Mapping) and isinstance(entry.get("scores"), Mapping):
            scopes.append((str(entry.get("file", f"file{i}")), entry["scores"]))
    keys = _keys([d for _, d in scopes], _OMQ)
    rows = [[s] + [_raw(d.get(k)) for k in keys] for s, d in scopes]
    return ["## OMQ", ""] + _table(["scope", *[_OMQ.get(k, k) for k in keys]], rows)


def _md_osma(result: dict) -> list[str]:
    """A table per condition (×100) and the relative change to the baseline (%)."""
    lines: list[str] = []
    for cond, d in result["conditions"].items():
        if not isinstance(d, Mapping):
            continue
        scopes = [("overall", d.get("overall") or {})]
        scopes += [(str(s), sd) for s, sd in (d.get("per_scene") or {}).items() if isinstance(sd, Mapping)]
        keys = _keys([sd for _, sd in scopes], _OSMA)
        rows = [[s] + [_pct(sd.get(k)) for k in keys] for s, sd in scopes]
        lines += [f"## Condition: {cond} (%)", ""] + _table(["scope", *[_OSMA.get(k, k) for k in keys]], rows) + [""]
    rel = {c: d for c, d in (result.get("relative_change") or {}).items() if isinstance(d, Mapping)}
    if rel:
        keys = _keys(list(rel.values()), _OSMA)
        rows = [[str(c)] + [_signed_pct(d.get(k)) for k in keys] for c, d in rel.items()]
        base = result.get("baseline") or "baseline"
        head = ["condition", *[_OSMA.get(k, k) for k in keys]]
        lines += [f"## Relative change vs {base} (%)", ""] + _table(head, rows)
    return lines


def _markdown(result: dict) -> str:
    """results.md text."""
    body = {"segmentation": _md_segmentation, "retrieval": _md_retrieval, "omq": _md_omq, "osma": _md_osma}
    lines = [f"# Evaluation report: {result['kind']}", "", _meta_line(result), ""] + body[result["kind"]](result)
    return "\n".join(lines).rstrip("\n") + "\n"


# ---------------------------------------------------------------- plots
def _figure(width: float, height: float) -> Any:
    """A matplotlib Figure on the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A Figure outside pyplot: Agg whatever the process's backend, and nothing global left to close.
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path, dpi: int = 100) -> Path:
    """Render a figure to PNG and write it atomically."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    fig.clear()
    return atomic.write_bytes(Path(path), buf.getvalue())


def _stacked_groups(groups: list[str], bars: list[str], data: list[list[Mapping | None]], title: str) -> Any:
    """Figure of stacked category bars (%), one cluster per group, one bar per `bars` entry inside it."""
    from matplotlib.transforms import blended_transform_factory

    n_bars = max(len(bars), 1)
    n_total = len(groups) * n_bars
    fig = _figure(min(40.0, max(6.0, 0.45 * n_total + 3.0)), 4.8)
    ax = fig.add_subplot()
    xs, cells, labels = [], [], []
    for g, row in enumerate(data):
        for b, cats in enumerate(row):
            xs.append(g * (n_bars + 0.8) + b)
            cells.append(cats if isinstance(cats, Mapping) else {})
            labels.append(bars[b] if isinstance(cats, Mapping) else "")
    x = np.asarray(xs, dtype=float)
    bottom = np.zeros(len(x))
    for cat in FREQ_CATEGORIES:
        h = np.array([_num(c.get(cat)) or 0.0 for c in cells]) * 100
        ax.bar(x, h, width=0.85, bottom=bottom, color=CATEGORY_COLORS[cat], label=cat, edgecolor="white", linewidth=0.3)
        bottom += h
    ax.set_xticks(x, labels, rotation=90 if max(map(len, bars), default=0) > 5 else 0, fontsize=8)
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for g, name in enumerate(groups):
        centre = g * (n_bars + 0.8) + (n_bars - 1) / 2
        ax.text(centre, 1.01, name, transform=trans, ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, max(100.0, float(bottom.max(initial=0.0))))
    ax.set_xlim(-0.8, max(float(x.max(initial=0.0)) + 0.8, 0.8))
    ax.set_ylabel("share of points (%)")
    ax.set_title(title, pad=18)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def _plot_result_frequency(result: dict, path: Path) -> Path:
    """frequency.png of one segmentation result: a cluster per scope, a bar per top-N."""
    scopes = _scopes(result)
    tops = list(dict.fromkeys(t for _, d in scopes for t in _top_keys(d.get("frequency") or {})))
    data = [[(d.get("frequency") or {}).get(t) for t in tops] for _, d in scopes]
    title = f"{result.get('method') or 'method'}: Top-N frequency"
    if result.get("definition"):
        title += f" ({result['definition']})"
    return _save(_stacked_groups([s for s, _ in scopes], tops, data, title), path)


def _plot_relative_change(result: dict, path: Path) -> Path:
    """relative_change.png of an OSMa result: bars per metric grouped by condition (%)."""
    rel = {c: d for c, d in (result.get("relative_change") or {}).items() if isinstance(d, Mapping)}
    conds = list(rel)
    metrics = _keys(list(rel.values()), _OSMA)
    fig = _figure(max(5.0, 1.4 * len(conds) + 2.5), 4.2)
    ax = fig.add_subplot()
    width = 0.8 / max(len(metrics), 1)
    x = np.arange(len(conds), dtype=float)
    for i, m in enumerate(metrics):
        vals = [_num(rel[c].get(m)) for c in conds]
        pos = x + (i - (len(metrics) - 1) / 2) * width
        ax.bar(pos, [0.0 if v is None else v * 100 for v in vals], width, label=_OSMA.get(m, m))
        for p, v in zip(pos, vals):
            if v is None:
                ax.text(p, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, conds)
    ax.set_ylabel(f"change vs {result.get('baseline') or 'baseline'} (%)")
    title = f"{result.get('method') or 'OSMa-Bench'}: relative change"
    if result.get("aggregate"):
        title += f" ({result['aggregate']})"
    ax.set_title(title)
    if metrics:
        ax.legend(fontsize=8)
    return _save(fig, path)


def _subsample(n: int, limit: int = TOPDOWN_MAX_POINTS) -> np.ndarray:
    """Sorted indices of at most `limit` of n points, the same for the same n."""
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, size=limit, replace=False))


def plot_topdown_categories(points: np.ndarray, categories: np.ndarray, path: Path, title: str = "") -> Path:
    """Top-down (x, y) scatter of a GT cloud coloured by category, upper points drawn last."""
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D

    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise SchemaError("<points>", "points", "an (N, 3) array", f"shape {pts.shape}")
    cats = np.asarray(categories).astype(str)
    if cats.shape != (len(pts),):
        raise SchemaError("<categories>", "categories", f"one category per point ({len(pts)},)", f"shape {cats.shape}")
    names, inverse = np.unique(cats, return_inverse=True)
    unknown = sorted(set(names.tolist()) - set(CATEGORY_COLORS))
    if unknown:
        raise SchemaError("<categories>", "categories", f"values among {', '.join(CATEGORY_COLORS)}", unknown)
    idx = _subsample(len(pts))
    # Unscored points (walls, ceiling, unlabelled) go underneath so the ceiling does not hide the scored objects.
    idx = idx[np.lexsort((pts[idx, 2], cats[idx] != "none"))]
    palette = np.array([to_rgba(CATEGORY_COLORS[c]) for c in names]).reshape(-1, 4)
    fig = _figure(7.0, 7.0)
    ax = fig.add_subplot()
    ax.scatter(pts[idx, 0], pts[idx, 1], c=palette[inverse[idx]], s=1.0, marker="o", linewidths=0, rasterized=True)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    if title:
        ax.set_title(title)
    present = [c for c in CATEGORY_COLORS if c in set(names.tolist())]
    handles = [Line2D([], [], marker="o", linestyle="", color=CATEGORY_COLORS[c], label=c) for c in present]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _save(fig, Path(path), dpi=110)


# ---------------------------------------------------------------- writing
def write_report(
    out_dir: Path, result: dict, *, extra_plots: dict[str, Callable[[Path], Path]] | None = None
) -> dict[str, Path]:
    """Write results.json, results.csv, results.md and the kind's plots (plus `extra_plots`) into out_dir."""
    out_dir = Path(out_dir)
    rows = _flatten(result, out_dir / "results.json")
    written = {
        "results.json": atomic.write_text(
            out_dir / "results.json",
            json.dumps(_jsonable(result), indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        ),
    }
    table = pd.DataFrame(rows, columns=["scope", "group", "metric", "value"]).astype({"value": "float64"})
    written["results.csv"] = atomic.write_text(out_dir / "results.csv", table.to_csv(index=False, na_rep="nan"))
    written["results.md"] = atomic.write_text(out_dir / "results.md", _markdown(result))
    if result["kind"] == "segmentation":
        written["frequency.png"] = _plot_result_frequency(result, out_dir / "frequency.png")
    elif result["kind"] == "osma":
        written["relative_change.png"] = _plot_relative_change(result, out_dir / "relative_change.png")
    for name, plot in (extra_plots or {}).items():
        written[name] = Path(plot(out_dir / name))
    return written


# ---------------------------------------------------------------- compare
def _read_result(path: Path) -> dict:
    """A results.json, checked to be an object with a known kind."""
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        got = f"invalid JSON ({err.__class__.__name__})"
        raise SchemaError(path, "kind", "a JSON object with 'kind'", got) from None
    _check(data, path)
    return data


def _method_names(paths: list[Path], results: list[dict]) -> list[str]:
    """Column names: the method (or the parent folder), duplicates told apart by the shortest folder suffix."""
    names = [str(r.get("method") or p.parent.name or p.stem) for p, r in zip(paths, results)]
    out = list(names)
    for name in set(names):
        same = [i for i, n in enumerate(names) if n == name]
        if len(same) < 2:
            continue
        parts = [paths[i].resolve().parent.parts for i in same]
        for k in range(1, max(map(len, parts)) + 1):
            suffixes = ["/".join(p[-k:]) for p in parts]
            if len(set(suffixes)) == len(suffixes):
                for i, s in zip(same, suffixes):
                    out[i] = f"{name} ({s})"
                break
    return [f"{n} [{i + 1}]" if out.count(n) > 1 else n for i, n in enumerate(out)]


def _best(metric: str, values: dict[str, float | None]) -> str:
    """The method(s) with the best value, ties joined by commas; a dash when no method has a value."""
    present = {m: v for m, v in values.items() if v is not None}
    if not present:
        return _DASH
    target = min(present.values()) if metric in LOWER_IS_BETTER else max(present.values())
    return ", ".join(m for m, v in present.items() if v == target)


def compare(paths: list[Path]) -> str:
    """Markdown table of the overall metrics of several results.json side by side, with the best method per row."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise SchemaError("<compare>", "paths", "at least one results.json", "[]")
    results = [_read_result(p) for p in paths]
    kinds = [r["kind"] for r in results]
    majority = max(dict.fromkeys(kinds), key=kinds.count)
    for p, k in zip(paths, kinds):
        if k != majority:
            raise SchemaError(p, "kind", f"{majority!r} like the other results", k)
    names = _method_names(paths, results)
    table: dict[tuple[str, str], dict[str, float | None]] = {}
    for name, p, r in zip(names, paths, results):
        for scope, group, metric, value in _flatten(r, p):
            if scope == "overall":
                table.setdefault((group, metric), {})[name] = value
    rows = []
    for (group, metric), values in table.items():
        cells = [_DASH if (v := values.get(n)) is None else f"{v:.4f}" for n in names]
        rows.append([f"{group}/{metric}", *cells, _best(metric, values)])
    lines = [f"Comparison ({majority}, overall; lower is better for {', '.join(sorted(LOWER_IS_BETTER))})", ""]
    return "\n".join(lines + _table(["metric", *names, "best"], rows)) + "\n"
