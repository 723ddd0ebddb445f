"""The release and evaluator round trip through a real local DVC remote, and every refusal."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import BIN, run

pytestmark = pytest.mark.slow
DVC, TIERMAP = str(BIN / "dvc"), str(BIN / "tiermap")


def tags(repo: Path) -> list[str]:
    return run(["git", "tag", "-l"], repo).stdout.split()


def remote_files(remote: Path) -> int:
    return sum(1 for p in remote.rglob("*") if p.is_file()) if remote.exists() else 0


def add_remote(repo: Path, remote: Path) -> None:
    run([DVC, "remote", "add", "-d", "store", str(remote)], repo)
    run(["git", "commit", "-q", "-am", "remote"], repo)


def gt_bytes(gt: Path) -> dict[str, bytes]:
    return {p.relative_to(gt).as_posix(): p.read_bytes() for p in sorted(gt.rglob("*")) if p.is_file()}


def relabel_in_label_studio(repo: Path, object_id: int, synonyms: str) -> None:
    """Every annotator of the object replaces their synonyms through their own login; then pull and reproduce."""
    from annotation import ls_server
    from annotation.ls_client import AnnotatorSession
    from annotation.push import read_tasks_record
    from tiermap.formats.layout import DatasetPaths

    ds = DatasetPaths(repo / "datasets", "demo")
    ls_server.start(ds)
    try:
        record = read_tasks_record(ds)
        passwords = ls_server.read_simulated(ds)
        assert len(record.seats) == 4
        for email, seat_tasks in record.seats.items():
            me = AnnotatorSession.login(ls_server.seat_of(ds, email).url, email, passwords[email])
            tid = seat_tasks.tasks[f"room0/{object_id}"]
            [a] = me.request("GET", f"/api/tasks/{tid}/annotations/")
            result = [r for r in a["result"] if r["from_name"] != "synonyms"]
            result.append({"from_name": "synonyms", "to_name": "crop", "type": "textarea", "value": {"text": [synonyms]}})
            me.request("PATCH", f"/api/annotations/{a['id']}/", json={"result": result})
        # Changing pulled annotations is flagged; the maintainer accepts the relabelling.
        assert run([DVC, "repro", "-f", "-s", "pull"], repo, check=False).returncode != 0
        run([TIERMAP, "annotate", "pull", "--accept-changes"], repo)
        out = run([DVC, "repro", "-f", "-s", "pull"], repo).stdout
        assert "label rows" in out
    finally:
        ls_server.stop(ds)
    res = run([DVC, "repro"], repo)
    assert "Running stage 'aggregate'" in res.stdout and "Running stage 'clutter'" in res.stdout


def test_release_round_trip(pipeline_repo: Path, tmp_path: Path) -> None:
    repo, remote = pipeline_repo, tmp_path / "remote"
    add_remote(repo, remote)
    gt = repo / "datasets/demo/gt"
    v1 = gt_bytes(gt)
    res = run([TIERMAP, "release", "0.1.0", "--dataset", "demo"], repo)
    assert "demo-gt@v0.1.0" in res.stdout
    assert "demo-gt@v0.1.0" in tags(repo)
    assert run(["git", "status", "--porcelain"], repo).stdout == ""
    notes1 = (repo / "datasets/demo/RELEASE.md").read_text()
    assert "first release" in notes1 and "| synonyms |" in notes1 and "gt/room0/gt_categories.json" in notes1

    # The annotators rename one object's synonym in Label Studio: pull, re-aggregate, release 0.2.0.
    df = pd.read_parquet(repo / "datasets/demo/labels/labels.parquet")
    mug = df[(df["category"] == "synonyms") & ~df["label"].isin(["wall", "floor", "ceiling"])].iloc[0]
    old_label, new_label = mug["label"], "shiny " + mug["label"]
    relabel_in_label_studio(repo, int(mug["object_id"]), new_label)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "relabel"], repo)
    run([TIERMAP, "release", "0.2.0", "--dataset", "demo"], repo)
    notes2 = (repo / "datasets/demo/RELEASE.md").read_text()
    assert "Changes since v0.1.0" in notes2
    row = next(ln for ln in notes2.splitlines() if ln.startswith(f"| room0/{mug['object_id']} | synonyms"))
    assert new_label in row.split("|")[3] and old_label in row.split("|")[4]
    # The datasheet names whose labels changed: the object's four annotators, each from old to new synonym.
    whose = [ln for ln in notes2.splitlines() if f"| room0/{mug['object_id']} | synonyms: {new_label}" in ln]
    assert sorted(ln.split("|")[1].strip() for ln in whose) == [f"annotator{i}@tiermap.local" for i in range(1, 5)]
    v2 = gt_bytes(gt)
    assert v1 != v2

    # Evaluator 1: clone at the 0.1.0 tag and dvc pull -> byte-identical 0.1.0 GT.
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", "-c", "advice.detachedHead=false", "--branch", "demo-gt@v0.1.0", str(repo), str(clone)], tmp_path)
    run([DVC, "pull", "-q", "datasets/demo/gt"], clone)
    assert gt_bytes(clone / "datasets/demo/gt") == v1
    # Evaluator 2: dvc artifacts get --rev v0.2.0 -> the new GT.
    out = tmp_path / "got"
    run([DVC, "artifacts", "get", str(repo), "demo-gt", "--rev", "v0.2.0", "-o", str(out)], tmp_path)
    assert gt_bytes(out) == v2
    cats = json.loads((out / "room0/gt_categories.json").read_text())
    syn = {s["object_id"]: s["labels"]["image_attributes"]["synonyms"] for s in cats["dataset"]["samples"]}
    assert new_label in syn[int(mug["object_id"])] and old_label not in syn[int(mug["object_id"])]


def assert_refused(repo: Path, remote: Path, args: list[str], needle: str) -> None:
    before_tags, before_files = tags(repo), remote_files(remote)
    res = run([TIERMAP, "release", *args, "--dataset", "demo"], repo, check=False)
    assert res.returncode != 0
    msg = " ".join((res.stderr + res.stdout).split())
    assert needle in msg, msg
    assert tags(repo) == before_tags
    assert remote_files(remote) == before_files


def test_release_refusals(pipeline_repo: Path, tmp_path: Path) -> None:
    repo, remote = pipeline_repo, tmp_path / "remote"
    assert_refused(repo, remote, ["0.1.0"], "remote (default) is not configured")
    add_remote(repo, remote)
    assert_refused(repo, remote, ["0.1.0", "--remote", "nope"], "remote nope is not configured")
    assert_refused(repo, remote, ["1.0"], "expected X.Y.Z")
    (repo / "stray.txt").write_text("x")
    assert_refused(repo, remote, ["0.1.0"], "working tree is dirty")
    (repo / "stray.txt").unlink()

    run([TIERMAP, "release", "0.2.0", "--dataset", "demo"], repo)
    pushed = remote_files(remote)
    assert pushed > 0
    assert_refused(repo, remote, ["0.2.0"], "already exists")
    assert_refused(repo, remote, ["0.1.5"], "lower than the latest release 0.2.0")

    # Invalid GT file: the release checks the files themselves, not just the report.
    cats = repo / "datasets/demo/gt/room0/gt_categories.json"
    run([DVC, "unprotect", str(cats)], repo)
    data = json.loads(cats.read_text())
    original_synonyms = data["dataset"]["samples"][0]["labels"]["image_attributes"]["synonyms"]
    data["dataset"]["samples"][0]["labels"]["image_attributes"]["clutter"] = ["not-an-id"]
    cats.write_text(json.dumps(data))
    run(["git", "commit", "-q", "--allow-empty", "-m", "noop"], repo)
    assert_refused(repo, remote, ["0.3.0"], "gt_categories.json: field 'dataset.samples.0.labels.image_attributes.clutter'")

    # A validation report that is not clean (a label with an underscore) is refused too.
    data["dataset"]["samples"][0]["labels"]["image_attributes"]["clutter"] = []
    data["dataset"]["samples"][0]["labels"]["image_attributes"]["synonyms"] = ["Flower_Vase"]
    cats.write_text(json.dumps(data))
    res = run([TIERMAP, "validate", "--dataset", "demo"], repo, check=False)
    assert res.returncode == 1 and "FAIL" in res.stdout and "Flower_Vase" in res.stdout
    run(["git", "commit", "-q", "-am", "failed validation report"], repo)
    assert_refused(repo, remote, ["0.3.0"], "validation report is not clean (failed: label_format")

    # Valid report, but GT files that differ from what dvc.lock pins: refused (re-run dvc repro / dvc commit).
    data["dataset"]["samples"][0]["labels"]["image_attributes"]["synonyms"] = original_synonyms  # clutter stays emptied
    cats.write_text(json.dumps(data))
    run([TIERMAP, "validate", "--dataset", "demo"], repo, check=False)
    run(["git", "commit", "-q", "-am", "report"], repo)
    assert_refused(repo, remote, ["0.3.0"], "differ from dvc.lock")


def test_failed_push_leaves_nothing_and_can_be_rerun(pipeline_repo: Path, tmp_path: Path) -> None:
    repo = pipeline_repo
    blocker = tmp_path / "store"
    blocker.write_text("a file where the remote's folder should be")  # the push fails part-way
    remote = blocker / "remote"
    add_remote(repo, remote)
    res = run([TIERMAP, "release", "0.1.0", "--dataset", "demo"], repo, check=False)
    assert res.returncode != 0 and "dvc push" in res.stderr
    assert tags(repo) == [] and run(["git", "status", "--porcelain"], repo).stdout == ""
    assert not (repo / "datasets/demo/RELEASE.md").exists()
    blocker.unlink()
    run([TIERMAP, "release", "0.1.0", "--dataset", "demo"], repo)
    assert tags(repo) == ["demo-gt@v0.1.0"]
    assert remote_files(remote) > 0
