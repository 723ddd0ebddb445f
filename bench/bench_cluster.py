"""Serial `dvc repro` vs `tiermap repro --cluster local:2` on the tiny two-branch DAG (a → b@x, b@y → c@x, c@y → d).

Every stage sleeps STAGE seconds (python step.py, outputs written through temp + rename), so the numbers show the runner's
overhead and the DAG's parallelism rather than the machine's load. Prints wall times, their ratio, and the ideal speed-up
(sum of stage times / the makespan of a greedy 2-worker schedule of the same DAG).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster_fixtures import BIN, lock_outs, make_tiny_repo  # noqa: E402
from tiermap.app.cluster import plan  # noqa: E402

STAGE = float(os.environ.get("STAGE", "2.0"))
WORKERS = 2


def makespan(times: dict[str, float], preds: dict[str, list[str]], order: list[str], workers: int) -> float:
    """Greedy list schedule: each stage starts when its predecessors ended and a worker is free."""
    free, end = [0.0] * workers, {}
    for n in order:
        ready = max((end[p] for p in preds[n]), default=0.0)
        i = min(range(workers), key=lambda k: max(free[k], ready))
        end[n] = free[i] = max(free[i], ready) + times[n]
    return max(end.values())


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0, res.stdout


def main() -> None:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           **{k: "bench" for k in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")},
           **{k: "bench@example.org" for k in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")}}
    os.environ.update(env)
    with tempfile.TemporaryDirectory() as tmp:
        serial = make_tiny_repo(Path(tmp) / "serial", sleep_x=STAGE, sleep=STAGE)
        par = Path(tmp) / "cluster"
        shutil.copytree(serial, par)
        p = plan(par)
        t_serial, _ = timed([str(BIN / "dvc"), "repro"], serial, env)
        t_cluster, log = timed([sys.executable, "-m", "tiermap.app.cli", "repro", "--cluster", f"local:{WORKERS}"], par, env)
        t_exec = float(re.search(r"recorded in dvc.lock in ([0-9.]+) s", log).group(1))
        assert lock_outs(serial) == lock_outs(par), "cluster and serial dvc.lock outs differ"
        times = {n: STAGE + 0.05 for n in p.order}  # the sleep plus one python start
        preds = {n: p.stages[n].preds for n in p.order}
        span = makespan(times, preds, p.order, WORKERS)
        ideal = sum(times.values()) / span
    print(f"{len(p.order)} stages, {STAGE:.1f} s each, {WORKERS} workers (nproc {os.cpu_count()})")
    print(f"serial dvc repro:               {t_serial:6.1f} s")
    print(f"tiermap repro --cluster local:{WORKERS}: {t_cluster:6.1f} s (cluster start-up and per-stage dvc commit included)")
    print(f"  of which running the stages:  {t_exec:6.1f} s (ideal 2-worker makespan {span:.1f} s; the rest: CLI import, dvc plan, cluster start)")
    print(f"ratio serial / cluster:         {t_serial / t_cluster:6.2f}x   stages only: {t_serial / t_exec:.2f}x   "
          f"ideal DAG speed-up with {WORKERS} workers: {ideal:.2f}x")
    print("dvc.lock outs identical: yes")


if __name__ == "__main__":
    main()
