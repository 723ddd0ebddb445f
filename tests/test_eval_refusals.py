"""`tiermap eval` refuses, in one line naming the file and field, what it would otherwise mis-score; reports are all or nothing."""
from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.test_eval_segmentation import PROMPTS, write_toy
from tiermap.app.cli import app

REPORT = ("results.json", "results.csv", "results.md", "frequency.png", "topdown_toy.png")


def seg_args(f: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return ["eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]), "--text-features", str(f["npz"]),
            "--top-n", "1", "2", "--set-ranking", "--out", str(out), *extra]


def invoke(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, args)


def assert_one_line(res, *words: str) -> None:  # type: ignore[no-untyped-def]
    """Exit 2 with exactly one line on stderr besides progress bars, no traceback, containing every word."""
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    lines = [ln for ln in res.stderr.strip().splitlines() if "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def save_npz_as(path: Path) -> None:
    """Replace an .npy file by an .npz archive of the same array, keeping the .npy name."""
    arr = np.load(path)
    with open(path, "wb") as fh:
        np.savez(fh, arr)


def test_toy_scores_before_any_change(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    res = invoke(seg_args(f, tmp_path / "out"))
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "out" / "results.json").read_text())
    assert r["frequency"]["top1"]["clutter"] == pytest.approx(1 / 3)  # object 4's only clutter point
    assert r["set_ranking"]["overall"] == pytest.approx(0.6125, abs=1e-6)


def test_labels_of_objects_not_in_the_gt_cloud_are_refused(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    cats = f["scene"] / "gt_categories.json"
    data = json.loads(cats.read_text())
    data["dataset"]["samples"][3]["object_id"] = 44  # object 4's labels under an id the cloud does not have
    cats.write_text(json.dumps(data))
    res = invoke(seg_args(f, tmp_path / "out"))  # before: exit 0, clutter 33.3 % -> 0 %
    assert_one_line(res, "gt_categories.json: field 'dataset.samples.object_id'", "gt_cloud.ply", "[44]")
    assert not (tmp_path / "out").exists()
    (f["scene"] / "gt_categories_query_to_object_mapping_l0.json").write_text(json.dumps({"level0": {"lamp": [44], "chair": [1]}}))
    res = invoke(["eval", "retrieval", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]), "--text-features", str(f["npz"]),
                  "--out", str(tmp_path / "ret")])
    assert_one_line(res, "gt_categories.json: field 'dataset.samples.object_id'", "[44]")


