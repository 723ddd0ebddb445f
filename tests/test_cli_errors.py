"""Bad input is one line naming the file and field; a bug keeps its traceback (both CLIs)."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import REPO
from tiermap.app.cli import app
from tiermap.formats.base import SchemaError


def invoke(args: list[str]):  # type: ignore[no-untyped-def]
    """Run `tiermap ARGS` in this process (so tests can monkeypatch the library)."""
    return CliRunner().invoke(app, args)


def assert_one_line(res, *words: str) -> None:  # type: ignore[no-untyped-def]
    """Exit 2, no traceback, exactly one line on stderr containing every word."""
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert isinstance(res.exception, SystemExit), res.exception
    err = res.stderr.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def params_file(tmp_path: Path, edit=None, text: str | None = None) -> Path:  # type: ignore[no-untyped-def]
    """The repository's params.yaml, changed by `edit` (a function of the mapping) or replaced by `text`."""
    p = yaml.safe_load((REPO / "params.yaml").read_text())
    if edit:
        edit(p)
    path = tmp_path / "my-params.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(p, sort_keys=False))
    return path


def scene_cmd(tmp_path: Path, params: Path, *extra: str) -> list[str]:
    return ["generate", "scene", "--scene", "room0", "--root", str(tmp_path / "data"), "--params", str(params), *extra]


@pytest.mark.parametrize("block", ["trajectory", "gt"])
def test_params_without_a_block_is_one_line(tmp_path: Path, block: str) -> None:
    params = params_file(tmp_path, lambda p: p.pop(block))
    assert_one_line(invoke(scene_cmd(tmp_path, params)), "my-params.yaml", f"field '{block}'", "missing")
    assert not (tmp_path / "data").exists()


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    text = (REPO / "params.yaml").read_text().replace("trajectory:", "trajectory: [", 1)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("trajectory: ["))
    res = invoke(scene_cmd(tmp_path, params_file(tmp_path, text=text)))
    assert_one_line(res, "my-params.yaml", "field 'line ", ", column ", "valid YAML")
    got = int(res.stderr.split("field 'line ")[1].split(",")[0])
    assert line < got <= line + 3  # the parser notices the open bracket on one of the next lines


@pytest.mark.parametrize("seed", ["abc", "3"])
def test_string_seed_in_params_names_file_and_field(tmp_path: Path, seed: str) -> None:
    params = params_file(tmp_path, lambda p: p["scene"]["room0"].update(seed=seed))
    assert_one_line(invoke(scene_cmd(tmp_path, params)), "my-params.yaml", "field 'scene.room0.seed'", "integer")
    assert not (tmp_path / "data").exists()


def test_string_seed_option_is_one_line(tmp_path: Path) -> None:
    assert_one_line(invoke(scene_cmd(tmp_path, params_file(tmp_path), "--seed", "abc")), "'--seed'", "integer")
    assert not (tmp_path / "data").exists()


def test_bug_in_a_pipeline_command_keeps_its_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tiermap.app import stages

    def broken(*a, **k):  # type: ignore[no-untyped-def]
        raise ValueError("operands could not be broadcast together with shapes (3,) (4,)")

    monkeypatch.setattr(stages, "make_scene", broken)
    res = invoke(scene_cmd(tmp_path, params_file(tmp_path)))
    assert res.exit_code == 1 and isinstance(res.exception, ValueError), (res.exit_code, res.output)

    def refused(*a, **k):  # type: ignore[no-untyped-def]
        raise SchemaError(tmp_path / "scene.json", "objects.0.obb", "a box")

    monkeypatch.setattr(stages, "make_scene", refused)
    assert_one_line(invoke(scene_cmd(tmp_path, params_file(tmp_path))), "scene.json: field 'objects.0.obb'")


def test_os_errors_are_one_line_only_for_paths_the_user_gave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluation.omq

    gt, res_file = tmp_path / "gt.json", tmp_path / "map.json"
    args = ["eval", "omq", "--ground-truth", str(gt), "--results", str(res_file), "--out", str(tmp_path / "out")]
    for path, one_line in ((gt, True), (tmp_path / "out" / "x", True), (Path("/usr/share/internal.bin"), False)):
        def missing(*a, path: Path = path, **k):  # type: ignore[no-untyped-def]
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))

        monkeypatch.setattr(evaluation.omq, "score_omq", missing)
        res = invoke(args)
        if one_line:
            assert_one_line(res, str(path))
        else:
            assert res.exit_code == 1 and isinstance(res.exception, FileNotFoundError), res.output


def test_bug_in_scoring_keeps_its_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluation.omq

    def broken(*a, **k):  # type: ignore[no-untyped-def]
        raise ValueError("zero-size array to reduction operation minimum which has no identity")

    monkeypatch.setattr(evaluation.omq, "score_omq", broken)
    res = invoke(["eval", "omq", "--ground-truth", str(tmp_path / "gt.json"), "--results", str(tmp_path / "r.json"),
                  "--out", str(tmp_path / "out")])
    assert res.exit_code == 1 and isinstance(res.exception, ValueError), res.output
