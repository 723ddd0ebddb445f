"""Serial `dvc repro` vs `tiermap repro --cluster local:2` on the real pipeline: two scenes x five conditions, up to the crops.

Builds two identical git + DVC repositories (the project's dvc.yaml, two procedural scenes, all five lighting conditions,
a reduced render size), reproduces every stage before the Label Studio push in one serially and in the other on a
2-process LocalCluster, checks the dvc.lock hashes are equal, and prints wall times, their ratio, and the DAG's ideal
speed-up: the sum of the measured stage times over the makespan of a greedy 2-worker schedule of the same DAG.
WIDTH/HEIGHT/FPS (environment) change the render size and frame rate.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster_fixtures import BIN, lock_outs  # noqa: E402
from tests.conftest import init_pipeline_repo, small_params  # noqa: E402
from tiermap.app import cluster as cl  # noqa: E402

WORKERS = 2
TARGETS = ["sequence", "preview", "crops"]  # every stage before `push`
CONDITIONS = ["baseline", "nominal", "camera_light", "dynamic_lights", "velocity"]


def makespan(times: dict[str, float], preds: dict[str, list[str]], order: list[str], workers: int) -> float:
    """Greedy list schedule: each stage starts when its predecessors ended and a worker is free."""
    free, end = [0.0] * workers, {}
    for n in order:
        ready = max((end[p] for p in preds[n]), default=0.0)
        i = min(range(workers), key=lambda k: max(free[k], ready))
        end[n] = free[i] = max(free[i], ready) + times[n]
    return max(end.values())


def params() -> dict:
    p = small_params(CONDITIONS)
    p["render"].update(width=int(os.environ.get("WIDTH", "160")), height=int(os.environ.get("HEIGHT", "120")))
    p["trajectory"].update(fps=int(os.environ.get("FPS", "2")))
    p["scene"]["room1"] = {"seed": 11, "rooms": ["bedroom", "kitchen"]}
    p["scenes"] = ["room0", "room1"]
    return p


def main() -> None:
    env = {"DVC_NO_ANALYTICS": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           **{k: "bench" for k in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")},
           **{k: "bench@example.org" for k in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")}}
    os.environ.update(env)
    with tempfile.TemporaryDirectory() as tmp:
        serial = init_pipeline_repo(Path(tmp) / "serial", params())
        par = Path(tmp) / "cluster"
        shutil.copytree(serial, par)
        p = cl.plan(par, TARGETS)
        t0 = time.perf_counter()
        subprocess.run([str(BIN / "dvc"), "repro", *TARGETS], cwd=serial, env={**os.environ}, check=True, capture_output=True)
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = cl.repro(par, f"local:{WORKERS}", TARGETS)
        t_cluster = time.perf_counter() - t0
        assert not out.failed and sorted(out.done) == sorted(p.order), out.failed
        assert lock_outs(serial) == lock_outs(par), "cluster and serial dvc.lock outs differ"
        preds = {n: p.stages[n].preds for n in p.order}
        span = makespan(out.seconds, preds, p.order, WORKERS)
        work = sum(out.seconds.values())
    w, h = params()["render"]["width"], params()["render"]["height"]
    print(f"2 scenes x {len(CONDITIONS)} conditions, {w}x{h}: {len(p.order)} stages up to the crops, "
          f"{WORKERS} workers (nproc {os.cpu_count()})")
    print(f"serial dvc repro:                  {t_serial:6.1f} s")
    print(f"tiermap repro --cluster local:{WORKERS}:    {t_cluster:6.1f} s (cluster start and per-stage dvc commit included)")
    print(f"  of which running the stages:     {out.wall:6.1f} s (sum of stage times {work:.1f} s; "
          f"ideal {WORKERS}-worker makespan {span:.1f} s)")
    print(f"ratio serial / cluster:            {t_serial / t_cluster:6.2f}x   "
          f"ideal DAG speed-up with {WORKERS} workers: {work / span:.2f}x")
    print("dvc.lock outs identical: yes")


if __name__ == "__main__":
    main()
