"""Shared fixtures: offline environment, and a small real DVC pipeline repository built once per session."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tiermap.app.demo import label_with_simulated_annotators
from tiermap.formats.layout import DatasetPaths

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="session", autouse=True)
def offline_env(tmp_path_factory: pytest.TempPathFactory) -> None:
    """DVC/HF offline settings, a private DVC site cache, a git identity, the venv's bin on PATH."""
    site = tmp_path_factory.mktemp("dvc_site_cache")
    os.environ.update({
        "DVC_NO_ANALYTICS": "1", "DVC_SITE_CACHE_DIR": str(site), "CI": "true",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
        "GIT_AUTHOR_NAME": "tiermap-test", "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "tiermap-test", "GIT_COMMITTER_EMAIL": "t@example.org",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    os.environ.pop("TIERMAP_DATA", None)


def run(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command, failing the test with its output when it fails unexpectedly."""
    res = subprocess.run(cmd, cwd=cwd, text=True, capture_output=True)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} -> {res.returncode}\nstdout:\n{res.stdout[-3000:]}\nstderr:\n{res.stderr[-3000:]}")
    return res


def small_params(conditions: list[str] | None = None) -> dict:
    """params.yaml of the repo, shrunk so a full pipeline run takes seconds."""
    p = yaml.safe_load((REPO / "params.yaml").read_text())
    p["render"].update(width=48, height=36)
    p["trajectory"].update(fps=1)  # the default coverage planner: the path sees both rooms, as the product does
    p["conditions"] = conditions or ["baseline", "nominal", "velocity"]
    p["gt"]["min_pixels"] = 2
    p["annotation"]["crops"].update(min_pixels=2, size=32)
    p["annotation"]["closeups"].update(size=32, score_size=12)
    return p


def init_pipeline_repo(path: Path, params: dict) -> Path:
    """A git + DVC repo with the project's dvc.yaml and the given params, not yet reproduced."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "dvc.yaml", path / "dvc.yaml")
    (path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["git", "init", "-q", "-b", "main"], path)
    run([str(BIN / "dvc"), "init", "-q"], path)
    run([str(BIN / "dvc"), "config", "core.analytics", "false"], path)
    run([str(BIN / "dvc"), "config", "core.check_update", "false"], path)
    return path


@pytest.fixture(scope="session")
def crops_dataset(tmp_path_factory: pytest.TempPathFactory) -> DatasetPaths:
    """A dataset with one rendered scene (reference condition only), its scene GT, close-ups and crops; copy before changing it."""
    from tiermap.app import stages

    p = small_params(["baseline"])
    ds = DatasetPaths(tmp_path_factory.mktemp("crops") / "datasets", "demo")
    stages.make_scene(ds, "room0", p)
    stages.make_sequence(ds, "room0", "baseline", p)
    stages.make_scene_gt(ds, "room0", p, out=stages.build_dir(ds, "room0"))
    stages.make_closeups(ds, "room0", p)
    stages.make_crops(ds, "room0", p)
    return ds


@pytest.fixture(scope="session")
def seated_dataset(crops_dataset: DatasetPaths, tmp_path_factory: pytest.TempPathFactory) -> DatasetPaths:
    """The crops dataset plus two simulated annotators' Label Studio seats (servers stopped); copy before use."""
    from annotation import ls_server
    from annotation.annotators import ensure_simulated

    ds = DatasetPaths(tmp_path_factory.mktemp("seated") / "datasets", "demo")
    shutil.copytree(crops_dataset.dir, ds.dir)
    try:
        ensure_simulated(ds, 2, log=lambda *_: None)
    finally:
        ls_server.stop(ds)
    return ds


@pytest.fixture
def ls_dataset(seated_dataset: DatasetPaths, tmp_path: Path) -> Iterator[DatasetPaths]:
    """A private copy of the seated dataset with its seats' servers running (stopped afterwards)."""
    from annotation import ls_server

    ds = DatasetPaths(tmp_path / "datasets", "demo")
    shutil.copytree(seated_dataset.dir, ds.dir)
    ls_server.start(ds, log=lambda *_: None)
    yield ds
    ls_server.stop(ds)


@pytest.fixture(scope="session")
def built_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reproduced pipeline repo (scenes, sequences, GT, validation) with labels and everything committed."""
    repo = init_pipeline_repo(tmp_path_factory.mktemp("template") / "repo", small_params())
    dvc = str(BIN / "dvc")
    run([dvc, "repro", "sequence", "scene_gt"], repo)
    # Real Label Studio with 4 simulated annotators, exactly as `make demo` labels the dataset.
    label_with_simulated_annotators(repo, DatasetPaths(repo / "datasets", "demo"), ["room0"], 4)
    run([dvc, "repro"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "pipeline"], repo)
    return repo


@pytest.fixture
def pipeline_repo(built_repo: Path, tmp_path: Path) -> Path:
    """A private copy of the built repo (cache included) for tests that change it."""
    dst = tmp_path / "repo"
    shutil.copytree(built_repo, dst, symlinks=True)
    return dst
