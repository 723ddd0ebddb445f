"""Report plot speed: the top-down category map of a 300,000-point scene; prints figures, asserts nothing.

    python bench/bench_plots.py [--points 300000] [--repeat 3]

Target (it was a test's wall-clock bound before): under 6 s per map on 2 cores. The map subsamples to 200,000 points
deterministically; the time of plotting all points without subsampling is printed beside it as the reference.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation import plots  # noqa: E402
from tiermap.formats.openlex3d import CATEGORIES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    pts = rng.random((args.points, 3)) * [6.0, 4.0, 2.5]
    names = np.array([*CATEGORIES, "none"])
    cat = names[(pts[:, 0] // 1).astype(int) % len(names)]
    with tempfile.TemporaryDirectory() as tmp:
        times = []
        for k in range(args.repeat):
            t0 = time.perf_counter()
            plots.plot_topdown_categories(pts, cat, Path(tmp) / f"map{k}.png", title="bench")
            times.append(time.perf_counter() - t0)
        keep = plots._subsample
        plots._subsample = lambda n: np.arange(n)  # the reference: every point drawn
        try:
            t0 = time.perf_counter()
            plots.plot_topdown_categories(pts, cat, Path(tmp) / "all.png", title="bench")
            full = time.perf_counter() - t0
        finally:
            plots._subsample = keep
    best = min(times)
    print(f"top-down category map, {args.points:,} points: {best:.2f} s (best of {args.repeat}; target < 6 s)")
    print(f"reference, every point drawn: {full:.2f} s -> ratio {best / full:.2f}")


if __name__ == "__main__":
    main()
