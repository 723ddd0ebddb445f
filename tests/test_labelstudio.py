"""Label Studio, for real: a server per test (started from the migrated template), push / simulate / pull / suggest over HTTP."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from annotation import ls_server
from annotation.ls_client import LabelStudio
from annotation.project import FIELDS, connect, find_project
from annotation.pull import pull, raw_dir
from annotation.push import crop_tasks, push
from annotation.simulate import simulate
from annotation.suggest import suggest
from tiermap import schema

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def quiet(*_: object) -> None:
    """Swallow progress lines."""


def tiermap(ds: schema.DatasetPaths, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the tiermap CLI on the dataset."""
    return subprocess.run([str(BIN / "tiermap"), *args, "--root", str(ds.root), "--dataset", ds.name], text=True,
                          capture_output=True, env={**os.environ, **(env or {})}, cwd=ds.root.parent)


def params_file(ds: schema.DatasetPaths) -> Path:
    """params.yaml for CLI runs (scenes + annotation block)."""
    import yaml

    from tests.conftest import small_params

    path = ds.root.parent / "params.yaml"
    path.write_text(yaml.safe_dump(small_params(["baseline"]), sort_keys=False))
    return path


def test_server_is_offline_local_and_secrets_untracked(ls_dataset: schema.DatasetPaths) -> None:
    cred = ls_server.read_credentials(ls_dataset)
    assert cred.url.startswith("http://127.0.0.1:") and len(cred.token) == 40
    data = ls_server.server_dir(ls_dataset)
    assert (data / ".gitignore").read_text().splitlines()[-1] == "*"
    assert oct((data / "credentials.json").stat().st_mode & 0o777) == "0o600"
    # Fresh secrets per dataset: the template's admin password does not log in.
    assert LabelStudio(cred.url, cred.token).whoami()["email"] == ls_server.ADMIN_EMAIL
    with pytest.raises(ls_server.LabelStudioError, match="rejected the API token"):
        LabelStudio(cred.url, "0" * 40).whoami()
    # Reusing a running server: start() returns the same process.
    assert ls_server.start(ls_dataset).pid == cred.pid


def test_push_creates_project_and_is_idempotent(ls_dataset: schema.DatasetPaths) -> None:
    ds = ls_dataset
    ls = connect(ds)
    n = len(crop_tasks(ds, ["room0"]))
    assert n >= 10
    first = push(ds, ["room0"], ls, log=quiet)
    assert (first["created"], first["updated"], first["unchanged"]) == (n, 0, 0)
    proj = find_project(ls, ds)
    assert proj["maximum_annotations"] == 4 and "Visually similar" in proj["expert_instruction"]
    assert all(f'name="{f}"' in proj["label_config"] for f in FIELDS)
    again = push(ds, ["room0"], ls, log=quiet)
    assert (again["created"], again["updated"], again["unchanged"], again["duplicates_on_server"]) == (0, 0, n, 0)
    tasks = ls.export(proj["id"])
    assert len(tasks) == n and len({t["data"]["key"] for t in tasks}) == n
    # The crop is served from the dataset folder, with auth, byte for byte.
    t = tasks[0]["data"]
    img = ls.request("GET", t["image"], raw=True)
    rel = t["image"].split("?d=")[1]
    assert img.status_code == 200 and img.content == (ds.dir / rel).read_bytes()
    assert LabelStudio(ls.url).request("GET", t["image"], raw=True).status_code in (401, 403, 302)
    record = json.loads((ds.labels / "tasks.json").read_text())
    assert record["project_id"] == proj["id"] and len(record["tasks"]) == n and "token" not in json.dumps(record)


def test_changed_crop_updates_its_task(ls_dataset: schema.DatasetPaths) -> None:
    ds = ls_dataset
    ls = connect(ds)
    push(ds, ["room0"], ls, log=quiet)
    index_path = ds.dir / "crops/room0/index.json"
    index = schema.read_crop_index(index_path)
    index.objects[0].sha256 = "f" * 64
    schema.write_crop_index(index, index_path)
    res = push(ds, ["room0"], ls, log=quiet)
    assert (res["created"], res["updated"]) == (0, 1)
    key = f"room0/{index.objects[0].object_id}"
    tasks = {t["data"]["key"]: t for t in ls.export(find_project(ls, ds)["id"])}
    assert tasks[key]["data"]["crop_hash"] == "f" * 64 and len(tasks) == len(index.objects)


