"""`tiermap eval sweep`: finding the prediction folders of a layout, and one-line errors for bad layouts and folders."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaluation.sweep import Leaf, find_leaves, gt_folders
from tiermap.app.cli import app
from tiermap.formats.base import SchemaError


def tree(root: Path, *paths: str) -> Path:
    for p in paths:
        (root / p).mkdir(parents=True, exist_ok=True)
    return root


def test_layouts(tmp_path: Path) -> None:
    root = tree(tmp_path / "pred", "cg/baseline/room0", "cg/nominal/room0", "bbq/baseline/room1", "bbq/baseline/notes.txt.d")
    (root / "cg/baseline/README").write_text("not a folder")
    leaves = find_leaves(root, scenes=["room0", "room1"])
    assert [lf.key for lf in leaves] == ["bbq/baseline/room1", "cg/baseline/room0", "cg/nominal/room0"]
    assert leaves[1] == Leaf("cg", "baseline", "room0", root / "cg/baseline/room0")
    assert [lf.key for lf in find_leaves(root, scenes=["room1"])] == ["bbq/baseline/room1"]
    flat = tree(tmp_path / "flat", "room0/cg", "room1/cg", "room1/bbq")
    assert [lf.key for lf in find_leaves(flat, "{scene}/{method}")] == ["cg/-/room0", "bbq/-/room1", "cg/-/room1"]
    prefixed = tree(tmp_path / "pre", "run_cg/cond_dark/scene_a")
    assert [lf.key for lf in find_leaves(prefixed, "run_{method}/cond_{condition}/scene_{scene}")] == ["cg/dark/a"]


@pytest.mark.parametrize("layout", ["{method}/{condition}", "{method}/{room}/{scene}", "/{method}/{scene}", "{scene}/{scene}"])
def test_bad_layout_is_one_line(tmp_path: Path, layout: str) -> None:
    with pytest.raises(SchemaError, match=r"--layout: field 'layout': expected a relative path of \{method\}, \{condition\} and \{scene\}"):
        find_leaves(tree(tmp_path, "a/b/c"), layout)


def test_no_folders_and_missing_gt_scene(tmp_path: Path) -> None:
    root = tree(tmp_path / "pred", "cg/baseline")
    with pytest.raises(SchemaError, match=r"pred: field '--layout': expected prediction folders matching \{method\}/\{condition\}/\{scene\}"):
        find_leaves(root)
    tree(root, "cg/baseline/room0", "cg/baseline/room9")
    gt = tree(tmp_path / "gt", "room0")
    (gt / "room0/gt_categories.json").write_text("{}")
    with pytest.raises(SchemaError, match=r"gt: field '<scenes>': expected a GT scene folder \(with gt_categories.json\) for every predicted scene, got \['room9'\]"):
        gt_folders(gt, find_leaves(root))
    assert gt_folders(gt, find_leaves(root, scenes=["room0"])) == {"room0": gt / "room0"}


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    root = tree(tmp_path / "pred", "cg/baseline/room0")
    runner = CliRunner()
    base = ["eval", "sweep", "--predictions", str(root), "--gt-dir", str(tmp_path / "nogt"), "--out", str(tmp_path / "out")]
    for args, msg in ((["bogus"], "unknown sweep kind `bogus` (expected segmentation, retrieval, osma, vqa)"),
                      (["osma", "--cluster", "nowhere"], "unknown --cluster `nowhere`"),
                      (["osma"], "nogt: field '--gt-dir': expected a released GT folder with one sub-folder per scene")):
        res = runner.invoke(app, [*base[:2], *args, *base[2:]])
        assert res.exit_code == 2 and msg in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert not (tmp_path / "out").exists()
