"""Evaluation sweeps: every prediction folder of methods x conditions x scenes scored as its own task, gathered into one result.

Each leaf folder (one method, one condition, one scene, in the official per-scene layout) is scored alone, on a Dask
worker when a client is given, into the per-scene part the single-run tools pool: a segmentation scene result, an OSMa
confusion matrix, retrieval matches. They are then combined per method and condition exactly as `tiermap eval
segmentation|osma|retrieval` combines scenes, so a sweep's numbers equal those of one run per method and condition.
"""
from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.text_features import TextEncoder
from tiermap.formats.base import InputError, SchemaError
from tiermap.formats.openlex3d import GT_CATEGORIES_FILE, PROMPT_LIST_FILE, query_mapping_file, read_prompt_list, read_query_mapping
from tiermap.formats.vqa import QUESTIONS_FILE, read_questions

LAYOUT = "{method}/{condition}/{scene}"
KINDS = ("segmentation", "retrieval", "osma", "vqa")
_FIELDS = ("method", "condition", "scene")


@dataclass(frozen=True)
class Leaf:
    """One prediction folder of the sweep."""

    method: str
    condition: str
    scene: str
    folder: Path

    @property
    def key(self) -> str:
        """method/condition/scene."""
        return f"{self.method}/{self.condition}/{self.scene}"


def find_leaves(root: Path, layout: str = LAYOUT, scenes: Sequence[str] | None = None) -> list[Leaf]:
    """The prediction folders under root matching the layout ({scene} required; {method}, {condition} optional)."""
    if not root.is_dir():
        raise SchemaError(root, "--predictions", "a folder of prediction folders laid out as --layout")
    names = re.findall(r"{(\w+)}", layout)
    if "scene" not in names or set(names) - set(_FIELDS) or len(names) != len(set(names)) or layout.startswith("/"):
        raise SchemaError("--layout", "layout", "a relative path of {method}, {condition} and {scene} (e.g. " + LAYOUT + ")", layout)
    parts = re.split(r"({\w+})", layout)
    pattern = re.compile("".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts))
    glob = "".join("*" if p.startswith("{") else p for p in parts)
    leaves = []
    for folder in sorted(root.glob(glob)):
        m = pattern.fullmatch(folder.relative_to(root).as_posix())
        if m and folder.is_dir() and (not scenes or m["scene"] in scenes):
            g = m.groupdict()
            leaves.append(Leaf(g.get("method", root.name), g.get("condition", "-"), g["scene"], folder))
    if not leaves:
        raise SchemaError(root, "--layout", f"prediction folders matching {layout}" + (f" for scenes {list(scenes)}" if scenes else ""))
    return leaves


def gt_folders(gt_dir: Path, leaves: list[Leaf]) -> dict[str, Path]:
    """{scene: its released GT folder}, every leaf's scene present."""
    if not gt_dir.is_dir():
        raise SchemaError(gt_dir, "--gt-dir", "a released GT folder with one sub-folder per scene")
    out = {s: gt_dir / s for s in sorted({lf.scene for lf in leaves})}
    missing = [s for s, f in out.items() if not (f / GT_CATEGORIES_FILE).is_file()]
    if missing:
        raise SchemaError(gt_dir, "<scenes>", f"a GT scene folder (with {GT_CATEGORIES_FILE}) for every predicted scene", missing)
    return out


