"""Simulated annotators: each logs in to its own seat and submits seeded, noisy lexicon labels."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from annotation import ls_server
from annotation.annotators import ensure_simulated
from annotation.ls_client import AnnotatorSession
from annotation.noise import NoiseProfile, answer_rng, object_is_hard, simulate_answers
from annotation.project import textarea_result
from annotation.push import read_tasks_record
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.scene import SCENE_FILE, read_scene


def simulate(ds: DatasetPaths, scenes: list[str], n_annotators: int = 4, seed: int = 0,
             profile: NoiseProfile | None = None, log: Callable[[str], None] = print) -> dict[str, int]:
    """Every simulated annotator submits one annotation on each pushed task of its seat it has not done yet."""
    profile = profile or NoiseProfile()
    passwords = ensure_simulated(ds, n_annotators, log)
    record = read_tasks_record(ds)
    objects = {s: {o.id: o for o in read_scene(ds.scene_dir(s) / SCENE_FILE).objects} for s in scenes}
    others = sorted({w for objs in objects.values() for o in objs.values() for w in o.lexicon.synonyms})
    emails = list(passwords)

    def work(k: int) -> int:
        email = emails[k]
        tasks = record.seats.get(email)
        if tasks is None:
            raise ls_server.LabelStudioError(f"the seat of {email} has no tasks: run `tiermap annotate push` after adding annotators")
        me = AnnotatorSession.login(ls_server.seat_of(ds, email).url, email, passwords[email])
        uid = me.whoami()["id"]
        exported = me.request("GET", f"/api/projects/{tasks.project_id}/export", params={"exportType": "JSON"})
        have = {t["id"] for t in exported if any(a.get("completed_by") == uid for a in t.get("annotations") or [])}
        done = 0
        for key, tid in tasks.tasks.items():
            scene, oid = key.rsplit("/", 1)
            obj = objects.get(scene, {}).get(int(oid))
            if obj is None or tid in have:
                continue
            rng = answer_rng(seed, scene, obj.id, k)
            answers = simulate_answers(obj.lexicon, obj.class_name, k, rng, profile,
                                       hard=object_is_hard(seed, scene, obj.id, profile), others=others)
            me.annotate(tid, textarea_result(answers), lead_time=float(rng.uniform(8, 40)))
            done += 1
        log(f"  {email}: {done} tasks annotated")
        return done

    with ThreadPoolExecutor(max_workers=n_annotators) as pool:
        done = list(pool.map(work, range(n_annotators)))
    n_tasks = len(next(iter(record.seats.values())).tasks) if record.seats else 0
    return {"tasks": n_tasks, "annotators": n_annotators, "annotations submitted": sum(done)}
