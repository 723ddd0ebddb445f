"""Install footprint: the evaluator's core install (`pip install tiermap`) next to the full one (`tiermap[all]`).

Builds the project's wheel, then for each variant creates a clean venv (no inherited site-packages) and installs the
wheel with `-c constraints.txt` (the versions `make setup` uses; torch stays the 2.13.0 CPU build). Prints the
install's wall time, the size of its site-packages (MB, apparent file sizes), its number of distributions, and the
time of `tiermap --help`, then the core/full ratios. Timings assume pip's cache is warm (a first run also downloads);
the 2 CPUs are shared, so install times vary by ~20 %.

    python bench/bench_install.py          # core and full (~3-4 min, ~5 GB of disk while it runs)
    python bench/bench_install.py --keep   # keep the venvs under .tmp/bench_install/
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".tmp" / "bench_install"
VARIANTS = {"core": "", "full": "[all]"}


def tree_mb(path: Path) -> float:
    """Apparent size of every file under path, in MB."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total / 1e6


def measure(name: str, wheel: Path) -> dict[str, float]:
    venv = WORK / name
    shutil.rmtree(venv, ignore_errors=True)
    # No PYTHONPATH: a checkout on it (with its tiermap.egg-info) would count as tiermap already installed.
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    py = venv / "bin" / "python"
    t = time.perf_counter()
    res = subprocess.run([str(py), "-m", "pip", "install", "-q", "-c", str(REPO / "constraints.txt"), f"{wheel}{VARIANTS[name]}"],
                         capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t
    if res.returncode:
        sys.exit(f"pip install failed:\n{res.stderr[-3000:]}")
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True, env=env).stdout.strip())
    n_dists = len(list(site.glob("*.dist-info")))
    t = time.perf_counter()
    subprocess.run([str(venv / "bin" / "tiermap"), "--help"], check=True, capture_output=True, env=env, cwd=WORK)
    help_s = time.perf_counter() - t
    return {"seconds": seconds, "mb": tree_mb(site), "dists": n_dists, "help_s": help_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the venvs")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(WORK / "whl", ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(WORK / "whl"), str(REPO)],
                   check=True, capture_output=True)
    wheel = next((WORK / "whl").glob("tiermap-*.whl"))
    res = {}
    for name in VARIANTS:
        print(f"-- {name}: pip install -c constraints.txt {wheel.name}{VARIANTS[name]}", flush=True)
        res[name] = measure(name, wheel)
        r = res[name]
        print(f"   {r['seconds']:6.1f} s install, {r['mb']:7.0f} MB site-packages, {r['dists']:4d} distributions, "
              f"tiermap --help {r['help_s']:.2f} s", flush=True)
        if not args.keep:
            shutil.rmtree(WORK / name, ignore_errors=True)
    c, f = res["core"], res["full"]
    print(f"\n{'':<6} {'install s':>10} {'site-packages MB':>17} {'distributions':>14} {'--help s':>9}")
    for name, r in res.items():
        print(f"{name:<6} {r['seconds']:10.1f} {r['mb']:17.0f} {r['dists']:14d} {r['help_s']:9.2f}")
    print(f"core/full: size {c['mb'] / f['mb']:.2f} ({f['mb'] - c['mb']:.0f} MB less), install time {c['seconds'] / f['seconds']:.2f}, "
          f"distributions {c['dists'] / f['dists']:.2f}")


if __name__ == "__main__":
    main()