# ---------------------------------------------------------------- one leaf (runs on a worker)
def _guard(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """{"value": ...} or {"error": one line} for input errors; genuine bugs still raise (with their traceback)."""
    try:
        return {"value": fn(*args, **kwargs)}
    except InputError as err:
        return {"error": str(err)}


def segmentation_leaf(folder: Path, gt: Path, prompts: list[str], feats: Any, opts: dict[str, Any]) -> dict[str, Any]:
    """OpenLex3D segmentation of one prediction folder against one GT scene."""
    from evaluation.layout import scene_cloud
    from evaluation.segmentation import evaluate_scene, load_scene

    def one() -> dict:
        cloud, ids = scene_cloud(gt)
        scene = load_scene(gt.name, gt / GT_CATEGORIES_FILE, cloud, folder, ids, None)
        return evaluate_scene(scene, prompts, feats, tuple(opts["top_n"]), opts["set_ranking"], opts["definition"])
    return _guard(one)


def osma_leaf(folder: Path, gt: Path, classes: Any, opts: dict[str, Any]) -> dict[str, Any]:
    """OSMa-Bench confusion matrix of one prediction folder against one GT scene."""
    from evaluation import osma
    from evaluation.layout import osma_predictions, osma_scene_gt, scene_cloud

    def one() -> dict:
        cloud, ids = scene_cloud(gt)
        points, labels, _ = osma_scene_gt(cloud, ids, None)
        pred_points, pred_labels = osma_predictions(folder, gt.name, classes)
        return osma.evaluate_scene(points, labels, pred_points, pred_labels, name=str(folder))
    return _guard(one)


def retrieval_leaf(folder: Path, gt: Path, rows: dict, opts: dict[str, Any]) -> dict[str, Any]:
    """OpenLex3D retrieval matches of one prediction folder against one GT scene."""
    from evaluation.layout import retrieval_scenes, scene_cloud
    from evaluation.retrieval import scene_matches

    def one() -> Any:
        cloud, ids = scene_cloud(gt)
        (scene,) = retrieval_scenes(folder, gt / GT_CATEGORIES_FILE, cloud, ids, gt / query_mapping_file(opts["level"]),
                                    None, None, opts["level"])
        return scene_matches(scene, rows, **{k: v for k, v in opts.items() if k not in ("level", "metric", "iou_threshold")})
    return _guard(one)


_MINILM: list[Any] = []  # one MiniLM per worker process, loaded by its first VQA task


def vqa_leaf(folder: Path, gt: Path, opts: dict[str, Any]) -> dict[str, Any]:
    """One method's scene graph (any supported format) answers the scene's GT questions; each answer matched."""
    from evaluation.vqa_answer import answer_program, load_graph, minilm_encoder
    from evaluation.vqa_score import match_answers

    def one() -> dict:
        qs = read_questions(gt / QUESTIONS_FILE)
        graph = load_graph(folder)
        if not _MINILM:
            _MINILM.append(minilm_encoder())
        answers = {a.id: a.answer for a in answer_program(qs, graph, _MINILM[0])}
        return {"answers": answers, "how": match_answers(qs.questions, answers, _MINILM[0])}
    return _guard(one)


# ---------------------------------------------------------------- running the leaves
Progress = Callable[[int, int, str], None]


def run_leaves(fn: Callable[..., dict], leaves: list[Leaf], args: Callable[[Leaf], tuple], shared: tuple, client: Any = None,
               on_done: Progress | None = None) -> dict[str, dict[str, Any]]:
    """{leaf key: {"value"|"error": ...}}: in this process, or as Dask tasks (shared arguments scattered once)."""
    out: dict[str, dict[str, Any]] = {}
    if client is None:
        for lf in leaves:
            out[lf.key] = fn(*args(lf), *shared)
            if on_done:
                on_done(len(out), len(leaves), lf.key)
        return out
    from distributed import as_completed

    big = client.scatter(list(shared), broadcast=True, hash=False)  # not by content: equal data of two sweeps would share a key
    run = uuid.uuid4().hex[:8]  # task keys unique per sweep: a key reused while the last sweep's is released loses its data
    futures = {client.submit(fn, *args(lf), *big, key=f"eval-{lf.key}-{run}", pure=False, retries=2): lf.key for lf in leaves}
    for fut in as_completed(futures):
        out[futures[fut]] = fut.result()
        if on_done:
            on_done(len(out), len(leaves), futures[fut])
    return {lf.key: out[lf.key] for lf in leaves}


def sweep(kind: str, root: Path, gt_dir: Path, encoder: TextEncoder | None, *, layout: str = LAYOUT,
          scenes: Sequence[str] | None = None, options: dict[str, Any] | None = None, client: Any = None,
          on_done: Progress | None = None) -> dict:
    """Score every leaf and gather one sweep result (see `evaluation.sweep_gather`)."""
    from evaluation import sweep_gather

    if kind not in KINDS:
        raise SchemaError("<sweep>", "kind", f"one of {', '.join(KINDS)}", kind)
    opts = dict(options or {})
    leaves = find_leaves(root, layout, scenes)
    gts = gt_folders(gt_dir, leaves)
    args = lambda lf: (lf.folder, gts[lf.scene])  # noqa: E731
    if kind == "segmentation":
        from evaluation.text_features import check_texts

        opts = {"top_n": [1, 5, 10], "set_ranking": False, "definition": "official", **opts}
        from evaluation.segmentation import check_options

        check_options(opts["top_n"], opts["definition"])
        prompt_path = opts.pop("prompt_list", None) or gt_dir / PROMPT_LIST_FILE
        prompts = read_prompt_list(prompt_path)
        check_texts(prompts, str(prompt_path))
        if encoder is None:
            raise SchemaError("<options>", "--text-features", "a text encoder for the prompts (--text-features or --clip-model)")
        parts = run_leaves(segmentation_leaf, leaves, args, (prompts, encoder(prompts), opts), client, on_done)
        extra = {"n_prompts": len(prompts), "text_encoder": getattr(encoder, "name", "custom")}
    elif kind == "retrieval":
        from evaluation.layout import LEVELS
        from evaluation.retrieval import check_options, text_rows

        level = opts.setdefault("level", "l0")
        if level not in LEVELS:
            raise SchemaError("--level", level, "one of l0, l1, all")
        check_options(**{k: v for k, v in opts.items() if k != "level"})
        if encoder is None:
            raise SchemaError("<options>", "--text-features", "a text encoder for the queries (--text-features or --clip-model)")
        queries = []
        for s, f in gts.items():
            mapping = read_query_mapping(f / query_mapping_file(level))
            queries.append((s, {lv: getattr(mapping, lv) for lv in LEVELS[level] if getattr(mapping, lv) is not None}))
        parts = run_leaves(retrieval_leaf, leaves, args, (text_rows(queries, encoder), opts), client, on_done)
        extra = {"level": level}
    elif kind == "vqa":
        questions = {s: read_questions(f / QUESTIONS_FILE).questions for s, f in gts.items()}
        parts = run_leaves(vqa_leaf, leaves, args, (opts,), client, on_done)
        extra = {"questions": questions}
    else:
        classes = _osma_classes(gts, encoder, tuple(opts.pop("templates", None) or ("an image of {}",)))
        args = lambda lf: (lf.folder, gts[lf.scene], classes.get(lf.scene))  # noqa: E731
        parts = run_leaves(osma_leaf, leaves, args, (opts,), client, on_done)
        extra = {}
    return sweep_gather.gather(kind, leaves, parts, opts, layout=layout, extra=extra)


def _osma_classes(gts: dict[str, Path], encoder: TextEncoder | None, templates: tuple[str, ...]) -> dict[str, Any]:
    """Per scene, the class features embeddings are classified against (none without an encoder: labels.npy only)."""
    from evaluation.layout import osma_class_features, osma_scene_gt, scene_cloud

    if encoder is None:
        return {}
    out = {}
    for s, f in gts.items():
        _, labels, names = osma_scene_gt(*scene_cloud(f), None)
        out[s] = osma_class_features(encoder, names, labels, templates)
    return out
