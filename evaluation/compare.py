"""Side-by-side comparison of several results.json: overall metrics per method and the best method per row."""
from __future__ import annotations

from pathlib import Path

from evaluation.tables import DASH, flatten, markdown_table
from tiermap.formats.base import SchemaError
from tiermap.formats.results import read_results

LOWER_IS_BETTER = frozenset({"missing", "incorrect"})


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
        return DASH
    target = min(present.values()) if metric in LOWER_IS_BETTER else max(present.values())
    return ", ".join(m for m, v in present.items() if v == target)


def compare(paths: list[Path]) -> str:
    """Markdown table of the overall metrics of several results.json side by side, with the best method per row."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise SchemaError("<compare>", "paths", "at least one results.json", "[]")
    results = [read_results(p) for p in paths]
    kinds = [r["kind"] for r in results]
    majority = max(dict.fromkeys(kinds), key=kinds.count)
    for p, k in zip(paths, kinds):
        if k != majority:
            raise SchemaError(p, "kind", f"{majority!r} like the other results", k)
    names = _method_names(paths, results)
    table: dict[tuple[str, str], dict[str, float | None]] = {}
    for name, p, r in zip(names, paths, results):
        for scope, group, metric, value in flatten(r, p):
            if scope == "overall":
                table.setdefault((group, metric), {})[name] = value
    rows = []
    for (group, metric), values in table.items():
        cells = [DASH if (v := values.get(n)) is None else f"{v:.4f}" for n in names]
        rows.append([f"{group}/{metric}", *cells, _best(metric, values)])
    lines = [f"Comparison ({majority}, overall; lower is better for {', '.join(sorted(LOWER_IS_BETTER))})", ""]
    return "\n".join(lines + markdown_table(["metric", *names, "best"], rows)) + "\n"
