"""`tiermap eval …` and `tiermap baseline …`: thin commands over the evaluation library (no generation/annotation imports)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import click
import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from tiermap.errors import command_paths, is_user_error
from tiermap.formats.base import SchemaError
from tiermap.formats.results import RESULTS_MD, check_out_dir
from tiermap.gemini import GeminiError

console = Console()
err_console = Console(stderr=True)

MULTI_VALUE = {"--top-n", "--ground-truth", "--results", "--gt-cloud", "--compare", "--scene", "--condition", "--answers"}


def expand_multi(args: list[str]) -> list[str]:
    """`--top-n 1 5 10` → `--top-n 1 --top-n 5 --top-n 10` for the options that take several values."""
    out: list[str] = []
    current = None
    for tok in args:
        if tok.startswith("-") and not _is_number(tok):
            current = tok if tok in MULTI_VALUE else None
            out.append(tok)
        elif current is not None and out[-1] != current:
            out.extend([current, tok])
        else:
            out.append(tok)
    return out


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


class MultiValueCommand(typer.core.TyperCommand):
    """A command whose multi-value options accept space-separated values."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Expand multi-value options before click parses."""
        return super().parse_args(ctx, expand_multi(args))


class MultiValueGroup(typer.core.TyperGroup):
    """A group whose own options (`--compare a b`) accept space-separated values."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Expand multi-value options before click parses."""
        return super().parse_args(ctx, expand_multi(args))


eval_app = typer.Typer(help="Score predictions against released GT: OpenLex3D segmentation/retrieval, OSMa-Bench, OMQ.",
                       cls=MultiValueGroup, invoke_without_command=True)
baseline_app = typer.Typer(help="Reference methods that write predictions in the official layout.", no_args_is_help=True)


