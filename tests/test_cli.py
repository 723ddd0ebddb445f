"""CLI surface, environment doctor, and the torch/torchvision/open_clip/open3d coexistence in one venv."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import BIN, REPO, run

COMMANDS = ["generate", "annotate", "aggregate", "clutter", "validate", "release", "doctor", "demo", "eval", "baseline"]


def test_help_lists_every_command_with_a_description() -> None:
    out = run([str(BIN / "tiermap"), "--help"], REPO).stdout
    for cmd in COMMANDS:
        line = next((ln for ln in out.splitlines() if ln.strip("│ ").startswith(cmd + " ")), None)
        assert line is not None and len(line.strip("│ ").split(None, 1)[1]) > 10, (cmd, out)
    for group, subs in {"generate": ["scene", "sequence", "gt", "closeups"], "annotate": ["crops", "serve", "push", "pull", "simulate", "suggest", "users", "lexicon"]}.items():
        sub_out = run([str(BIN / "tiermap"), group, "--help"], REPO).stdout
        assert all(f" {s} " in sub_out for s in subs), sub_out


def test_doctor_reports_missing_remote_with_fix(tmp_path: Path) -> None:
    run(["git", "init", "-q"], tmp_path)
    run([str(BIN / "dvc"), "init", "-q"], tmp_path)
    res = run([str(BIN / "tiermap"), "doctor"], tmp_path, check=False)
    assert res.returncode == 1
    assert "ok renderer: open3d raycast" in " ".join(res.stdout.split()) and "missing dvc remote" in res.stdout
    assert "fix: dvc remote add -d" in res.stdout
    run([str(BIN / "dvc"), "remote", "add", "-d", "store", str(tmp_path / "remote")], tmp_path)
    res = run([str(BIN / "tiermap"), "doctor", "--label-studio-url", "http://127.0.0.1:9"], tmp_path, check=False)
    assert "ok dvc remote: remotes: ['store']" in " ".join(res.stdout.split())
    assert "label studio: http://127.0.0.1:9 unreachable" in " ".join(res.stdout.split())


def test_open_clip_sentence_transformers_open3d_import_together() -> None:
    code = ("import torch, open3d, open_clip, sentence_transformers, torchvision;"
            "assert torch.__version__.startswith('2.13.0') and not torch.cuda.is_available();"
            "m = open_clip.create_model('RN50', pretrained=None); print('ok', type(m).__name__)")
    res = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "ok CLIP" in res.stdout


def test_bad_params_file_is_one_line(tmp_path: Path) -> None:
    res = run([str(BIN / "tiermap"), "generate", "scene", "--scene", "x", "--params", str(tmp_path / "none.yaml")], tmp_path, check=False)
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "none.yaml" in res.stderr and "params.yaml" in res.stderr


def test_pipeline_stages_find_tiermap_without_an_activated_venv(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`make demo` runs DVC from a plain shell: stage commands calling `tiermap` must still find it."""
    import pytest

    from tiermap.app.stages import dvc

    run(["git", "init", "-q"], tmp_path)
    run([str(BIN / "dvc"), "init", "-q"], tmp_path)
    (tmp_path / "dvc.yaml").write_text("stages:\n  help:\n    cmd: tiermap --help > help.txt\n    outs:\n      - help.txt\n")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(FileNotFoundError):
        subprocess.run(["tiermap", "--help"], capture_output=True)
    dvc(["repro", "-q"], tmp_path, quiet=True)
    assert "generate" in (tmp_path / "help.txt").read_text()