def test_server_down_mid_push_then_rerun_finishes_without_duplicates(ls_dataset: schema.DatasetPaths) -> None:
    ds = ls_dataset
    n = len(crop_tasks(ds, ["room0"]))

    def crash(batch: int) -> None:
        if batch == 0:
            ls_server.stop(ds)

    with pytest.raises(ls_server.LabelStudioError, match="not reachable"):
        push(ds, ["room0"], connect(ds), batch_size=4, on_batch=crash, log=quiet)
    ls_server.start(ds)
    res = push(ds, ["room0"], connect(ds), batch_size=4, log=quiet)
    assert (res["created"], res["unchanged"], res["duplicates_on_server"]) == (n - 4, 4, 0)
    ls = connect(ds)
    assert len(ls.export(find_project(ls, ds)["id"])) == n


def test_simulated_annotators_then_pull(ls_dataset: schema.DatasetPaths) -> None:
    ds = ls_dataset
    ls = connect(ds)
    push(ds, ["room0"], ls, log=quiet)
    n = len(crop_tasks(ds, ["room0"]))
    assert simulate(ds, ["room0"], ls, 4, log=quiet)["annotations submitted"] == 4 * n
    # Re-running submits nothing new: each annotator has done every task.
    assert simulate(ds, ["room0"], ls, 4, log=quiet)["annotations submitted"] == 0
    export = ls.export(find_project(ls, ds)["id"])
    users = {u["id"]: u["email"] for u in ls.users()}
    for t in export:
        by = [users[a["completed_by"]] for a in t["annotations"]]
        assert sorted(by) == [f"annotator{i}@tiermap.local" for i in range(1, 5)]
    # Every simulated annotator can log in with the password `users add` set.
    cred = ls_server.read_credentials(ds)
    assert LabelStudio.login(cred.url, "annotator3@tiermap.local", cred.annotators["annotator3@tiermap.local"]).whoami()["email"] == "annotator3@tiermap.local"

    first = pull(ds, ["room0"], ls)
    raw1 = Path(first["raw export"])
    assert json.loads(raw1.read_bytes()) == export  # kept as the server sent it, before any processing
    labels = schema.read_labels(ds.labels / "labels.parquet")
    assert labels.groupby(["scene", "object_id"])["annotator"].nunique().eq(4).all()
    assert labels.groupby(["scene", "object_id"]).ngroups == n
    assert set(labels["category"]) <= {"synonyms", "depictions", "vis_sim"}
    assert (labels["label"] == labels["label"].str.lower()).all() and not labels["label"].str.contains("_").any()
    before = raw1.read_bytes()
    second = pull(ds, ["room0"], ls)
    assert Path(second["raw export"]) != raw1 and raw1.read_bytes() == before
    assert len(list(raw_dir(ds).glob("*-export.json"))) == 2


