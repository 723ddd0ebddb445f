"""`tiermap repro --cluster local:2` on the real two-scene pipeline (tests' small params) up to the scene GT."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster_fixtures import BIN, lock_outs
from tests.conftest import init_pipeline_repo, small_params
from tiermap.app import cluster as cl

pytestmark = pytest.mark.slow
DVC = str(BIN / "dvc")


def dvc(repo: Path, *args: str) -> str:
    return subprocess.run([DVC, *args], cwd=repo, text=True, capture_output=True, check=True).stdout


def two_scene_params(with_bad_scene: bool) -> dict:
    """Two procedural scenes, the reference condition; optionally a third scene from a mesh that is not a PLY (bad input)."""
    p = small_params(["baseline"])
    p["scene"]["room1"] = {"seed": 11, "rooms": ["bedroom"]}
    p["scenes"] = ["room0", "room1"]
    if with_bad_scene:
        p["mesh_scene"] = {"lab": {"source": "mesh", "input": "sources/lab", "seed": 1}}
        p["scenes"].append("lab")
    return p


def kill_one_sequence_worker(client, repo: Path) -> int | None:  # type: ignore[no-untyped-def]
    """Wait until a worker renders a sequence (its first frame written), then SIGKILL that worker's process."""
    for _ in range(1200):
        busy = {w: ks for w, ks in client.processing().items() if any("stage-sequence@" in str(k) for k in ks)}
        if busy and any((repo / "datasets/demo/sequences").glob("*/*/results/*")):
            addr = next(iter(busy))
            pid = client.run(os.getpid, workers=[addr])[addr]
            os.kill(pid, signal.SIGKILL)
            return pid
        time.sleep(0.05)
    return None


def test_two_scene_pipeline_on_two_workers(tmp_path: Path) -> None:
    """Same dvc.lock hashes as a serial `dvc repro`, a killed worker recovered, the bad scene stops only its own branch."""
    repo = init_pipeline_repo(tmp_path / "repo", two_scene_params(with_bad_scene=True))
    (repo / "sources/lab").mkdir(parents=True)
    (repo / "sources/lab/room.ply").write_text("not a ply\n")
    (repo / "sources/lab/classes.json").write_text('{"1": "chair"}\n')
    twin = init_pipeline_repo(tmp_path / "serial", two_scene_params(with_bad_scene=False))
    dvc(twin, "repro", "sequence", "scene_gt")

    p = cl.plan(repo, ["sequence", "scene_gt"])
    assert {"sequence@room1-baseline", "scene_gt@room1", "mesh_scene@lab", "scene_gt@lab"} <= set(p.order)
    with cl.connect("local:2") as client:
        result: dict = {}
        th = threading.Thread(target=lambda: result.update(out=cl.execute(repo, p, client)))
        th.start()
        victim = kill_one_sequence_worker(client, repo)
        th.join(timeout=600)
    assert victim is not None and not th.is_alive()
    out = result["out"]

    assert list(out.failed) == ["mesh_scene@lab"]
    assert out.failed["mesh_scene@lab"] == ("mesh_scene@lab: exit 2: error: sources/lab/room.ply: field '<file>': "
                                            "expected a readable PLY mesh (PlyHeaderParseError: line 1: expected 'ply')")
    assert sorted(out.skipped) == ["scene_gt@lab", "sequence@lab-baseline"]
    good = lock_outs(repo)
    assert sorted(good) == sorted(n for n in p.order if "lab" not in n) == sorted(out.done)
    assert good == {n: v for n, v in lock_outs(twin).items() if n in good}  # byte-identical to the serial build
    seqs = repo / "datasets/demo/sequences"
    assert not [f for f in seqs.rglob("*") if f.name.endswith((".tmp", ".partial"))]  # the killed render left nothing
    status = dvc(repo, "status", "sequence", "scene_gt")
    assert "sequence@lab-baseline:" in status and "scene_gt@lab:" in status and "scene_gt@room0" not in status and "sequence@room1-baseline" not in status

    params = yaml.safe_load((repo / "params.yaml").read_text())  # the bad scene dropped: nothing left to run
    params["scenes"], params["mesh_scene"] = ["room0", "room1"], {}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert cl.plan(repo, ["sequence", "scene_gt"]).order == []
    shutil.rmtree(twin)