def _fail(err: Exception) -> None:
    err_console.print(f"[red]error:[/red] {escape(str(err))}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _run(fn, *args: Any, **kwargs: Any) -> Any:  # type: ignore[no-untyped-def]
    """Call a library function; input errors and a missing extra become one red line and exit code 2, bugs keep their traceback."""
    try:
        return fn(*args, **kwargs)
    except Exception as err:
        if not is_user_error(err, command_paths(), (GeminiError,)):
            raise
        _fail(err)


def _named(result: dict, predictions: Path, method: str | None) -> dict:
    """Method name (option, else method.json beside the predictions, else the folder name) and its note."""
    from evaluation.layout import method_info

    info = method_info(predictions) if predictions.is_dir() else {}
    result["method"] = method or info.get("method") or predictions.name
    if "note" in info:
        result["note"] = info["note"]
    return result


def _report(out: Path, result: dict, extra_plots: dict | None = None) -> None:
    from evaluation.report import write_report

    files = _run(write_report, out, result, extra_plots=extra_plots)
    console.print((out / RESULTS_MD).read_text(encoding="utf-8"), highlight=False, markup=False)
    console.print(f"report: {', '.join(str(p) for p in files.values())}")


@eval_app.callback()
def eval_main(ctx: typer.Context,
              compare: Annotated[list[Path] | None, typer.Option("--compare", help="Print a side-by-side table of results.json files.")] = None) -> None:
    """Score predictions against released GT."""
    if compare:
        from evaluation.compare import compare as compare_tables

        console.print(_run(compare_tables, compare), highlight=False, markup=False)
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None:
        console.print(ctx.get_help())
        raise typer.Exit(0)


@eval_app.command("compare", cls=MultiValueCommand)
def eval_compare(files: Annotated[list[Path], typer.Argument(help="results.json files of several methods (same kind).")]) -> None:
    """Print a side-by-side markdown table of several results.json files."""
    from evaluation.compare import compare as compare_tables

    console.print(_run(compare_tables, files), highlight=False, markup=False)


# ---------------------------------------------------------------- shared options
def _writable_out(out: Path) -> Path:
    """--out is checked before any scoring: a folder that can be written."""
    return _run(check_out_dir, out)


TextFeaturesOpt = Annotated[Path | None, typer.Option("--text-features", help="Precomputed text features .npz (arrays texts, feats).")]
ClipModelOpt = Annotated[str | None, typer.Option("--clip-model", help="open_clip model name (e.g. ViT-H-14), or 'minilm'.")]
ClipPretrainedOpt = Annotated[str | None, typer.Option("--clip-pretrained", help="open_clip weights tag or local checkpoint file ('none' = random init).")]
OutOpt = Annotated[Path, typer.Option("--out", help="Output folder (results.json, .csv, .md, plots).", callback=_writable_out)]
MethodOpt = Annotated[str | None, typer.Option("--method", help="Method name shown in reports (default: predictions folder name).")]
GtDirOpt = Annotated[Path | None, typer.Option("--gt-dir", help="A released GT folder (one sub-folder per scene); replaces --gt-labels/--gt-cloud.")]
SceneOpt = Annotated[list[str] | None, typer.Option("--scene", help="Scenes of --gt-dir to score (default: all).")]


def _encoder(text_features: Path | None, clip_model: str | None, clip_pretrained: str | None):  # type: ignore[no-untyped-def]
    from evaluation.text_features import make_encoder

    return _run(make_encoder, text_features, clip_model, clip_pretrained, progress=True)


def _gt_cloud_args(gt_cloud: list[Path] | None) -> tuple[Path | None, Path | None]:
    if not gt_cloud:
        return None, None
    if len(gt_cloud) > 2:
        _fail(SchemaError("--gt-cloud", "values", "one PLY/PCD file with object_id, or points.npy ids.npy", len(gt_cloud)))
    return gt_cloud[0], (gt_cloud[1] if len(gt_cloud) == 2 else None)


@eval_app.command("segmentation", cls=MultiValueCommand)
def eval_segmentation(
    predictions: Annotated[Path, typer.Option("--predictions", help="Predictions folder (official layout); with --gt-dir one sub-folder per scene.")],
    out: OutOpt,
    gt_labels: Annotated[Path | None, typer.Option("--gt-labels", help="gt_categories.json of the scene.")] = None,
    gt_cloud: Annotated[list[Path] | None, typer.Option("--gt-cloud", help="GT cloud PLY/PCD with object_id, or points.npy ids.npy.")] = None,
    gt_dir: GtDirOpt = None,
    scene: SceneOpt = None,
    prompt_list: Annotated[Path | None, typer.Option("--prompt-list", help="prompt_list.txt (default: <gt-dir>/prompt_list.txt).")] = None,
    gt_visible_cloud: Annotated[Path | None, typer.Option("--gt-visible-cloud", help="Evaluate on this visible cloud (official gt_visible_cloud.pcd).")] = None,
    text_features: TextFeaturesOpt = None,
    clip_model: ClipModelOpt = None,
    clip_pretrained: ClipPretrainedOpt = None,
    top_n: Annotated[list[int] | None, typer.Option("--top-n", help="Top-N values (several allowed: --top-n 1 5 10).")] = None,
    set_ranking: Annotated[bool, typer.Option("--set-ranking/--no-set-ranking", help="Also compute set ranking.")] = False,
    definition: Annotated[str, typer.Option("--definition", help="official (default, quirks reproduced) or paper.")] = "official",
    method: MethodOpt = None,
    topdown: Annotated[bool, typer.Option("--topdown/--no-topdown", help="Write a top-down category plot per scene.")] = True,
) -> None:
    """OpenLex3D tiered segmentation: Top-N frequency (S, D, VS, C, M, I) and set ranking."""
    from evaluation.layout import segmentation_scenes
    from evaluation.segmentation import evaluate_segmentation

    cloud, ids = _gt_cloud_args(gt_cloud)
    scenes, prompts, prompt_path = _run(segmentation_scenes, predictions, gt_labels, cloud, ids, gt_dir, scene, prompt_list, gt_visible_cloud)
    encoder = _encoder(text_features, clip_model, clip_pretrained)
    result = _run(evaluate_segmentation, scenes, prompts, encoder, top_n=tuple(top_n or (1, 5, 10)), with_set_ranking=set_ranking,
                  definition=definition, prompt_source=str(prompt_path), progress=True,
                  keep_point_categories=topdown)
    _named(result, predictions, method)
    extra = {}
    for name, (pts, cats) in result.pop("_point_categories", {}).items():
        from evaluation.plots import plot_topdown_categories

        extra[f"topdown_{name}.png"] = (lambda p, pts=pts, cats=cats, name=name:
                                        plot_topdown_categories(pts, cats, p, title=f"{result['method']} · {name}"))
    _report(out, result, extra)


@eval_app.command("retrieval", cls=MultiValueCommand)
def eval_retrieval(
    predictions: Annotated[Path, typer.Option("--predictions", help="Predictions folder (official layout); with --gt-dir one sub-folder per scene.")],
    out: OutOpt,
    gt_labels: Annotated[Path | None, typer.Option("--gt-labels", help="gt_categories.json (checks the queried object ids).")] = None,
    gt_cloud: Annotated[list[Path] | None, typer.Option("--gt-cloud", help="GT cloud PLY/PCD with object_id, or points.npy ids.npy.")] = None,
    queries: Annotated[Path | None, typer.Option("--queries", help="gt_categories_query_to_object_mapping_*.json.")] = None,
    gt_dir: GtDirOpt = None,
    scene: SceneOpt = None,
    level: Annotated[str, typer.Option("--level", help="l0 (synonyms), l1 (depiction + synonym) or all.")] = "l0",
    text_features: TextFeaturesOpt = None,
    clip_model: ClipModelOpt = None,
    clip_pretrained: ClipPretrainedOpt = None,
    top_k: Annotated[int, typer.Option("--top-k", help="Predicted instances per query (criteria top_k).")] = 10,
    clip_threshold: Annotated[float | None, typer.Option("--clip-threshold", help="Use threshold selection instead of top-k.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="ap (mAP, AP50, AP25) or rank (average inverse rank).")] = "ap",
    alignment: Annotated[str, typer.Option("--alignment", help="per_mask (official default) or global.")] = "per_mask",
    method: MethodOpt = None,
) -> None:
    """OpenLex3D open-set object retrieval: AP pooled over queries and scenes, or inverse rank."""
    from evaluation.layout import retrieval_scenes
    from evaluation.retrieval import evaluate_retrieval

    cloud, ids = _gt_cloud_args(gt_cloud)
    scenes = _run(retrieval_scenes, predictions, gt_labels, cloud, ids, queries, gt_dir, scene, level)
    encoder = _encoder(text_features, clip_model, clip_pretrained)
    result = _run(evaluate_retrieval, scenes, encoder, metric=metric, criteria="clip_threshold" if clip_threshold is not None else "top_k",
                  top_k=top_k, clip_threshold=clip_threshold if clip_threshold is not None else 0.5, alignment=alignment, progress=True)
    _named(result, predictions, method)["level"] = level
    _report(out, result)


@eval_app.command("osma", cls=MultiValueCommand)
def eval_osma(
    gt_cloud: Annotated[list[Path], typer.Option("--gt-cloud", help="GT cloud PLY/PCD with object_id, or points.npy ids.npy.")],
    predictions: Annotated[Path, typer.Option("--predictions", help="Predictions folder, or one sub-folder per condition.")],
    out: OutOpt,
    gt_classes: Annotated[Path | None, typer.Option("--gt-classes", help="objects.json (BenchBot GT with ids) or {id: class} JSON; default: objects.json beside the cloud.")] = None,
    condition: Annotated[list[str] | None, typer.Option("--condition", help="Conditions (sub-folders of --predictions) to score.")] = None,
    baseline: Annotated[str, typer.Option("--baseline", help="Condition the relative change is measured against.")] = "baseline",
    aggregate: Annotated[str, typer.Option("--aggregate", help="pooled (ReplicaCAD) or mean (HM3D).")] = "pooled",
    text_features: TextFeaturesOpt = None,
    clip_model: ClipModelOpt = None,
    clip_pretrained: ClipPretrainedOpt = None,
    template: Annotated[list[str] | None, typer.Option("--template", help="CLIP prompt template(s), e.g. 'an image of {}'.")] = None,
    method: MethodOpt = None,
) -> None:
    """OSMa-Bench segmentation: mAcc, f-mIoU, mIoU per condition and the change against the baseline condition."""
    from evaluation.layout import osma_inputs
    from evaluation.osma import evaluate_conditions

    cloud, ids = _gt_cloud_args(gt_cloud)
    need_text = text_features is not None or clip_model is not None
    encoder = _encoder(text_features, clip_model, clip_pretrained) if need_text else None
    data = _run(osma_inputs, cloud, ids, gt_classes, predictions, condition, encoder, tuple(template or ("an image of {}",)))
    result = _run(evaluate_conditions, data, aggregate=aggregate, baseline=baseline)
    _named(result, predictions, method)
    _report(out, result)


@eval_app.command("omq", cls=MultiValueCommand)
def eval_omq(
    ground_truth: Annotated[list[Path], typer.Option("--ground-truth", help="BenchBot GT JSON file(s) (two for scene change detection).")],
    results: Annotated[list[Path], typer.Option("--results", help="BenchBot results JSON file(s), one per environment.")],
    out: OutOpt,
    precision: Annotated[str, typer.Option("--precision", help="float32: the official number, its float32 cost tables bit for bit; float64: exact qualities (a pair touching up to rounding stays a TP).")] = "float32",
    method: MethodOpt = None,
) -> None:
    """BenchBot Object Map Quality (semantic SLAM and scene change detection)."""
    from evaluation.omq import score_omq

    result = _run(score_omq, ground_truth, results, precision=precision)
    result["method"] = method or results[0].stem
    _report(out, result)


@baseline_app.command("caption")
def baseline_caption(
    sequence: Annotated[Path, typer.Option("--sequence", help="A rendered sequence folder (results/, instance/, traj.txt, camera_params.json).")],
    out: Annotated[Path, typer.Option("--out", help="Predictions folder to write (official layout).")],
    gt_classes: Annotated[Path | None, typer.Option("--gt-classes", help="objects.json: class names used as oracle captions.")] = None,
    captions: Annotated[str, typer.Option("--captions", help="oracle (class names; offline) or gemini.")] = "oracle",
    encoder: Annotated[str, typer.Option("--encoder", help="minilm (offline, real weights) or an open_clip model name.")] = "minilm",
    clip_pretrained: ClipPretrainedOpt = None,
    prompt_list: Annotated[Path | None, typer.Option("--prompt-list", help="Also write text_features.npz for these prompts.")] = None,
    queries: Annotated[list[Path] | None, typer.Option("--queries", help="Also add these query files' texts to text_features.npz.")] = None,
    stride: Annotated[int, typer.Option("--stride", help="Use every n-th frame.")] = 2,
    gemini_model: Annotated[str, typer.Option("--gemini-model", help="Gemini model for --captions gemini.")] = "gemini-2.5-flash",
) -> None:
    """Caption baseline: fuse each object's pixels into points, caption it, embed the caption with a text encoder."""
    from evaluation.baseline import caption_baseline

    info = _run(caption_baseline, sequence, out, gt_classes=gt_classes, captions=captions, encoder=encoder,
                clip_pretrained=clip_pretrained, prompt_list=prompt_list, queries=queries or [], stride=stride,
                gemini_model=gemini_model)
    console.print(f"baseline predictions: {out} ({info['objects']} objects, {info['points']} points; captions: {info['captions']})")


from evaluation import vqa_cli  # noqa: E402,F401  (registers `eval vqa` on eval_app; defines vqa_app)
