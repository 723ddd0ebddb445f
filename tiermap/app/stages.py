"""Pipeline stages: each is one `tiermap` command and one function from input folders + params to outputs."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from tiermap.atomic import atomic_dir
from tiermap.formats.base import SchemaError, write_model
from tiermap.formats.benchbot import OBJECTS_FILE
from tiermap.formats.crops import VISIBILITY_FILE, CloseupIndex, CropIndex
from tiermap.formats.labels import LABELS_FILE, SPELLING_COLUMNS, SPELLING_FILE, read_labels, write_labels, write_table_csv
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.openlex3d import (
    GT_CATEGORIES_FILE,
    PREPARED_SEMANTICS_DIR,
    PROMPT_LIST_FILE,
    prepared_semantics_file,
    query_mapping_file,
    read_gt_categories,
    read_gt_cloud,
    read_gt_cloud_colors,
    write_prepared_semantics,
    write_prompt_list,
)
from tiermap.formats.params import PARAMS_FILE, VQAParams, read_params
from tiermap.formats.scene import SCENE_FILE, SCENE_MESH, read_scene, write_scene_mesh
from tiermap.formats.sequence import TRAJ_FILE, SequenceMeta, read_traj


def load_params(path: Path | str = PARAMS_FILE) -> dict[str, Any]:
    """params.yaml, checked against formats.params (a missing or misspelt block is one line), as written."""
    return read_params(path)[1]


def build_dir(ds: DatasetPaths, scene: str) -> Path:
    """Per-scene GT of the pipeline (cloud, objects.json, visibility) before labels join it in gt/."""
    return ds.scene_folder("build", scene)


def make_scene(ds: DatasetPaths, scene: str, params: dict[str, Any], source: str | None = None, seed: int | None = None,
               input_path: Path | str | None = None, classes: Path | str | None = None, up: str | None = None) -> Path:
    """Write scenes/<scene>/scene.json (and mesh.ply for mesh sources); arguments override params.yaml `scene.<scene>`
    (procedural) or `mesh_scene.<scene>` (replica, hm3d, scannetpp, mesh, habitat: `source`, `input`, `seed`, optional `classes`, `up`)."""
    from generation.sources import build_scene

    spec = dict((params.get("scene") or {}).get(scene) or (params.get("mesh_scene") or {}).get(scene) or {})
    src = source or spec.get("source", "procedural")
    if seed is None and "seed" not in spec and src == "procedural":
        raise SchemaError(PARAMS_FILE, f"scene.{scene}", "a block with the scene's seed (or pass --seed)")
    input_path = input_path or spec.get("input")
    sc, mesh = build_scene(scene, src, seed=int(seed if seed is not None else spec.get("seed", 0)), input_path=input_path,
                           rooms=spec.get("rooms"), classes=classes or spec.get("classes"), up=up or spec.get("up"))
    with atomic_dir(ds.scene_dir(scene)) as tmp:
        if mesh is not None:
            write_scene_mesh(tmp / SCENE_MESH, mesh)
        write_model(sc, tmp / SCENE_FILE)
    return ds.scene_dir(scene) / SCENE_FILE


def make_sequence(ds: DatasetPaths, scene: str, condition: str, params: dict[str, Any], renderer: str | None = None) -> SequenceMeta:
    """Render sequences/<scene>/<condition>/."""
    from generation.sequence import render_sequence

    return render_sequence(ds.scene_dir(scene) / SCENE_FILE, condition, params, ds.sequence_dir(scene, condition), renderer_name=renderer)


def make_scene_gt(ds: DatasetPaths, scene: str, params: dict[str, Any], out: Path | None = None) -> dict[str, int]:
    """GT cloud, objects.json and visibility of one scene into `out` (default gt/<scene>/; the pipeline uses build/<scene>/)."""
    from generation.scene_gt import build_scene_gt

    g = params["gt"]
    ref = ds.sequence_dir(scene, params["reference_condition"])
    with atomic_dir(out or ds.scene_folder("gt", scene)) as tmp:
        return build_scene_gt(ds.scene_dir(scene) / SCENE_FILE, ref, tmp, float(g["density"]), int(g["min_pixels"]))


def make_preview(ds: DatasetPaths, scene: str, params: dict[str, Any]) -> list[Path]:
    """previews/<scene>/contact_sheet.png and topdown.png."""
    from generation.preview import contact_sheet, topdown_map

    out = ds.scene_folder("previews", scene)
    seqs = {c: ds.sequence_dir(scene, c) for c in params["conditions"]}
    sc = read_scene(ds.scene_dir(scene) / SCENE_FILE)
    traj = read_traj(ds.sequence_dir(scene, params["reference_condition"]) / TRAJ_FILE)
    with atomic_dir(out) as tmp:
        contact_sheet(seqs, tmp / "contact_sheet.png")
        topdown_map(sc, traj, tmp / "topdown.png")
    return [out / "contact_sheet.png", out / "topdown.png"]


def labels_from_lexicon(ds: DatasetPaths, scenes: list[str]) -> Path:
    """Write labels/labels.parquet from the scenes' lexicons (one 'lexicon' annotator)."""
    from annotation.lexicon_labels import lexicon_labels

    df = lexicon_labels([ds.scene_dir(s) / SCENE_FILE for s in scenes], [build_dir(ds, s) / VISIBILITY_FILE for s in scenes])
    return write_labels(ds.labels / LABELS_FILE, df)


