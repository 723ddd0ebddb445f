"""Report plots: Top-N frequency bars, OSMa relative change, top-down category maps and VQA accuracy, as PNG files."""
from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.labels import CATEGORIES
from evaluation.tables import OSMA_COLUMNS, metric_keys, number, result_scopes, top_keys
from tiermap import atomic
from tiermap.formats.base import SchemaError
from tiermap.formats.vqa import CATEGORIES as VQA_CATEGORIES
from tiermap.formats.vqa import FUNCTIONAL

CATEGORY_COLORS = {
    "synonyms": "#2ca02c",
    "depictions": "#1f77b4",
    "vis_sim": "#17becf",
    "clutter": "#ff7f0e",
    "missing": "#7f7f7f",
    "incorrect": "#d62728",
    "none": "#d9d9d9",
}
TOPDOWN_MAX_POINTS = 200_000


def new_figure(width: float, height: float) -> Any:
    """A matplotlib Figure on the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A Figure outside pyplot: Agg whatever the process's backend, and nothing global left to close.
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Any, path: Path, dpi: int = 100) -> Path:
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
    fig = new_figure(min(40.0, max(6.0, 0.45 * n_total + 3.0)), 4.8)
    ax = fig.add_subplot()
    xs, cells, labels = [], [], []
    for g, row in enumerate(data):
        for b, cats in enumerate(row):
            xs.append(g * (n_bars + 0.8) + b)
            cells.append(cats if isinstance(cats, Mapping) else {})
            labels.append(bars[b] if isinstance(cats, Mapping) else "")
    x = np.asarray(xs, dtype=float)
    bottom = np.zeros(len(x))
    for cat in CATEGORIES:
        h = np.array([number(c.get(cat)) or 0.0 for c in cells]) * 100
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


def plot_frequency(result: dict, path: Path) -> Path:
    """frequency.png of one segmentation result: a cluster per scope, a bar per top-N."""
    scopes = result_scopes(result)
    tops = list(dict.fromkeys(t for _, d in scopes for t in top_keys(d.get("frequency") or {})))
    data = [[(d.get("frequency") or {}).get(t) for t in tops] for _, d in scopes]
    title = f"{result.get('method') or 'method'}: Top-N frequency"
    if result.get("definition"):
        title += f" ({result['definition']})"
    return save_png(_stacked_groups([s for s, _ in scopes], tops, data, title), path)


def _change_bars(ax, rel: Mapping[str, Mapping], conds: list[str], keys: list[str], labels: Mapping[str, str],  # type: ignore[no-untyped-def]
                 fontsize: int) -> None:
    """Bars of relative change (%) per key, grouped by condition; "n/a" where a value is missing."""
    width = 0.8 / max(len(keys), 1)
    x = np.arange(len(conds), dtype=float)
    for i, k in enumerate(keys):
        vals = [number(rel[c].get(k)) for c in conds]
        pos = x + (i - (len(keys) - 1) / 2) * width
        ax.bar(pos, [0.0 if v is None else v * 100 for v in vals], width, label=labels.get(k, k))
        for p, v in zip(pos, vals):
            if v is None:
                ax.text(p, 0, "n/a", ha="center", va="bottom", fontsize=fontsize, rotation=90)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, conds)


def plot_relative_change(result: dict, path: Path) -> Path:
    """relative_change.png of an OSMa result: bars per metric grouped by condition (%)."""
    rel = {c: d for c, d in (result.get("relative_change") or {}).items() if isinstance(d, Mapping)}
    conds = list(rel)
    metrics = metric_keys(list(rel.values()), OSMA_COLUMNS)
    fig = new_figure(max(5.0, 1.4 * len(conds) + 2.5), 4.2)
    ax = fig.add_subplot()
    _change_bars(ax, rel, conds, metrics, OSMA_COLUMNS, fontsize=7)
    ax.set_ylabel(f"change vs {result.get('baseline') or 'baseline'} (%)")
    title = f"{result.get('method') or 'OSMa-Bench'}: relative change"
    if result.get("aggregate"):
        title += f" ({result['aggregate']})"
    ax.set_title(title)
    if metrics:
        ax.legend(fontsize=8)
    return save_png(fig, path)


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
    fig = new_figure(7.0, 7.0)
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
    return save_png(fig, Path(path), dpi=110)




VQA_SHORT = {"Binary General": "Bin. General", "Binary Existence-Based": "Bin. Existence", "Binary Logical": "Bin. Logical",
             "Measurement": "Measurement", "Object Attributes": "Attributes", "Object Relations – Functional": "Functional",
             "Object Relations – Spatial": "Spatial", "Comparison": "Comparison"}


def _vqa_rows(result: dict) -> list[tuple[str, Mapping]]:
    """(name, summary) of every condition, then of the reference rows, as they appear in a vqa result."""
    rows = [(str(c), d) for c, d in (result.get("conditions") or {}).items() if isinstance(d, Mapping)]
    return rows + [(f"{r} (ref.)", d) for r, d in (result.get("references") or {}).items() if isinstance(d, Mapping)]


def plot_vqa_polar(result: dict, path: Path) -> Path:
    """vqa_polar.png: accuracy per category (%) on polar axes, one closed line per condition (OSMa-Bench Fig. 6 style).

    Object Relations – Functional is left out, as in the paper. Reference rows are drawn dashed.
    """
    rows = _vqa_rows(result)
    cats = [c for c in VQA_CATEGORIES if c != FUNCTIONAL and any(c in (d.get("categories") or {}) for _, d in rows)]
    fig = new_figure(7.0, 6.0)
    ax = fig.add_subplot(projection="polar")
    if cats:
        theta = np.linspace(0, 2 * np.pi, len(cats), endpoint=False)
        for name, d in rows:
            vals = [number(((d.get("categories") or {}).get(c) or {}).get("accuracy")) for c in cats]
            r = np.array([0.0 if v is None else v * 100 for v in vals])
            style = "--" if name.endswith("(ref.)") else "-"
            ax.plot(np.append(theta, theta[0]), np.append(r, r[0]), style, linewidth=1.5, marker="o", markersize=3, label=name)
        ax.set_xticks(theta, [VQA_SHORT.get(c, c) for c in cats], fontsize=8)
        ax.set_rlabel_position(180.0 / len(cats))  # radial labels between the first two spokes
    ax.set_ylim(0, 100)
    ax.set_yticks([20, 40, 60, 80, 100], ["20", "40", "60", "80", "100"], fontsize=7)
    ax.set_title(f"{result.get('method') or 'VQA'} · {result.get('scene') or ''}: accuracy per category (%)", pad=20)
    if rows:
        ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=8, frameon=False)
    return save_png(fig, path)


def plot_vqa_relative_change(result: dict, path: Path) -> Path:
    """vqa_relative_change.png: relative change of each category's accuracy against the reference condition (%)."""
    rel = {c: d for c, d in (result.get("relative_change") or {}).items() if isinstance(d, Mapping)}
    conds = list(rel)
    keys = [k for k in (*VQA_CATEGORIES, "overall") if any(k in d for d in rel.values())]
    fig = new_figure(max(6.0, 1.6 * len(conds) + 3.5), 4.5)
    ax = fig.add_subplot()
    _change_bars(ax, rel, conds, keys, VQA_SHORT, fontsize=6)
    ax.set_ylabel(f"change vs {result.get('reference') or 'baseline'} (%)")
    ax.set_title(f"{result.get('method') or 'VQA'}: relative change of accuracy")
    if not conds:
        ax.text(0.5, 0.5, f"no condition besides {result.get('reference') or 'baseline'}", ha="center", va="center",
                transform=ax.transAxes)
    if keys:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save_png(fig, path)
