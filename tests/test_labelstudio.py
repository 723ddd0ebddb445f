"""Label Studio, for real: one server per annotator (seat), push / simulate / pull / suggest over HTTP."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from annotation import ls_server
from annotation.annotators import add_users
from annotation.ls_client import Admin, AnnotatorSession
from annotation.project import FIELDS, admins, find_project, textarea_result
from annotation.pull import pull, raw_dir
from annotation.push import crop_tasks, push, read_tasks_record
from annotation.simulate import simulate
from annotation.suggest import suggest
from tiermap.formats.base import SchemaError
from tiermap.formats.crops import read_crop_index, write_crop_index
from tiermap.formats.labels import read_labels
from tiermap.formats.layout import DatasetPaths

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def quiet(*_: object) -> None:
    """Swallow progress lines."""


def tiermap(ds: DatasetPaths, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the tiermap CLI on the dataset."""
    return subprocess.run([str(BIN / "tiermap"), *args, "--root", str(ds.root), "--dataset", ds.name], text=True,
                          capture_output=True, env={**os.environ, **(env or {})}, cwd=ds.root.parent)


def params_file(ds: DatasetPaths) -> Path:
    """params.yaml for CLI runs (scenes + annotation block)."""
    import yaml

    from tests.conftest import small_params

    path = ds.root.parent / "params.yaml"
    path.write_text(yaml.safe_dump(small_params(["baseline"]), sort_keys=False))
    return path


def session(ds: DatasetPaths, who: str) -> AnnotatorSession:
    """A simulated annotator logged in to its own seat."""
    return AnnotatorSession.login(ls_server.seat_of(ds, who).url, who, ls_server.read_simulated(ds)[who])


A1, A2 = "annotator1@tiermap.local", "annotator2@tiermap.local"


