"""Evaluation report of one result: its tables (results.json / .csv / .md) and its kind's plots."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluation.plots import plot_frequency, plot_relative_change
from evaluation.tables import write_tables
from tiermap import atomic
from tiermap.formats.base import InputError


def write_report(
    out_dir: Path, result: dict, *, extra_plots: dict[str, Callable[[Path], Path]] | None = None
) -> dict[str, Path]:
    """Write results.json, results.csv, results.md and the kind's plots (plus `extra_plots`) into out_dir, all or none."""
    out_dir = Path(out_dir)
    try:
        with atomic.staged_files(out_dir) as tmp:
            if isinstance(result, dict) and result.get("kind") == "sweep":
                from evaluation.sweep_report import PLOT_FILE, plot, write_sweep_tables

                written = write_sweep_tables(tmp, result)
                written[PLOT_FILE] = plot(result, tmp / PLOT_FILE)
            else:
                written = write_tables(tmp, result)
            if result["kind"] == "segmentation":
                written["frequency.png"] = plot_frequency(result, tmp / "frequency.png")
            elif result["kind"] == "osma":
                written["relative_change.png"] = plot_relative_change(result, tmp / "relative_change.png")
            for name, plot in (extra_plots or {}).items():
                written[name] = Path(plot(tmp / name))
    except OSError as err:
        raise InputError(f"{out_dir}: the report could not be written, nothing was ({err.strerror or err})") from err
    return {name: out_dir / p.name for name, p in written.items()}
