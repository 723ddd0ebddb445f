"""Evaluation report of one result: its tables (results.json / .csv / .md) and its kind's plots."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluation.plots import plot_frequency, plot_relative_change
from evaluation.tables import write_tables


def write_report(
    out_dir: Path, result: dict, *, extra_plots: dict[str, Callable[[Path], Path]] | None = None
) -> dict[str, Path]:
    """Write results.json, results.csv, results.md and the kind's plots (plus `extra_plots`) into out_dir."""
    out_dir = Path(out_dir)
    written = write_tables(out_dir, result)
    if result["kind"] == "segmentation":
        written["frequency.png"] = plot_frequency(result, out_dir / "frequency.png")
    elif result["kind"] == "osma":
        written["relative_change.png"] = plot_relative_change(result, out_dir / "relative_change.png")
    for name, plot in (extra_plots or {}).items():
        written[name] = Path(plot(out_dir / name))
    return written