def closeups_dir(ds: DatasetPaths, scene: str) -> Path:
    """datasets/<d>/closeups/<scene>/: dedicated close-up renders of every object."""
    return ds.scene_folder("closeups", scene)


def make_closeups(ds: DatasetPaths, scene: str, params: dict[str, Any], renderer: str | None = None) -> CloseupIndex:
    """closeups/<scene>/: the best close-up view of every object under the reference lighting (params annotation.closeups)."""
    from generation.closeup import CloseupParams, write_closeups

    cp = CloseupParams.from_dict((params.get("annotation") or {}).get("closeups"))
    return write_closeups(ds.scene_dir(scene) / SCENE_FILE, params["reference_condition"], params["lighting"], closeups_dir(ds, scene), cp,
                          renderer or params["render"].get("renderer", "pyrender"))


def make_crops(ds: DatasetPaths, scene: str, params: dict[str, Any]) -> CropIndex:
    """crops/<scene>/: masked and context crops from each visible object's close-up, best sequence frames as context."""
    from annotation.crops import write_crops

    c = params["annotation"]["crops"]
    return write_crops(ds.scene_dir(scene) / SCENE_FILE, ds.sequence_dir(scene, params["reference_condition"]),
                       build_dir(ds, scene) / VISIBILITY_FILE, ds.scene_folder("crops", scene),
                       k=int(c["k"]), min_pixels=int(c["min_pixels"]), pad=float(c["pad"]), size=int(c["size"]),
                       closeup_dir=closeups_dir(ds, scene))


def aggregated_dir(ds: DatasetPaths) -> Path:
    """aggregated/<scene>/gt_categories.json (labels merged, before clutter) and spelling_corrections.csv."""
    return ds.dir / "aggregated"


def make_aggregate(ds: DatasetPaths, scenes: list[str]) -> dict[str, int]:
    """Merge annotators' labels per object (normalise, spell-correct, union, least specific category, ambiguous flag)."""
    from annotation.aggregate import aggregate_dataset_with_report

    labels = read_labels(ds.labels / LABELS_FILE)
    unknown = sorted(set(labels["scene"]) - set(scenes))
    if unknown:
        raise SchemaError(ds.labels / LABELS_FILE, "scene", f"scenes of this dataset {scenes}", unknown[0])
    names: dict[str, dict[int, str]] = {}
    for scene in scenes:
        sc = read_scene(ds.scene_dir(scene) / SCENE_FILE)
        names[scene] = {o.id: o.class_name for o in sc.objects}
        bad = sorted(set(labels.loc[labels["scene"] == scene, "object_id"]) - set(names[scene]))
        if bad:
            raise SchemaError(ds.labels / LABELS_FILE, "object_id", f"ids of objects in scene {scene!r}", bad[0])
    # Known words for spelling correction: the objects' class names (the labels themselves weigh in by use).
    vocabulary = {n.replace("_", " ") for objs in names.values() for n in objs.values()}
    gts, corrections = aggregate_dataset_with_report(labels, names, vocabulary)
    with atomic_dir(aggregated_dir(ds)) as tmp:
        for scene, gt in gts.items():
            (tmp / scene).mkdir()
            write_model(gt, tmp / scene / GT_CATEGORIES_FILE)
        write_table_csv(tmp / SPELLING_FILE, corrections, SPELLING_COLUMNS)
    return {"scenes": len(gts), "objects": sum(len(g.dataset.samples) for g in gts.values()), "spelling corrections": len(corrections)}