def test_queries_for_objects_not_in_the_gt_cloud_are_refused(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    (tmp_path / "q.json").write_text(json.dumps({"level0": {"lamp": [4], "chair": [1, 7]}}))
    res = invoke(["eval", "retrieval", "--gt-cloud", str(f["scene"] / "gt_cloud.ply"), "--queries", str(tmp_path / "q.json"),
                  "--predictions", str(f["pred"] / "toy"), "--text-features", str(f["npz"]), "--out", str(tmp_path / "ret")])
    assert_one_line(res, "q.json: field 'object_ids'", "gt_cloud.ply", "[7]")


def test_a_repeated_prompt_is_refused(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    (f["gt"] / "prompt_list.txt").write_text("".join(f"{p}\n" for p in [*PROMPTS, "chair"]))  # before: exit 0, mR changed
    assert_one_line(invoke(seg_args(f, tmp_path / "out")), "prompt_list.txt: field 'line 7'", "already on line 1", "'chair'")


@pytest.mark.parametrize("top_n", [["0"], ["-1"], ["1", "0"]])
def test_top_n_below_one_is_refused(tmp_path: Path, top_n: list[str]) -> None:
    f = write_toy(tmp_path)
    args = seg_args(f, tmp_path / "out")
    i = args.index("--top-n")
    args[i + 1:i + 3] = top_n
    assert_one_line(invoke(args), "--top-n", "whole numbers >= 1")


@pytest.mark.parametrize("case", ["embeddings", "index", "gt_points", "gt_ids", "text_features"])
def test_array_files_of_the_wrong_container_are_refused(tmp_path: Path, case: str) -> None:
    f = write_toy(tmp_path)
    pred = f["pred"] / "toy"
    pts, ids = tmp_path / "pts.npy", tmp_path / "ids.npy"
    from tiermap.formats.openlex3d import read_gt_cloud

    p, i = read_gt_cloud(f["scene"] / "gt_cloud.ply")
    np.save(pts, p)
    np.save(ids, i)
    args = ["eval", "segmentation", "--gt-labels", str(f["scene"] / "gt_categories.json"), "--gt-cloud", str(pts), str(ids),
            "--predictions", str(pred), "--prompt-list", str(f["gt"] / "prompt_list.txt"), "--text-features", str(f["npz"]),
            "--top-n", "1", "--out", str(tmp_path / "out")]
    target = {"embeddings": pred / "embeddings.npy", "index": pred / "index.npy", "gt_points": pts, "gt_ids": ids}.get(case)
    if target is not None:
        save_npz_as(target)
        words = (f"{target.name}: field", "not an .npz archive")
    else:
        np.save(tmp_path / "feats.npy", np.eye(6))
        os.replace(tmp_path / "feats.npy", f["npz"])  # an .npy under the .npz name
        words = ("text.npz: field '<file>'", "a numpy .npz archive", "one .npy array")
    assert_one_line(invoke(args), *words)
    assert not (tmp_path / "out").exists()


def test_point_labels_of_the_wrong_container_are_refused(tmp_path: Path) -> None:
    f = write_toy(tmp_path)
    pred = f["pred"] / "toy"
    (f["scene"] / "objects.json").write_text(json.dumps({"1": "chair", "2": "table", "3": "wall", "4": "lamp"}))
    np.save(pred / "labels.npy", np.zeros(10, np.int64))
    save_npz_as(pred / "labels.npy")
    res = invoke(["eval", "osma", "--gt-cloud", str(f["scene"] / "gt_cloud.ply"), "--predictions", str(pred),
                  "--out", str(tmp_path / "out")])
    assert_one_line(res, "labels.npy: field 'labels'", "not an .npz archive")


def unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot write (root writes everywhere but /proc)."""
    if os.geteuid() == 0:
        return Path("/proc/tiermap-test/out")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    return ro / "out"


@pytest.mark.parametrize("case", ["file in the way", "file as a parent", "unwritable"])
def test_out_is_checked_before_any_scoring(tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluation.layout
    import evaluation.omq

    def never(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("scoring started before --out was checked")

    monkeypatch.setattr(evaluation.layout, "segmentation_scenes", never)
    monkeypatch.setattr(evaluation.omq, "score_omq", never)
    (tmp_path / "report").write_text("a file")
    out = {"file in the way": tmp_path / "report", "file as a parent": tmp_path / "report" / "seg", "unwritable": unwritable(tmp_path)}[case]
    f = write_toy(tmp_path)
    assert_one_line(invoke(seg_args(f, out)), f"{out}: field '--out'")
    omq = ["eval", "omq", "--ground-truth", str(tmp_path / "gt.json"), "--results", str(tmp_path / "r.json"), "--out", str(out)]
    assert_one_line(invoke(omq), f"{out}: field '--out'")
    assert (tmp_path / "report").read_text() == "a file"


def fail_on_second_write(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Make tiermap.atomic's writer run out of disk space on its second file; returns the paths it was asked to write."""
    from tiermap import atomic

    real, calls = atomic.write_bytes, []

    def write_bytes(path, data, mode=None):  # type: ignore[no-untyped-def]
        calls.append(Path(path))
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data, mode)

    monkeypatch.setattr(atomic, "write_bytes", write_bytes)
    return calls


def test_a_full_disk_leaves_no_partial_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = write_toy(tmp_path)
    out = tmp_path / "out"
    calls = fail_on_second_write(monkeypatch)
    assert_one_line(invoke(seg_args(f, out)), str(out), "No space left on device")
    assert len(calls) == 2
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no staging folder left beside


def test_a_full_disk_keeps_the_previous_report_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = write_toy(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert invoke(seg_args(f, out)).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {*REPORT, "notes.txt"}
    data = json.loads((f["scene"] / "gt_categories.json").read_text())
    data["dataset"]["samples"][0]["labels"]["image_attributes"]["synonyms"] = ["stool"]  # a run with other numbers
    (f["scene"] / "gt_categories.json").write_text(json.dumps(data))
    fail_on_second_write(monkeypatch)
    assert_one_line(invoke(seg_args(f, out)), "No space left on device")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    monkeypatch.undo()
    assert invoke(seg_args(f, out)).exit_code == 0
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(after) == set(before) and after["results.json"] != before["results.json"] and after["notes.txt"] == b"mine"
