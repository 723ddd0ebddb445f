"""`make demo`: run the DVC pipeline on the embedded procedural default and summarise where results are."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tiermap.app.stages import dvc, load_params
from tiermap.formats.benchbot import BENCHBOT_RESULTS_FILE, OBJECTS_FILE
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.openlex3d import GT_CLOUD_FILE, query_mapping_file
from tiermap.formats.params import PARAMS_FILE
from tiermap.formats.predictions import TEXT_FEATURES_FILE
from tiermap.formats.records import METHOD_FILE, read_method, read_validation_report
from tiermap.formats.scene_graph import SCENE_GRAPH_FILE
from tiermap.formats.vqa import ANSWERS_FILE, QUESTIONS_FILE


def label_with_simulated_annotators(repo: Path, ds: DatasetPaths, scenes: list[str], annotators: int) -> dict[str, int]:
    """Give simulated annotators their seats, push crops, let them label, pull; stop the servers."""
    from annotation import ls_server
    from annotation.annotators import ensure_simulated
    from annotation.simulate import simulate

    try:
        ensure_simulated(ds, annotators)
        dvc(["repro", "push"], repo)
        counts = simulate(ds, scenes, annotators)
        dvc(["repro", "-f", "-s", "pull"], repo)
    finally:
        ls_server.stop(ds)
    return counts


def run_demo(repo: Path, ds: DatasetPaths) -> dict[str, str]:
    """scenes → sequences → scene GT → close-ups → crops → Label Studio (simulated annotators) → aggregate → clutter → validation."""
    from annotation.ls_server import credentials_path

    params = load_params(repo / PARAMS_FILE)
    scenes = list(params["scenes"])
    if not (repo / ".dvc").is_dir():
        dvc(["init", "-q"], repo)
        dvc(["config", "core.analytics", "false"], repo)
        dvc(["config", "core.check_update", "false"], repo)
    dvc(["repro", "sequence", "scene_gt"], repo)
    sim = label_with_simulated_annotators(repo, ds, scenes, int(params["annotation"]["annotators"]))
    dvc(["repro"], repo)
    vqa, scores = score_baseline(ds, scenes, list(params["conditions"]), params.get("reference_condition", "baseline"))
    report = read_validation_report(ds.validation_report)
    seqs = sorted(p.parent.relative_to(ds.dir).as_posix() for p in (ds.dir / "sequences").glob("*/*/meta.json"))
    return {
        "sequences": f"{ds.dir / 'sequences'} ({len(seqs)}: {', '.join(seqs)})",
        "previews": f"{ds.dir / 'previews'} (contact_sheet.png, topdown.png per scene)",
        "closeups": f"{ds.dir / 'closeups'} (a 512 px close-up of every object under the reference lighting)",
        "crops": f"{ds.dir / 'crops'} (what annotators see: crops of the close-ups, sequence frames as context)",
        "labels": f"{ds.labels} ({sim['tasks']} tasks, {sim['annotators']} simulated annotators in Label Studio; raw exports in raw/)",
        "ground truth": str(ds.gt),
        "validation": f"{ds.validation_report} ({'clean' if report.success else 'FAILED'}; Data Docs {ds.dir / 'validation_docs' / 'index.html'})",
        "baseline predictions": str(ds.dir / "predictions" / "caption-oracle"),
        "scores": scores,
        "vqa": f"{ds.dir / 'eval' / 'caption-oracle' / 'vqa'} (GT questions answered from the baseline's scene graph per "
               f"condition by the program answerer; accuracy %, majority answer and GT graph for reference)\n{vqa}",
        "label studio": f"tiermap annotate serve --dataset {ds.name}   (one seat per annotator; admin credentials in "
                        f"{credentials_path(ds)})",
        "next": f"tiermap release 0.1.0 --dataset {ds.name}   (after `git commit` and `dvc remote add -d ...`)",
    }


def score_vqa(ds: DatasetPaths, scenes: list[str], conditions: list[str], reference: str, preds: Path, out: Path,
              encoder: Any) -> str:
    """The program answerer on the caption baseline's scene graph of every condition, scored per scene; the table."""
    from evaluation.report import write_report
    from evaluation.vqa_answer import answer_questions
    from evaluation.vqa_score import evaluate_vqa

    tables = []
    for scene in scenes:
        questions = ds.gt / scene / QUESTIONS_FILE
        answers = []
        for cond in conditions:
            path = preds / cond / scene / ANSWERS_FILE
            answer_questions(questions, preds / cond / scene / SCENE_GRAPH_FILE, "program", path, method="caption-oracle",
                             condition=cond, encoder=encoder)
            answers.append(path)
        result, extra = evaluate_vqa(questions, answers, gt_graph=ds.gt / scene / SCENE_GRAPH_FILE, reference=reference,
                                     encoder=encoder)
        write_report(out / "vqa" / scene, result, extra_plots=extra)
        tables.append(vqa_table(result))
    return "\n".join(tables)


