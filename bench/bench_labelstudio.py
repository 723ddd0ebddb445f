"""Label Studio at dataset scale, on a real local server: push 1,000 tasks; pull + aggregate 1,000 objects x 4 annotations.

Targets: push < 30 s, pull + aggregate < 10 s. The dataset is synthetic (1,000 objects in 10 scenes, a 32x32 PNG
crop + context + 2 frames each, written by this script). The server starts from the migrated template.
  * push         `annotation.push.push` into an empty project (creates the project, storage and 1,000 tasks)
  * push again   the same call once more: nothing to create (idempotency costs one export)
  * pull         4,000 simulated annotations are imported inline into a second project first (not timed);
                 then `annotation.pull.pull` (export → raw file → tidy → labels.parquet) and
                 `aggregate_dataset_with_report` (normalise, spelling, union, ambiguous) on the result.
A reference figure with no tiermap code around it: the bare export request of the same project (`ls.export_bytes`),
so the ratio shows what tiermap's own processing adds.

    python bench/bench_labelstudio.py [--objects 1000]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation import ls_server  # noqa: E402
from annotation.aggregate import aggregate_dataset_with_report  # noqa: E402
from annotation.annotators import add_users, default_emails  # noqa: E402
from annotation.noise import NoiseProfile, answer_rng, object_is_hard, sample_objects, simulate_answers  # noqa: E402
from annotation.project import connect, ensure_project, project_title, textarea_result  # noqa: E402
from annotation.pull import pull  # noqa: E402
from annotation.push import crop_tasks, push  # noqa: E402
from tiermap import schema  # noqa: E402


def write_crops(ds: schema.DatasetPaths, objects: dict) -> list[str]:  # type: ignore[type-arg]
    """A crops/<scene>/index.json with distinct tiny images per object."""
    rng = np.random.default_rng(0)
    for scene, objs in objects.items():
        root = ds.dir / "crops" / scene
        records = []
        for oid, (cls, _) in objs.items():
            d = root / str(oid)
            d.mkdir(parents=True)
            names = ["crop.png", "context.png", "frame_0.jpg", "frame_1.jpg"]
            for name in names:
                Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(d / name)
            (d / "views.json").write_text("{}")
            records.append(schema.CropRecord(scene=scene, object_id=oid, class_name=cls, crop=f"{oid}/crop.png",
                                             context=f"{oid}/context.png", frames=[f"{oid}/frame_0.jpg", f"{oid}/frame_1.jpg"],
                                             views=f"{oid}/views.json", sha256=f"{oid:064x}"))
        schema.write_crop_index(schema.CropIndex(scene=scene, condition="baseline", k=3, min_pixels=50, pad=0.25, size=32,
                                                 objects=records), root / "index.json")
    return list(objects)


def main() -> None:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=1000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ls-"))
    ds = schema.DatasetPaths(tmp / "datasets", "bench")
    objects = sample_objects(args.objects, scenes=[f"scene_{i:02d}" for i in range(10)])
    scenes = write_crops(ds, objects)
    t0 = time.perf_counter()
    ls_server.start(ds, log=lambda *_: None)
    print(f"server start (from template): {time.perf_counter() - t0:.1f} s")
    try:
        ls = connect(ds)
        t0 = time.perf_counter()
        res = push(ds, scenes, ls, log=lambda *_: None)
        t_push = time.perf_counter() - t0
        print(f"push {res['created']} tasks: {t_push:.2f} s   (target < 30 s)")
        t0 = time.perf_counter()
        res = push(ds, scenes, ls, log=lambda *_: None)
        print(f"push again ({res['unchanged']} unchanged, {res['created']} created): {time.perf_counter() - t0:.2f} s")

        # Second project with 4 annotations per task, imported inline (setup, not timed).
        old = next(p for p in ls.projects() if p["title"] == project_title(ds))
        ls.update_project(old["id"], title=f"{project_title(ds)} (push benchmark)")
        pid = ensure_project(ls, ds)
        users = add_users(ds, ls, default_emails(4))
        ids = {u["email"]: u["id"] for u in ls.users() if u["email"] in users}
        profile = NoiseProfile()
        tasks = []
        for key, data in crop_tasks(ds, scenes).items():
            cls, lex = objects[data["scene"]][data["object_id"]]
            hard = object_is_hard(0, data["scene"], data["object_id"], profile)
            anns = [{"completed_by": ids[e], "lead_time": 10.0, "result": textarea_result(
                simulate_answers(lex, cls, k, answer_rng(0, data["scene"], data["object_id"], k), profile, hard=hard))}
                for k, e in enumerate(default_emails(4))]
            tasks.append({"data": data, "annotations": anns})
        for i in range(0, len(tasks), 250):
            ls.import_tasks(pid, tasks[i:i + 250])

        t0 = time.perf_counter()
        ref = ls.export_bytes(pid)
        t_ref = time.perf_counter() - t0
        t0 = time.perf_counter()
        info = pull(ds, scenes, ls)
        t_pull = time.perf_counter() - t0
        labels = schema.read_labels(ds.labels / "labels.parquet")
        names = {s: {oid: cls for oid, (cls, _) in objs.items()} for s, objs in objects.items()}
        t0 = time.perf_counter()
        gts, corrections = aggregate_dataset_with_report(labels, names)
        t_agg = time.perf_counter() - t0
        n_obj = sum(len(g.dataset.samples) for g in gts.values())
        print(f"bare JSON export ({len(ref) / 1e6:.1f} MB, reference): {t_ref:.2f} s")
        print(f"pull ({info['label rows']} label rows, {info['objects']} objects, {info['annotators']} annotators): {t_pull:.2f} s"
              f"   (ratio to the bare export {t_pull / t_ref:.2f})")
        print(f"aggregate ({n_obj} objects, {len(corrections)} spelling corrections): {t_agg:.2f} s")
        print(f"pull + aggregate: {t_pull + t_agg:.2f} s   (target < 10 s)")
    finally:
        ls_server.stop(ds)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
