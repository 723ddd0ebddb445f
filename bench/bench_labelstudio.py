"""Label Studio at dataset scale, with isolation on (one real server per annotator, 4 seats): push 1,000 tasks;
pull + aggregate 1,000 objects x 4 annotations.

Targets: push < 30 s, pull + aggregate < 10 s. The dataset is synthetic (1,000 objects in 10 scenes, a 32x32 PNG
crop + context + 2 frames each, written by this script). The seats start from the migrated template.
  * push         `annotation.push.push` into 4 empty seats (creates the project, storages and 1,000 tasks on each)
  * push again   the same call once more: nothing to create (idempotency costs one export per seat)
  * pull         each seat's annotator's 1,000 annotations are imported inline into a second project first (not
                 timed; the task record is pointed at it); then `annotation.pull.pull` (4 exports → raw files → tamper
                 check against the ledger → tidy → labels.parquet), a second pull (every annotation compared with the
                 ledger), and `aggregate_dataset_with_report` (normalise, spelling, union, ambiguous) on the result.
A reference figure with no tiermap code around it: the bare export requests of the same projects (`export_bytes`),
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
from annotation.annotators import ensure_simulated  # noqa: E402
from annotation.noise import (  # noqa: E402
    NoiseProfile,
    answer_rng,
    object_is_hard,
    sample_objects,
    simulate_answers,
)
from annotation.project import admins, project_fields, project_title, textarea_result  # noqa: E402
from annotation.pull import pull  # noqa: E402
from annotation.push import crop_tasks, push, read_tasks_record, tasks_record  # noqa: E402
from tiermap.formats.base import write_model
from tiermap.formats.crops import CropIndex, CropRecord, write_crop_index
from tiermap.formats.labels import read_labels
from tiermap.formats.labelstudio import SeatTasks
from tiermap.formats.layout import DatasetPaths


def write_crops(ds: DatasetPaths, objects: dict) -> list[str]:  # type: ignore[type-arg]
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
            records.append(CropRecord(scene=scene, object_id=oid, class_name=cls, crop=f"{oid}/crop.png",
                                             context=f"{oid}/context.png", frames=[f"{oid}/frame_0.jpg", f"{oid}/frame_1.jpg"],
                                             views=f"{oid}/views.json", sha256=f"{oid:064x}"))
        write_crop_index(CropIndex(scene=scene, condition="baseline", k=3, min_pixels=50, pad=0.25, size=32,
                                                 objects=records), root / "index.json")
    return list(objects)


def main() -> None:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=1000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ls-"))
    ds = DatasetPaths(tmp / "datasets", "bench")
    objects = sample_objects(args.objects, scenes=[f"scene_{i:02d}" for i in range(10)])
    scenes = write_crops(ds, objects)
    quiet = lambda *_: None  # noqa: E731
    t0 = time.perf_counter()
    ensure_simulated(ds, 4, log=quiet)
    print(f"4 seats created and started (from the template): {time.perf_counter() - t0:.1f} s")
    try:
        t0 = time.perf_counter()
        res = push(ds, scenes, 4, log=quiet)
        t_push = time.perf_counter() - t0
        print(f"push {res['tasks']} tasks to {res['seats']} seats ({res['created']} created): {t_push:.2f} s   (target < 30 s)")
        t0 = time.perf_counter()
        res = push(ds, scenes, 4, log=quiet)
        print(f"push again ({res['unchanged']} unchanged, {res['created']} created): {time.perf_counter() - t0:.2f} s")

        # A second project per seat holding its annotator's 1,000 annotations, imported inline (setup, not timed).
        record = read_tasks_record(ds)
        profile = NoiseProfile()
        data = crop_tasks(ds, scenes)
        for k, ls in enumerate(admins(ds)):
            pid = ls.create_project(**{**project_fields(ds), "title": f"{project_title(ds)} (pull benchmark)"})
            tasks = []
            for key, d in data.items():
                cls, lex = objects[d["scene"]][d["object_id"]]
                hard = object_is_hard(0, d["scene"], d["object_id"], profile)
                answers = simulate_answers(lex, cls, k, answer_rng(0, d["scene"], d["object_id"], k), profile, hard=hard)
                tasks.append({"data": d, "annotations": [{"completed_by": ls.seat.user_id, "lead_time": 10.0,
                                                          "result": textarea_result(answers)}]})
            ids = []
            for i in range(0, len(tasks), 250):
                ids += ls.import_tasks(pid, tasks[i:i + 250])
            record.seats[ls.seat.annotator] = SeatTasks(project_id=pid, tasks=dict(zip(data, ids)))
        write_model(record, tasks_record(ds))

        t0 = time.perf_counter()
        ref = [ls.export_bytes(record.seats[ls.seat.annotator].project_id) for ls in admins(ds)]
        t_ref = time.perf_counter() - t0
        t0 = time.perf_counter()
        info = pull(ds, scenes)
        t_pull = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = pull(ds, scenes)
        t_again = time.perf_counter() - t0
        labels = read_labels(ds.labels / "labels.parquet")
        names = {s: {oid: cls for oid, (cls, _) in objs.items()} for s, objs in objects.items()}
        t0 = time.perf_counter()
        gts, corrections = aggregate_dataset_with_report(labels, names)
        t_agg = time.perf_counter() - t0
        n_obj = sum(len(g.dataset.samples) for g in gts.values())
        print(f"bare JSON exports of 4 seats ({sum(map(len, ref)) / 1e6:.1f} MB, reference): {t_ref:.2f} s")
        print(f"pull ({info['new annotations']} new annotations, {info['label rows']} label rows, {info['annotators']} annotators): "
              f"{t_pull:.2f} s   (ratio to the bare exports {t_pull / t_ref:.2f})")
        print(f"pull again ({again['tamper flags']} flags, every annotation compared with the ledger): {t_again:.2f} s")
        print(f"aggregate ({n_obj} objects, {len(corrections)} spelling corrections): {t_agg:.2f} s")
        print(f"pull + aggregate: {t_pull + t_agg:.2f} s   (target < 10 s)")
    finally:
        ls_server.stop(ds)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
