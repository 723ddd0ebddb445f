"""Dataset, scene and condition names are plain names: one folder under the data root, never a path out of it."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.test_eval_segmentation import write_toy
from tiermap.app.cli import app
from tiermap.formats.base import SchemaError
from tiermap.formats.layout import DatasetPaths, plain_name
from tiermap.formats.params import check_params

BAD = ["../x", "../../x", "..", ".", "", ".hidden", "a/b", "/abs", "a\\b", "-x", "a b"]
GOOD = ["room0", "office_0", "scene-1.v2", "Demo", "0"]


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.mark.parametrize("name", BAD)
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SchemaError, match="field 'dataset': expected a plain name"):
        DatasetPaths(tmp_path, name)
    ds = DatasetPaths(tmp_path, "demo")
    with pytest.raises(SchemaError, match="field 'scene': expected a plain name"):
        ds.scene_dir(name)
    with pytest.raises(SchemaError, match="field 'condition': expected a plain name"):
        ds.sequence_dir("room0", name)
    with pytest.raises(SchemaError, match="field '--scene'"):
        plain_name(name, "--scene")


@pytest.mark.parametrize("name", GOOD)
def test_plain_names_are_accepted(tmp_path: Path, name: str) -> None:
    ds = DatasetPaths(tmp_path, name)
    assert ds.scene_dir(name) == tmp_path / name / "scenes" / name
    assert ds.sequence_dir(name, name) == tmp_path / name / "sequences" / name / name


COMMANDS = [
    ["generate", "scene", "--scene", "{bad}"],
    ["generate", "scene", "--scene", "room0", "--dataset", "{bad}"],
    ["generate", "sequence", "--scene", "{bad}", "--condition", "baseline"],
    ["generate", "sequence", "--scene", "room0", "--condition", "baseline", "--dataset", "{bad}"],
    ["generate", "gt", "--scene", "{bad}"],
    ["generate", "preview", "--scene", "{bad}"],
    ["generate", "closeups", "--scene", "{bad}"],
    ["annotate", "crops", "--scene", "{bad}"],
    ["annotate", "crops", "--dataset", "{bad}"],
    ["annotate", "lexicon", "--dataset", "{bad}"],
    ["annotate", "serve", "--stop", "--dataset", "{bad}"],
    ["annotate", "users", "list", "--dataset", "{bad}"],
    ["annotate", "users", "add", "a@example.org", "--dataset", "{bad}"],
    ["aggregate", "--dataset", "{bad}"],
    ["clutter", "--dataset", "{bad}"],
    ["validate", "--dataset", "{bad}"],
    ["release", "0.1.0", "--dataset", "{bad}"],
]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c[:3]))
@pytest.mark.parametrize("bad", ["../../x", ".."])
def test_every_command_refuses_a_path_as_a_name(tmp_path: Path, cmd: list[str], bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "work" / "datasets"
    root.mkdir(parents=True)
    (tmp_path / "work" / "params.yaml").write_text((REPO / "params.yaml").read_text())
    monkeypatch.chdir(tmp_path / "work")
    before = files_under(tmp_path)
    res = CliRunner().invoke(app, [c.replace("{bad}", bad) for c in cmd] + ["--root", str(root)])
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    err = res.stderr.strip()
    option = "--scene" if cmd[cmd.index("{bad}") - 1] == "--scene" else "--dataset"
    assert err.count("\n") == 0 and f"field '{option}': expected a plain name" in err and repr(bad) in err, err
    assert files_under(tmp_path) == before  # nothing written, inside or outside the data root


@pytest.mark.parametrize("field, value, where", [
    ("scenes", ["room0", "../x"], "scenes.1"),
    ("conditions", ["baseline", "a/b"], "conditions.1"),
    ("dataset", ".hidden", "dataset"),
])
def test_params_names_are_plain(field: str, value: object, where: str) -> None:
    p = yaml.safe_load((REPO / "params.yaml").read_text())
    p[field] = value
    p["lighting"].setdefault("a/b", {})
    with pytest.raises(SchemaError, match=f"params.yaml: field '{where}': expected a plain name"):
        check_params(p)


def test_eval_scene_must_be_a_scene_of_the_gt_folder(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    res = CliRunner().invoke(app, ["eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]),
                                   "--text-features", str(f["npz"]), "--scene", "../gt/toy", "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "field '--scene'" in res.stderr and "Traceback" not in res.stderr, res.output


def test_the_gt_folder_of_scannetpp_copies_is_not_a_scene(tmp_path: Path) -> None:
    ds = DatasetPaths(tmp_path, "demo")
    with pytest.raises(SchemaError, match="field 'scene': expected a scene name other than 'prepared_semantics'"):
        ds.scene_dir("prepared_semantics")
    (ds.gt / "prepared_semantics").mkdir(parents=True)
    (ds.gt / "room0").mkdir()
    assert ds.gt_scenes() == ["room0"]
