"""A sweep's report: results.json, results.csv (one row per number, with method and condition), results.md and sweep.png."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.tables import DASH, OSMA_COLUMNS, _signed_pct, flatten, markdown_table, number
from tiermap import atomic
from tiermap.formats.results import RESULTS_CSV, RESULTS_FILE, RESULTS_MD, write_results

PLOT_FILE = "sweep.png"
_PERCENT = {"segmentation": True, "osma": True, "retrieval": False, "vqa": True}  # retrieval AP is already x100


def _cell(kind: str, v: float | None, metric: str) -> str:
    """A table cell: x100 for fractions, as the single-run reports show them."""
    if v is None:
        return DASH
    return f"{v * 100:.2f}" if _PERCENT[kind] and metric != "mR" else f"{v:.3f}" if metric in ("mR", "avg. inverse rank") else f"{v:.2f}"


def metrics_of(result: Mapping[str, Any]) -> list[str]:
    """The headline metrics present in the sweep's table, in first-seen order."""
    return list(dict.fromkeys(k for row in result["table"] for k in row if k not in ("method", "condition")))


def flatten_sweep(result: Mapping[str, Any]) -> pd.DataFrame:
    """One row per number: method, condition, scope, group, metric, value."""
    rows = [(m, c, *row) for m, conds in result["results"].items() for c, r in conds.items()
            for row in flatten(r, f"{RESULTS_FILE}:results.{m}.{c}")]
    return pd.DataFrame(rows, columns=["method", "condition", "scope", "group", "metric", "value"]).astype({"value": "float64"})


def markdown(result: Mapping[str, Any]) -> str:
    """results.md: a methods x conditions table per headline metric, OSMa's relative change, the leaves that failed."""
    kind, conds = result["sweep_of"], result["conditions"]
    lines = [f"# Evaluation sweep: {kind}", "",
             f"**methods:** {len(result['methods'])} · **conditions:** {len(conds)} · **scenes:** {len(result['scenes'])} · "
             f"**prediction folders:** {result['leaves']} · **layout:** `{result['layout']}`", ""]
    cells = {(r["method"], r["condition"]): r for r in result["table"]}
    for metric in metrics_of(result):
        unit = " (%)" if _PERCENT[kind] and metric != "mR" else ""
        rows = [[m] + [_cell(kind, number((cells.get((m, c)) or {}).get(metric)), metric) for c in conds] for m in result["methods"]]
        lines += [f"## {metric}{unit}", ""] + markdown_table(["method", *conds], rows) + [""]
    for method, rel in (result.get("relative_change") or {}).items():
        rows = [[c] + [_signed_pct(d.get(k)) for k in OSMA_COLUMNS]
                for c, d in rel.items()]
        lines += [f"## {method}: relative change vs {result.get('baseline')} (%)", ""]
        lines += markdown_table(["condition", *OSMA_COLUMNS.values()], rows) + [""]
    if kind == "vqa":
        rows = [[m] + [_signed_pct(((result["results"][m].get(c) or {}).get("relative_change") or {}).get(c, {}).get("overall")) for c in conds]
                for m in result["methods"] if m in result["results"]]
        lines += [f"## Overall accuracy: relative change vs {result.get('baseline')} (%)", ""]
        lines += markdown_table(["method", *conds], rows) + [""]
    if result["failed"]:
        lines += ["## Not scored (their method and condition are left out of the tables)", ""]
        lines += [f"- `{k}`: {err}" for k, err in result["failed"].items()]
    return "\n".join(lines).rstrip("\n") + "\n"


def plot(result: Mapping[str, Any], path: Path) -> Path:
    """One heatmap per headline metric: methods (rows) x conditions (columns), values written in the cells."""
    from evaluation.plots import new_figure, save_png

    kind, metrics, methods, conds = result["sweep_of"], metrics_of(result), result["methods"], result["conditions"]
    cells = {(r["method"], r["condition"]): r for r in result["table"]}
    n = max(len(metrics), 1)
    fig = new_figure(min(4.0 * n, 24.0), 0.6 * len(methods) + 1.8)
    for i, metric in enumerate(metrics):
        ax = fig.add_subplot(1, n, i + 1)
        vals = np.array([[number((cells.get((m, c)) or {}).get(metric)) for c in conds] for m in methods], dtype=float)
        ax.imshow(np.ma.masked_invalid(vals), cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(conds)), conds, rotation=40, ha="right", fontsize=7)
        ax.set_yticks(range(len(methods)), methods if i == 0 else [""] * len(methods), fontsize=8)
        ax.set_title(metric, fontsize=9)
        for (r, c), v in np.ndenumerate(vals):
            ax.text(c, r, _cell(kind, None if np.isnan(v) else float(v), metric), ha="center", va="center", fontsize=7, color="w")
    fig.suptitle(f"{kind} sweep", fontsize=10)
    return save_png(fig, path)


def write_sweep_tables(out_dir: Path, result: dict) -> dict[str, Path]:
    """results.json, results.csv and results.md of a sweep."""
    table = flatten_sweep(result)
    return {RESULTS_FILE: write_results(out_dir / RESULTS_FILE, result),
            RESULTS_CSV: atomic.write_text(out_dir / RESULTS_CSV, table.to_csv(index=False, na_rep="nan")),
            RESULTS_MD: atomic.write_text(out_dir / RESULTS_MD, markdown(result))}