def vqa_table(result: dict) -> str:
    """Accuracy (%) per category (rows) and condition (columns), with the majority and GT-graph reference columns."""
    conds = list(result["conditions"])
    cols = [*conds, "majority", "gt-graph"]
    cell = {c: result["conditions"][c] for c in conds} | {r: result["references"].get(r) for r in ("majority", "gt-graph")}
    cats = list(next(iter(result["conditions"].values()))["categories"])
    width = max(len(c) for c in [*cats, "overall (no Functional)"])
    lines = [f"{result['scene']}: {result['n_questions']} questions".ljust(width) + "".join(f"{c[:14]:>15}" for c in cols)]
    for c in [*cats, "overall (no Functional)"]:
        vals = []
        for col in cols:
            d = cell[col]
            v = None if d is None else (d["overall_no_functional"] if c.startswith("overall") else d["categories"].get(c, {}))
            vals.append("" if not v or v.get("accuracy") is None else f"{100 * v['accuracy']:.1f}")
        lines.append(c.ljust(width) + "".join(f"{v:>15}" for v in vals))
    return "\n".join(lines)


def score_baseline(ds: DatasetPaths, scenes: list[str], conditions: list[str], reference: str) -> tuple[str, str]:
    """Caption baseline (oracle captions, MiniLM) on every sequence, scored with the four `tiermap eval` metrics and VQA;
    (the VQA table, the one-line summary)."""
    from evaluation.baseline import caption_baseline
    from evaluation.layout import osma_inputs, retrieval_scenes, segmentation_scenes
    from evaluation.omq import score_omq
    from evaluation.osma import evaluate_conditions
    from evaluation.report import write_report
    from evaluation.retrieval import evaluate_retrieval
    from evaluation.segmentation import evaluate_segmentation
    from evaluation.text_features import FeatureFile, MiniLMEncoder

    preds, out = ds.dir / "predictions" / "caption-oracle", ds.dir / "eval" / "caption-oracle"
    minilm = MiniLMEncoder()  # one model load for every sequence and the OSMa vocabulary
    for scene in scenes:
        gt = ds.gt / scene
        for cond in conditions:
            caption_baseline(ds.sequence_dir(scene, cond), preds / cond / scene, gt_classes=gt / OBJECTS_FILE,
                             prompt_list=ds.prompt_list, queries=[gt / query_mapping_file("all")],
                             encoder=minilm)
    ref = preds / reference
    enc = FeatureFile(ref / scenes[0] / TEXT_FEATURES_FILE)
    note = read_method(ref / scenes[0] / METHOD_FILE).note
    named = {"method": "caption-oracle", "note": note}
    seg_scenes, prompts, _ = segmentation_scenes(ref, None, None, None, ds.gt, scenes, ds.prompt_list)
    seg = evaluate_segmentation(seg_scenes, prompts, enc, top_n=(1, 5, 10), with_set_ranking=True, progress=True) | named
    write_report(out / "segmentation", seg)
    ret = evaluate_retrieval(retrieval_scenes(ref, None, None, None, None, ds.gt, scenes, "all"), enc) | named
    write_report(out / "retrieval", ret)
    for scene in scenes:
        data = osma_inputs(ds.gt / scene / GT_CLOUD_FILE, None, None, preds, conditions, minilm, ("an image of {}",))
        write_report(out / "osma" / scene, evaluate_conditions(data, baseline=reference) | named)
    omq = score_omq([ds.gt / s / OBJECTS_FILE for s in scenes], [ref / s / BENCHBOT_RESULTS_FILE for s in scenes]) | named
    write_report(out / "omq", omq)
    vqa = score_vqa(ds, scenes, conditions, reference, preds, out, minilm)
    top1 = seg["frequency"]["top1"]
    return vqa, (f"{out}  (segmentation top-1 S {100 * top1['synonyms']:.1f} % · M {100 * top1['missing']:.1f} %, "
            f"mR {seg['set_ranking']['overall']:.3f} · retrieval mAP {ret['overall']['all_ap']:.1f} · "
            f"OMQ {omq['scores']['OMQ']:.3f}; oracle captions)")
