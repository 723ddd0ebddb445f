"""Simulated annotators: each logs in to Label Studio as its own user and submits seeded, noisy lexicon labels."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from annotation.annotators import add_users, default_emails
from annotation.ls_client import LabelStudio
from annotation.noise import NoiseProfile, answer_rng, object_is_hard, simulate_answers
from annotation.project import find_project, textarea_result
from tiermap import schema


def simulate(ds: schema.DatasetPaths, scenes: list[str], admin: LabelStudio, n_annotators: int = 4, seed: int = 0,
             profile: NoiseProfile | None = None, log: Callable[[str], None] = print) -> dict[str, int]:
    """Submit one annotation per annotator on every task that annotator has not done yet."""
    profile = profile or NoiseProfile()
    proj = find_project(admin, ds)
    if proj is None:
        raise schema.SchemaError(admin.url, "project", f"a Label Studio project for dataset {ds.name!r} (run `tiermap annotate push` first)")
    emails = default_emails(n_annotators)
    passwords = add_users(ds, admin, emails)
    ids = {u["email"]: u["id"] for u in admin.users()}
    objects = {s: {o.id: o for o in schema.read_scene(ds.scene_dir(s) / "scene.json").objects} for s in scenes}
    tasks = []
    for t in admin.export(proj["id"]):
        d = t.get("data") or {}
        obj = objects.get(d.get("scene"), {}).get(d.get("object_id"))
        if obj is not None:
            tasks.append((t["id"], d["scene"], obj, {a.get("completed_by") for a in t.get("annotations") or []}))
    others = sorted({w for objs in objects.values() for o in objs.values() for w in o.lexicon.synonyms})

    def work(k: int) -> int:
        email = emails[k]
        todo = [t for t in tasks if ids[email] not in t[3]]
        if not todo:
            return 0
        me = LabelStudio.login(admin.url, email, passwords[email])
        for tid, scene, obj, _ in todo:
            rng = answer_rng(seed, scene, obj.id, k)
            answers = simulate_answers(obj.lexicon, obj.class_name, k, rng, profile,
                                       hard=object_is_hard(seed, scene, obj.id, profile), others=others)
            me.annotate(tid, textarea_result(answers), lead_time=float(rng.uniform(8, 40)))
        log(f"  {email}: {len(todo)} tasks annotated")
        return len(todo)

    with ThreadPoolExecutor(max_workers=n_annotators) as pool:
        done = list(pool.map(work, range(n_annotators)))
    return {"tasks": len(tasks), "annotators": n_annotators, "annotations submitted": sum(done)}