def test_seats_are_local_private_and_real_passwords_unstored(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    cred = ls_server.read_credentials(ds)
    assert [s.annotator for s in cred.seats] == [A1, A2]
    assert all(s.url.startswith("http://127.0.0.1:") and len(s.token) == 40 for s in cred.seats)
    assert len({s.token for s in cred.seats}) == len({s.admin_password for s in cred.seats}) == 2  # fresh secrets per seat
    data = ls_server.server_dir(ds)
    assert (data / ".gitignore").read_text().splitlines()[-1] == "*"
    assert oct(data.stat().st_mode & 0o777) == "0o700"
    for f in ("credentials.json", "simulated.json"):
        assert oct((data / f).stat().st_mode & 0o777) == "0o600"
    # Each seat holds the admin and its annotator, nobody else.
    for seat in cred.seats:
        assert sorted(u["email"] for u in Admin(seat).users()) == sorted([ls_server.ADMIN_EMAIL, seat.annotator])
    with pytest.raises(ls_server.LabelStudioError, match="rejected the admin token"):
        Admin(cred.seats[0].model_copy(update={"token": "0" * 40})).users()
    # A real annotator's password is printed once and stored nowhere.
    pw = add_users(ds, ["alice@lab.org"], log=quiet)["alice@lab.org"]
    assert AnnotatorSession.login(ls_server.seat_of(ds, "alice@lab.org").url, "alice@lab.org", pw).whoami()["email"] == "alice@lab.org"
    stored = [p for p in ds.dir.rglob("*") if p.is_file() and pw.encode() in p.read_bytes()]
    assert stored == []
    assert "alice@lab.org" not in ls_server.read_simulated(ds)
    # Starting again reuses the running servers.
    assert [s.pid for s in ls_server.start(ds, log=quiet).seats] == [s.pid for s in ls_server.read_credentials(ds).seats]


def test_annotator_cannot_reach_any_secret(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    push(ds, ["room0"], 2, log=quiet)
    me = session(ds, A1)
    seat = ls_server.seat_of(ds, A1)
    pid = read_tasks_record(ds).seats[A1].project_id
    secrets = [s.token for s in ls_server.read_credentials(ds).seats] + [s.admin_password for s in ls_server.read_credentials(ds).seats]
    secrets += list(ls_server.read_simulated(ds).values())
    secrets += [(ls_server.seat_dir(ds, s) / ".env").read_text().split("=", 1)[1].strip() for s in ls_server.read_credentials(ds).seats]
    # Serving works for what annotators must see ...
    task = next(iter(Admin(seat).export(pid)))
    assert me.request("GET", task["data"]["image"], raw=True).status_code == 200
    # ... and nothing under the served root is a secret.
    served = [p for p in ls_server.document_root(ds).rglob("*") if p.is_file()]
    assert served and not any(s.encode() in p.read_bytes() for p in served for s in secrets)
    # The storage trick: a storage on the secrets' folder, the dataset folder or the root is refused.
    for path in (ls_server.server_dir(ds), ls_server.seat_dir(ds, seat), ds.dir, Path("/")):
        r = me.request("POST", "/api/storages/localfiles", raw=True,
                       json={"project": pid, "path": str(path.resolve()), "title": "x", "use_blob_urls": False})
        assert r.status_code >= 400, (path, r.status_code)
    # Path tricks on the file view return no secret.
    cred_abs = ls_server.credentials_path(ds).resolve()
    for d in ("../labelstudio/credentials.json", "room0/../../labelstudio/credentials.json", str(cred_abs),
              "..%2Flabelstudio%2Fcredentials.json", f"../labelstudio/seats/{seat.slug}/.env",
              f"../labelstudio/seats/{seat.slug}/label_studio.sqlite3", "../labelstudio/simulated.json"):
        r = me.request("GET", f"/data/local-files/?d={d}", raw=True)
        assert r.status_code != 200 and not any(s.encode() in r.content for s in secrets), (d, r.status_code)


def test_annotators_are_isolated(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    push(ds, ["room0"], 2, log=quiet)
    n = len(crop_tasks(ds, ["room0"]))
    assert simulate(ds, ["room0"], 2, log=quiet)["annotations submitted"] == 2 * n
    s2 = ls_server.seat_of(ds, A2)
    me = session(ds, A1)
    uid = me.whoami()["id"]
    record = read_tasks_record(ds)
    # Everything annotator 1 can list or export is its own work.
    mine = me.request("GET", f"/api/projects/{record.seats[A1].project_id}/export", params={"exportType": "JSON"})
    assert sum(len(t["annotations"]) for t in mine) == n
    assert {a["completed_by"] for t in mine for a in t["annotations"]} == {uid}
    assert sorted(u["email"] for u in me.request("GET", "/api/users/")) == sorted([ls_server.ADMIN_EMAIL, A1])
    theirs = Admin(s2).export_bytes(record.seats[A2].project_id)
    # Annotator 2's server knows neither annotator 1's password, nor its session, nor its API token.
    with pytest.raises(ls_server.LabelStudioError, match="login as"):
        AnnotatorSession.login(s2.url, A1, ls_server.read_simulated(ds)[A1])
    token = me.request("GET", "/api/current-user/token")["token"]
    import requests

    assert requests.get(f"{s2.url}/api/projects", headers={"Authorization": f"Token {token}"}, timeout=30).status_code == 401
    assert requests.get(f"{s2.url}/api/projects", cookies=me.http.cookies, timeout=30).status_code in (401, 403)
    # Whatever annotator 1 does to annotation ids on its own server, annotator 2's annotations stay as they were.
    for aid in sorted({a["id"] for t in json.loads(theirs) for a in t["annotations"]}):
        me.request("PATCH", f"/api/annotations/{aid}/", raw=True, json={"result": textarea_result({"synonyms": "vandal"})})
        me.request("DELETE", f"/api/annotations/{aid}/", raw=True)
    assert Admin(s2).export_bytes(record.seats[A2].project_id) == theirs


def test_tampered_annotations_are_flagged_and_the_pulled_labels_kept(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    params = params_file(ds)
    push(ds, ["room0"], 2, log=quiet)
    simulate(ds, ["room0"], 2, log=quiet)
    res = tiermap(ds, "annotate", "pull", "--params", str(params))
    assert res.returncode == 0, res.stderr
    before = read_labels(ds.labels / "labels.parquet")
    assert (before["annotation_id"] > 0).all() and before["created_at"].str.match(r"^\d{4}-\d\d-\d\dT").all()
    record = read_tasks_record(ds)
    keys = sorted(record.seats[A1].tasks)
    changed_key, deleted_key = keys[0], keys[1]
    me = session(ds, A1)
    anns = {t["id"]: t["annotations"][0] for t in
            me.request("GET", f"/api/projects/{record.seats[A1].project_id}/export", params={"exportType": "JSON"})}
    changed, deleted = anns[record.seats[A1].tasks[changed_key]], anns[record.seats[A1].tasks[deleted_key]]
    me.request("PATCH", f"/api/annotations/{changed['id']}/", json={"result": textarea_result({"synonyms": "tampered label"})})
    me.request("DELETE", f"/api/annotations/{deleted['id']}/")
    # Someone else (here the seat's admin) writes an annotation on annotator 2's seat.
    s2 = ls_server.seat_of(ds, A2)
    foreign_key = sorted(record.seats[A2].tasks)[2]
    admin2 = Admin(s2)
    foreign = admin2.call("annotate", admin2.sdk.annotations.create, record.seats[A2].tasks[foreign_key],
                          result=textarea_result({"synonyms": "intruder"}))
    n_raw = len(list(raw_dir(ds).glob("*-export.json")))

    res = tiermap(ds, "annotate", "pull", "--params", str(params))
    assert res.returncode == 3
    lines = res.stderr.strip().splitlines()
    assert f"changed: task {changed_key}, annotator {A1}: annotation {changed['id']} result changed" in res.stderr
    assert f"disappeared: task {deleted_key}, annotator {A1}" in res.stderr
    assert f"foreign author: task {foreign_key}, annotator {A2}" in res.stderr
    assert len([ln for ln in lines if ln.startswith(("changed", "disappeared", "foreign"))]) == 3
    assert len(list(raw_dir(ds).glob("*-export.json"))) == n_raw + 2  # both seats' exports kept
    after = read_labels(ds.labels / "labels.parquet")
    pd.testing.assert_frame_equal(after, before)  # the pulled (pre-tamper) labels are kept
    report = pd.read_csv(ds.labels / "tamper.csv")
    assert sorted(report["kind"]) == ["changed", "disappeared", "foreign author"]

    res = tiermap(ds, "annotate", "pull", "--params", str(params), "--accept-changes")
    assert res.returncode == 0, res.stderr
    accepted = read_labels(ds.labels / "labels.parquet")
    obj = lambda df, key: df[(df["scene"] + "/" + df["object_id"].astype(str) == key) & (df["annotator"] == A1)]  # noqa: E731
    assert list(obj(accepted, changed_key)["label"]) == ["tampered label"]
    assert obj(accepted, deleted_key).empty and not obj(before, deleted_key).empty
    assert "intruder" not in set(accepted["label"])  # never accepted as an annotator's work
    admin2.call("delete", admin2.sdk.annotations.delete, foreign.id)
    res = tiermap(ds, "annotate", "pull", "--params", str(params))
    assert res.returncode == 0, res.stderr
    pd.testing.assert_frame_equal(read_labels(ds.labels / "labels.parquet"), accepted)


def test_push_creates_projects_and_is_idempotent(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    n = len(crop_tasks(ds, ["room0"]))
    assert n >= 10
    first = push(ds, ["room0"], 2, log=quiet)
    assert (first["seats"], first["created"], first["updated"], first["unchanged"]) == (2, 2 * n, 0, 0)
    for ls in admins(ds):
        proj = find_project(ls, ds)
        assert proj["maximum_annotations"] == 1 and "Visually similar" in proj["expert_instruction"]
        assert all(f'name="{f}"' in proj["label_config"] for f in FIELDS)
    again = push(ds, ["room0"], 2, log=quiet)
    assert (again["created"], again["updated"], again["unchanged"], again["duplicates_on_server"]) == (0, 0, 2 * n, 0)
    ls = admins(ds)[0]
    tasks = ls.export(find_project(ls, ds)["id"])
    assert len(tasks) == n and len({t["data"]["key"] for t in tasks}) == n
    # The crop is served from the crops folder, with auth, byte for byte.
    t = tasks[0]["data"]
    me = session(ds, A1)
    img = me.request("GET", t["image"], raw=True)
    assert img.status_code == 200 and img.content == (ds.dir / "crops" / t["image"].split("?d=")[1]).read_bytes()
    assert AnnotatorSession(ls.url).request("GET", t["image"], raw=True).status_code in (401, 403, 302)
    text = (ds.labels / "tasks.json").read_text()
    record = read_tasks_record(ds)
    assert set(record.seats) == {A1, A2} and all(len(s.tasks) == n for s in record.seats.values())
    assert not any(s.token in text or s.admin_password in text for s in ls_server.read_credentials(ds).seats)
    # An annotator who edits the project copy on its seat gets it restored by the next push.
    ls.update_project(find_project(ls, ds)["id"], label_config="<View><Text name='t' value='$key'/></View>", maximum_annotations=5)
    push(ds, ["room0"], 2, log=quiet)
    assert find_project(ls, ds)["maximum_annotations"] == 1 and 'name="synonyms"' in find_project(ls, ds)["label_config"]


def test_changed_crop_updates_its_task(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    push(ds, ["room0"], 2, log=quiet)
    index_path = ds.dir / "crops/room0/index.json"
    index = read_crop_index(index_path)
    index.objects[0].sha256 = "f" * 64
    write_crop_index(index, index_path)
    res = push(ds, ["room0"], 2, log=quiet)
    assert (res["created"], res["updated"]) == (0, 2)
    key = f"room0/{index.objects[0].object_id}"
    for ls in admins(ds):
        tasks = {t["data"]["key"]: t for t in ls.export(find_project(ls, ds)["id"])}
        assert tasks[key]["data"]["crop_hash"] == "f" * 64 and len(tasks) == len(index.objects)


def test_server_down_mid_push_then_rerun_finishes_without_duplicates(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    n = len(crop_tasks(ds, ["room0"]))

    def crash(annotator: str, batch: int) -> None:
        if (annotator, batch) == (A1, 0):
            ls_server.stop(ds, A1)

    with pytest.raises(ls_server.LabelStudioError, match="not reachable"):
        push(ds, ["room0"], 2, batch_size=4, on_batch=crash, log=quiet)
    ls_server.start(ds, log=quiet)
    res = push(ds, ["room0"], 2, batch_size=4, log=quiet)
    # The other seat's server stayed up and got every task the first time; the stopped one resumes after its first batch.
    assert (res["created"], res["unchanged"], res["duplicates_on_server"]) == (n - 4, n + 4, 0)
    for ls in admins(ds):
        assert len(ls.export(find_project(ls, ds)["id"])) == n


def test_simulated_annotators_then_pull(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    push(ds, ["room0"], 2, log=quiet)
    n = len(crop_tasks(ds, ["room0"]))
    assert simulate(ds, ["room0"], 2, log=quiet)["annotations submitted"] == 2 * n
    assert simulate(ds, ["room0"], 2, log=quiet)["annotations submitted"] == 0  # each annotator has done every task
    first = pull(ds, ["room0"])
    raws = [Path(p) for p in first["raw exports"].split(", ")]
    record = read_tasks_record(ds)
    for ls, raw in zip(admins(ds), raws):
        assert raw.read_bytes() == ls.export_bytes(record.seats[ls.seat.annotator].project_id)  # kept as sent, before processing
    labels = read_labels(ds.labels / "labels.parquet")
    assert labels.groupby(["scene", "object_id"])["annotator"].nunique().eq(2).all()
    assert labels.groupby(["scene", "object_id"]).ngroups == n and set(labels["annotator"]) == {A1, A2}
    assert set(labels["category"]) <= {"synonyms", "depictions", "vis_sim"}
    assert (labels["label"] == labels["label"].str.lower()).all() and not labels["label"].str.contains("_").any()
    before = raws[0].read_bytes()
    second = pull(ds, ["room0"])
    assert second["new annotations"] == 0 and second["tamper flags"] == 0 and raws[0].read_bytes() == before
    assert len(list(raw_dir(ds).glob("*-export.json"))) == 4


def test_bad_labels_are_flagged_and_malformed_exports_keep_the_raw_file(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    push(ds, ["room0"], 2, log=quiet)
    record = read_tasks_record(ds)
    me = session(ds, A1)
    first = record.seats[A1].tasks[sorted(record.seats[A1].tasks)[0]]
    me.annotate(first, [{"from_name": "synonyms", "to_name": "crop", "type": "textarea",
                         "value": {"text": ["Coffee_Mug, <b>mug</b>, cup 🙂, " + "x" * 500]}}])
    res = pull(ds, ["room0"])
    labels = read_labels(ds.labels / "labels.parquet")
    assert sorted(labels["label"]) == ["coffee mug"]
    flagged = pd.read_csv(ds.labels / "flagged.csv")
    assert res["flagged rows"] == len(flagged) == 3
    reasons = " ".join(flagged["reason"])
    assert "html" in reasons and "emoji" in reasons and "64" in reasons
    # A task push did not create, annotated on the seat: flagged, not taken.
    admin = admins(ds)[0]
    task = admin.export(record.seats[A1].project_id)[0]
    [ghost] = admin.import_tasks(record.seats[A1].project_id, [{"data": {**task["data"], "key": "ghost/1", "scene": "ghost"}}])
    me.annotate(ghost, textarea_result({"synonyms": "chair"}))
    from annotation.pull import TamperError

    with pytest.raises(TamperError) as err:
        pull(ds, ["room0"])
    assert [f.kind for f in err.value.flags] == ["unknown task"]
    assert sorted(read_labels(ds.labels / "labels.parquet")["label"]) == ["coffee mug"]
    # A task whose object id is text: the pull fails with one line naming the field, the raw export stays.
    admin.import_tasks(record.seats[A1].project_id, [{"data": {**task["data"], "key": "room0/x", "object_id": "not-a-number"}}])
    n_raw = len(list(raw_dir(ds).glob("*-export.json")))
    parquet_before = (ds.labels / "labels.parquet").read_bytes()
    with pytest.raises(SchemaError, match=r"object_id"):
        pull(ds, ["room0"])
    assert len(list(raw_dir(ds).glob("*-export.json"))) == n_raw + 1
    assert (ds.labels / "labels.parquet").read_bytes() == parquet_before


def test_cli_users_push_pull_and_server_down(ls_dataset: DatasetPaths) -> None:
    ds = ls_dataset
    params = params_file(ds)
    res = tiermap(ds, "annotate", "users", "add", "reviewer@lab.org")
    assert res.returncode == 0, res.stderr
    pw = res.stdout.split("password:")[1].split()[0]
    assert "not stored" in res.stdout
    assert AnnotatorSession.login(ls_server.seat_of(ds, "reviewer@lab.org").url, "reviewer@lab.org", pw).whoami()["email"] == "reviewer@lab.org"
    res = tiermap(ds, "annotate", "users", "add", "not-an-email")
    assert res.returncode == 2 and "e-mail" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = tiermap(ds, "annotate", "push", "--params", str(params))
    assert res.returncode == 0, res.stderr
    assert len(read_tasks_record(ds).seats) == 3
    res = tiermap(ds, "annotate", "users", "list")
    assert res.returncode == 0 and "reviewer@lab.org" in res.stdout and "(simulated)" in res.stdout
    ls_server.stop(ds)
    res = tiermap(ds, "annotate", "pull", "--params", str(params))
    assert res.returncode == 2 and "not reachable" in res.stderr and "tiermap annotate serve" in res.stderr


def test_gemini_suggestions_become_predictions_and_are_cached(ls_dataset: DatasetPaths, monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_gemini import FakeGemini

    ds = ls_dataset
    push(ds, ["room0"], 2, log=quiet)
    n = len(crop_tasks(ds, ["room0"]))
    fake = FakeGemini(default={"synonyms": ["mug", "cup"], "depictions": ["cat"], "visually_similar": ["vase"]})
    fake.queue.append({"status": 503})  # retried with backoff
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    try:
        res = suggest(ds, ["room0"], log=quiet)
        assert res == {"tasks": n, "gemini calls": n, "predictions imported": 2 * n}
        assert len(fake.requests) == n + 1
        body = fake.requests[-1]["body"]
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        crops = {(ds.dir / "crops/room0" / r.crop).read_bytes() for r in read_crop_index(ds.dir / "crops/room0/index.json").objects}
        assert fake.image() in crops  # the crop itself, sent as bytes
        again = suggest(ds, ["room0"], log=quiet)
        assert again == {"tasks": n, "gemini calls": 0, "predictions imported": 0} and len(fake.requests) == n + 1
    finally:
        fake.stop()
    for ls in admins(ds):
        tasks = ls.export(find_project(ls, ds)["id"])
        assert all(len(t["predictions"]) == 1 for t in tasks)
        pred = ls.call("get prediction", ls.sdk.predictions.get, tasks[0]["predictions"][0])
        texts = {r["from_name"]: r["value"]["text"][0] for r in pred.result}
        assert texts == {"synonyms": "mug, cup", "depictions": "cat", "visually_similar": "vase"}
        assert pred.model_version == "gemini-2.5-flash"