def test_bad_labels_are_flagged_and_malformed_exports_keep_the_raw_file(ls_dataset: schema.DatasetPaths) -> None:
    ds = ls_dataset
    ls = connect(ds)
    push(ds, ["room0"], ls, log=quiet)
    pid = find_project(ls, ds)["id"]
    tasks = ls.export(pid)
    me = LabelStudio.login(ls.url, ls_server.ADMIN_EMAIL, ls_server.read_credentials(ds).password)
    me.annotate(tasks[0]["id"], [
        {"from_name": "synonyms", "to_name": "crop", "type": "textarea", "value": {"text": ["Coffee_Mug, <b>mug</b>, cup 🙂, " + "x" * 500]}}])
    # A task that is not one of ours (unknown scene) with an annotation.
    [ghost] = ls.import_tasks(pid, [{"data": {**tasks[0]["data"], "key": "ghost/1", "scene": "ghost", "object_id": 1}}])
    me.annotate(ghost, [{"from_name": "synonyms", "to_name": "crop", "type": "textarea", "value": {"text": ["chair"]}}])
    res = pull(ds, ["room0"], ls)
    labels = schema.read_labels(ds.labels / "labels.parquet")
    assert sorted(labels["label"]) == ["coffee mug"]
    flagged = pd.read_csv(ds.labels / "flagged.csv")
    assert res["flagged rows"] == len(flagged) == 4
    reasons = " ".join(flagged["reason"])
    assert "html" in reasons and "emoji" in reasons and "64" in reasons and "unknown task" in reasons

    # A task whose object id is text: the pull fails with one line naming the field, the raw export stays.
    ls.import_tasks(pid, [{"data": {**tasks[1]["data"], "key": "room0/x", "object_id": "not-a-number"}}])
    n_raw = len(list(raw_dir(ds).glob("*-export.json")))
    parquet_before = (ds.labels / "labels.parquet").read_bytes()
    with pytest.raises(schema.SchemaError, match=r"object_id"):
        pull(ds, ["room0"], ls)
    assert len(list(raw_dir(ds).glob("*-export.json"))) == n_raw + 1
    assert (ds.labels / "labels.parquet").read_bytes() == parquet_before


def test_cli_push_wrong_token_and_users(ls_dataset: schema.DatasetPaths) -> None:
    ds = ls_dataset
    params = params_file(ds)
    res = tiermap(ds, "annotate", "push", "--params", str(params), "--token", "wrong-token")
    assert res.returncode == 2 and "rejected the API token" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = tiermap(ds, "annotate", "push", "--params", str(params))
    assert res.returncode == 0, res.stderr
    res = tiermap(ds, "annotate", "users", "add", "reviewer@lab.org")
    assert res.returncode == 0, res.stderr
    pw = res.stdout.split("password:")[1].split()[0]
    cred = ls_server.read_credentials(ds)
    assert LabelStudio.login(cred.url, "reviewer@lab.org", pw).whoami()["email"] == "reviewer@lab.org"
    ls_server.stop(ds)
    res = tiermap(ds, "annotate", "pull", "--params", str(params))
    assert res.returncode == 2 and "not reachable" in res.stderr and "tiermap annotate serve" in res.stderr


def test_gemini_suggestions_become_predictions_and_are_cached(ls_dataset: schema.DatasetPaths, monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_gemini import FakeGemini

    ds = ls_dataset
    ls = connect(ds)
    push(ds, ["room0"], ls, log=quiet)
    n = len(crop_tasks(ds, ["room0"]))
    fake = FakeGemini(default={"synonyms": ["mug", "cup"], "depictions": ["cat"], "visually_similar": ["vase"]})
    fake.queue.append({"status": 503})  # retried with backoff
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    try:
        res = suggest(ds, ["room0"], ls, log=quiet)
        assert res == {"tasks": n, "gemini calls": n, "predictions imported": n}
        assert len(fake.requests) == n + 1
        body = fake.requests[-1]["body"]
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        crops = {(ds.dir / "crops/room0" / r.crop).read_bytes() for r in schema.read_crop_index(ds.dir / "crops/room0/index.json").objects}
        assert fake.image() in crops  # the crop itself, sent as bytes
        again = suggest(ds, ["room0"], ls, log=quiet)
        assert again == {"tasks": n, "gemini calls": 0, "predictions imported": 0} and len(fake.requests) == n + 1
    finally:
        fake.stop()
    pid = find_project(ls, ds)["id"]
    tasks = ls.export(pid)
    assert all(len(t["predictions"]) == 1 for t in tasks)
    pred = ls.request("GET", f"/api/predictions/{tasks[0]['predictions'][0]}")
    texts = {r["from_name"]: r["value"]["text"][0] for r in pred["result"]}
    assert texts == {"synonyms": "mug, cup", "depictions": "cat", "visually_similar": "vase"}
    assert pred["model_version"] == "gemini-2.5-flash"