def make_clutter(ds: DatasetPaths, scenes: list[str], vqa: VQAParams | None = None) -> dict[str, int]:
    """Assemble gt/: clutter from oriented-box IoU > 0, query mappings l0/l1/all, prompt list, scene GT files, and the
    GT scene graph with its VQA questions."""
    from tiermap.app.vqa import dataset_agreement, write_scene_vqa

    from annotation.clutter import add_clutter, boxes_from_cloud, clutter_pairs
    from annotation.queries import prompt_labels, query_mappings
    from generation.scene_gt import GT_CLOUD

    gts = []
    counts = {"scenes": 0, "objects": 0, "clutter pairs": 0, "questions": 0}
    agreed = dataset_agreement(ds)
    with atomic_dir(ds.gt) as tmp:
        for scene in scenes:
            # In the DVC pipeline scene GT comes from build/<scene>; run by hand it may have been written to gt/<scene>.
            src = build_dir(ds, scene) if build_dir(ds, scene).is_dir() else ds.gt / scene
            gt = read_gt_categories(aggregated_dir(ds) / scene / GT_CATEGORIES_FILE)
            points, ids = read_gt_cloud(src / GT_CLOUD)
            gt = add_clutter(gt, clutter_pairs(boxes_from_cloud(points, ids)))
            out = tmp / scene
            out.mkdir()
            write_model(gt, out / GT_CATEGORIES_FILE)
            for level, mapping in query_mappings(gt).items():
                write_model(mapping, out / query_mapping_file(level))
            for name in (GT_CLOUD, OBJECTS_FILE, VISIBILITY_FILE):
                shutil.copy2(src / name, out / name)
            (tmp / PREPARED_SEMANTICS_DIR).mkdir(exist_ok=True)
            write_prepared_semantics(tmp / prepared_semantics_file(scene), points, ids, read_gt_cloud_colors(src / GT_CLOUD))
            counts["questions"] += write_scene_vqa(ds, scene, out, gt, src, vqa or VQAParams(), agreed.get(scene, {}))["questions"]
            gts.append(gt)
            counts["scenes"] += 1
            counts["objects"] += len(gt.dataset.samples)
            counts["clutter pairs"] += sum(len(s.labels.image_attributes.clutter) for s in gt.dataset.samples) // 2
        write_prompt_list(tmp / PROMPT_LIST_FILE, prompt_labels(gts))
    return counts


class DvcError(RuntimeError):
    """A dvc command failed (its last line says why)."""


def dvc(args: list[str], cwd: Path | str = ".", check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    """Run a dvc command with the offline settings."""
    import os
    import sys

    # Stage commands call `tiermap`: put this interpreter's bin first so they run without an activated venv.
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "")])}
    exe = Path(sys.executable).with_name("dvc")
    cmd = [str(exe) if exe.exists() else "dvc", *args]
    res = subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=quiet)
    if check and res.returncode != 0:
        detail = (res.stderr or res.stdout or "").strip().splitlines()[-1:] if quiet else []
        raise DvcError(f"`dvc {' '.join(args)}` failed (exit {res.returncode}){': ' + detail[0] if detail else ''}")
    return res


def dvc_remotes(repo: Path | str) -> tuple[list[str], str | None]:
    """Configured DVC remote names and the default one (repo, local, global and system config merged)."""
    from dvc.config import Config

    cfg = Config(dvc_dir=str(Path(repo) / ".dvc"))
    return sorted(cfg.get("remote", {})), cfg.get("core", {}).get("remote")
