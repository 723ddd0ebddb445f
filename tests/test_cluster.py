"""`tiermap repro --cluster`: a real LocalCluster of 2 worker processes on a tiny DVC repository (and the real dvc.yaml's plan)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cluster_fixtures import BIN, lock_outs, make_tiny_repo
from tests.conftest import init_pipeline_repo, small_params
from tiermap.app import cluster as cl
from tiermap.app.cli import app

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
DVC = str(BIN / "dvc")


def dvc(repo: Path, *args: str) -> str:
    res = subprocess.run([DVC, *args], cwd=repo, text=True, capture_output=True, check=True)
    return res.stdout


def serial_twin(repo: Path, tmp: Path) -> dict:
    """The same repository reproduced by a plain serial `dvc repro` in a copy: its dvc.lock outs."""
    twin = tmp / "serial"
    shutil.copytree(repo, twin)
    dvc(twin, "repro")
    return lock_outs(twin)


def assert_clean(repo: Path) -> None:
    assert "Data and pipelines are up to date" in dvc(repo, "status")
    out = dvc(repo, "repro")
    assert "Running stage" not in out, out


def test_cluster_run_matches_serial_repro(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "repo", sleep_x=0.5)
    p = cl.plan(repo)
    assert p.order[0] == "a" and p.order[-1] == "d" and set(p.order) == {"a", "b@x", "b@y", "c@x", "c@y", "d"}
    assert p.stages["d"].preds == ["c@x", "c@y"]
    events: list[dict] = []
    out = cl.repro(repo, "local:2", on_event=lambda c, m: events.append(c))
    assert sorted(out.done) == sorted(p.order) and not out.failed and out.dashboard.startswith("http")
    assert events[-1] == {"done": 6, "running": 0, "waiting": 0, "total": 6}
    assert lock_outs(repo) == serial_twin(repo, tmp_path)
    assert_clean(repo)
    assert cl.plan(repo).order == []  # nothing stale: a second cluster run does nothing


def test_stages_below_an_unchanged_output_are_not_run(tmp_path: Path) -> None:
    """b@y's command changes but not its output: c@y and d are not run, as `dvc repro` skips them; the bar counts stages."""
    repo = make_tiny_repo(tmp_path / "repo", sleep_x=0.0)
    dvc(repo, "repro")
    y = (repo / "dvc.yaml").read_text().replace("${item.sleep} out/a.txt", "${item.sleep}  out/a.txt")  # b's cmd, same output
    (repo / "dvc.yaml").write_text(y)
    twin = tmp_path / "serial"
    shutil.copytree(repo, twin)
    serial_log = dvc(twin, "repro")
    assert "didn't change, skipping" in serial_log and "Running stage 'c@y'" not in serial_log
    p = cl.plan(repo)
    assert sorted(p.order) == ["b@x", "b@y", "c@x", "c@y", "d"] and p.stages["d"].downstream and not p.stages["b@y"].downstream
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-m", "tiermap.app.cli", "repro", "--cluster", "local:2"], cwd=repo, env=env,
                         text=True, capture_output=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "not run (inputs unchanged after the stages above them ran): c@x, c@y, d" in res.stdout, res.stdout
    assert "2 stage(s) recorded in dvc.lock" in res.stdout and "stages" in res.stdout and "5/5" in res.stdout, res.stdout
    assert lock_outs(repo) == lock_outs(twin)
    assert_clean(repo)


def test_label_studio_stages_run_on_the_client(tmp_path: Path) -> None:
    """A stage whose command is `tiermap annotate pull …` (Label Studio) runs in the client process, between worker stages."""
    import yaml

    repo = make_tiny_repo(tmp_path / "repo")
    y = yaml.safe_load((repo / "dvc.yaml").read_text())
    y["stages"]["c"]["do"]["cmd"] = "tiermap annotate pull --help > /dev/null && " + y["stages"]["c"]["do"]["cmd"]
    (repo / "dvc.yaml").write_text(yaml.safe_dump(y, sort_keys=False))
    p = cl.plan(repo)
    assert [n for n in p.order if p.stages[n].on_client] == ["c@x", "c@y"]
    msgs: list[str] = []
    out = cl.repro(repo, "local:1", on_event=lambda c, m: msgs.append(m))
    assert sorted(out.done) == sorted(p.order) and not out.failed
    assert {"c@x running on the client", "c@y running on the client"} <= set(msgs)
    b_done = next(i for i, m in enumerate(msgs) if m.startswith("b@x done"))
    assert msgs.index("c@x running on the client") > b_done  # after its worker predecessor finished
    assert lock_outs(repo) == serial_twin(repo, tmp_path)
    assert_clean(repo)


def test_bad_input_stops_only_its_branch(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "repo", sleep_x=0.5)
    (repo / "data/y.txt").write_text("BAD input\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-m", "tiermap.app.cli", "repro", "--cluster", "local:2"], cwd=repo, env=env,
                         text=True, capture_output=True)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "error: b@y: exit 1: step.py: bad input in data/y.txt" in res.stdout
    assert "not run (upstream failed): c@y, d" in res.stdout and "Dask dashboard: http" in res.stdout
    locked = lock_outs(repo)
    assert sorted(locked) == ["a", "b@x", "c@x"] and not (repo / "out/d.txt").exists()
    status = dvc(repo, "status")
    assert "b@y:" in status and "c@x:" not in status and "b@x:" not in status


def test_bad_spec_and_target_are_one_line(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "repo")
    runner = CliRunner()
    for args, msg in ((["--cluster", "bogus"], "unknown --cluster `bogus`"),
                      (["nosuch", "--cluster", "local:1"], "`nosuch` is not a stage of dvc.yaml")):
        res = runner.invoke(app, ["repro", *args, "--repo", str(repo)])
        assert res.exit_code == 2 and msg in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert cl.parse_spec("local") == ("local", None) and cl.parse_spec("local:3") == ("local", 3)
    assert cl.parse_spec("tcp://10.0.0.1:8786") == ("tcp", "tcp://10.0.0.1:8786") and cl.parse_spec("slurm") == ("slurm", None)


def test_slurm_job_script_from_params() -> None:
    from tiermap.formats.params import read_params

    block = read_params(REPO / "params.yaml")[0].cluster.model_dump()
    c = cl.slurm_cluster(block)
    try:
        script = c.job_script()
    finally:
        c.close()
    assert f"#SBATCH -p {block['queue']}" in script and f"#SBATCH -t {block['walltime']}" in script
    assert f"#SBATCH --mem={block['memory'].removesuffix('B')}" in script and f"--cpus-per-task={block['cores']}" in script


def test_real_pipeline_plan(tmp_path: Path) -> None:
    """On the project's dvc.yaml: foreach/matrix items are stages, push/pull stay on the client, targets pull in upstream."""
    repo = init_pipeline_repo(tmp_path / "repo", small_params(["baseline", "nominal"]))
    p = cl.plan(repo)
    assert {"scene@room0", "sequence@room0-baseline", "sequence@room0-nominal", "scene_gt@room0", "validate"} <= set(p.order)
    assert p.stages["push"].on_client and p.stages["pull"].on_client and not p.stages["crops@room0"].on_client
    assert p.stages["sequence@room0-nominal"].preds == ["scene@room0"]
    assert p.order.index("pull") > p.order.index("push") > p.order.index("crops@room0")
    assert sorted(cl.plan(repo, ["sequence"]).order) == ["scene@room0", "sequence@room0-baseline", "sequence@room0-nominal"]
