"""The GT scene graph and question set of each released scene: built in the GT stage, rebuilt by `tiermap vqa questions`."""
from __future__ import annotations

from pathlib import Path

from annotation.aggregate import agreed_synonyms
from generation.scene_graph_gt import gt_scene_graph
from generation.vqa_questions import generate_questions
from tiermap.formats.base import SchemaError
from tiermap.formats.crops import VISIBILITY_FILE, read_visibility
from tiermap.formats.labels import LABELS_FILE, read_labels
from tiermap.formats.layout import DatasetPaths, plain_name
from tiermap.formats.openlex3d import GTCategories
from tiermap.formats.params import VQAParams
from tiermap.formats.scene import SCENE_FILE, read_scene
from tiermap.formats.scene_graph import SCENE_GRAPH_FILE, read_tiermap_graph, write_scene_graph
from tiermap.formats.vqa import QUESTIONS_FILE, QuestionSet, write_questions


def dataset_agreement(ds: DatasetPaths) -> dict[str, dict[int, list[str]]]:
    """Synonyms most annotators typed, per scene and object ({} when the dataset has no labels table)."""
    path = ds.labels / LABELS_FILE
    return agreed_synonyms(read_labels(path)) if path.is_file() else {}


def write_scene_vqa(ds: DatasetPaths, scene: str, out: Path, labels: GTCategories, scene_gt: Path,
                    params: VQAParams, agreed: dict[int, list[str]]) -> dict[str, int]:
    """Write `out/scene_graph.json` and `out/vqa_questions.json` for one scene; counts."""
    sc = read_scene(ds.scene_dir(scene) / SCENE_FILE)
    graph = gt_scene_graph(sc, ds.scene_dir(scene), labels, read_visibility(scene_gt / VISIBILITY_FILE), params.thresholds, agreed)
    write_scene_graph(graph, out / SCENE_GRAPH_FILE)
    qs = generate_questions(graph, params.seed, params.per_category, params.max_per_object)
    write_questions(qs, out / QUESTIONS_FILE)
    return {"graph nodes": len(graph.nodes), "graph edges": len(graph.edges), "questions": len(qs.questions)}


def make_questions(ds: DatasetPaths, scenes: list[str], params: VQAParams, *, gemini_model: str | None = None,
                   keyframes: str = "pose", reference_condition: str = "baseline") -> dict[str, int]:
    """Regenerate gt/<scene>/vqa_questions.json from the released GT scene graph (its relations as released) with the
    `vqa` params; with `gemini_model`, LVLM questions on the reference sequence's key frames are checked and added."""
    from generation.vqa_lvlm import lvlm_questions

    if keyframes not in ("pose", "coverage"):
        raise SchemaError("--keyframes", "<option>", "pose or coverage", keyframes)
    counts = {"scenes": 0, "questions": 0, "lvlm kept": 0, "lvlm contradicted": 0, "lvlm unverifiable": 0}
    for scene in scenes:
        path = ds.gt / plain_name(scene, "--scene") / SCENE_GRAPH_FILE
        if not path.is_file():
            raise SchemaError(path, "<file>", "the released GT scene graph (run the GT stage: `tiermap clutter`)")
        graph = read_tiermap_graph(path)
        qs = generate_questions(graph, params.seed, params.per_category, params.max_per_object)
        if gemini_model:
            extra, stats = lvlm_questions(graph, ds.sequence_dir(scene, reference_condition), gemini_model,
                                          ds.dir / "build" / "vqa_lvlm_cache", keyframes=keyframes,
                                          absent=qs.stats.get("absent_classes", []))
            qs = qs.model_copy(update={"questions": qs.questions + extra, "stats": {**qs.stats, "lvlm": stats}})
            for k in ("kept", "contradicted", "unverifiable"):
                counts[f"lvlm {k}"] += stats[k]
        write_questions(QuestionSet.model_validate(qs.model_dump(by_alias=True)), ds.gt / scene / QUESTIONS_FILE)
        counts["scenes"] += 1
        counts["questions"] += len(qs.questions)
    return counts if gemini_model else {k: v for k, v in counts.items() if not k.startswith("lvlm")}
