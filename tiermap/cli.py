"""The `tiermap` command line: a thin layer over library functions, grouped by concern."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from evaluation.cli import baseline_app, eval_app
from tiermap import schema

app = typer.Typer(help="tiermap: versioned RGB-D datasets, tiered labels and scoring for open-vocabulary 3D scene understanding.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
generate = typer.Typer(help="Scenes, lighting-varied sequences and scene GT (the first half of the pipeline).", no_args_is_help=True)
annotate = typer.Typer(help="Labels: lexicon seeding, aggregation into the official GT files.", no_args_is_help=True)
app.add_typer(generate, name="generate")
app.add_typer(annotate, name="annotate")
app.add_typer(eval_app, name="eval")
app.add_typer(baseline_app, name="baseline")
console = Console()
err_console = Console(stderr=True)

RootOpt = Annotated[Path, typer.Option("--root", envvar="TIERMAP_DATA", help="Data root (default: datasets/).")]
DatasetOpt = Annotated[str, typer.Option("--dataset", help="Dataset name under the data root.")]
ParamsOpt = Annotated[Path, typer.Option("--params", help="Pipeline parameters file.")]


def _fail(err: Exception) -> None:
    err_console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _paths(root: Path, dataset: str) -> schema.DatasetPaths:
    return schema.DatasetPaths(root, dataset)


def _run(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Call a library function; known input errors become one red line and exit code 2."""
    from generation.conditions import UnknownConditionError
    from generation.trajectory import NoPathError
    from tiermap.release import ReleaseError

    try:
        return fn(*args, **kwargs)
    except (schema.SchemaError, ReleaseError, UnknownConditionError, NoPathError, FileNotFoundError, ValueError, RuntimeError) as err:
        _fail(err)


@generate.command("scene")
def generate_scene(scene: Annotated[str, typer.Option(help="Scene name (a key of params.yaml `scene`).")],
                   root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path("params.yaml")) -> None:
    """Generate a procedural scene's scene.json from its seed."""
    from tiermap.stages import load_params, make_scene

    out = _run(lambda: make_scene(_paths(root, dataset), scene, load_params(params)))
    console.print(f"scene written: {out}")


@generate.command("sequence")
def generate_sequence(scene: Annotated[str, typer.Option(help="Scene name.")],
                      condition: Annotated[str, typer.Option(help="Condition name (a key of params.yaml `lighting`).")],
                      root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path("params.yaml"),
                      renderer: Annotated[str | None, typer.Option(help="pyrender | raycast | habitat (default: params render.renderer).")] = None) -> None:
    """Render one scene under one condition (RGB, depth, instance ids, traj.txt)."""
    from tiermap.stages import load_params, make_sequence

    meta = _run(lambda: make_sequence(_paths(root, dataset), scene, condition, load_params(params), renderer))
    console.print(f"sequence {scene}/{condition}: {meta.frame_count} frames ({meta.renderer})")


@generate.command("gt")
def generate_gt(scene: Annotated[str, typer.Option(help="Scene name.")],
                root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path("params.yaml"),
                out: Annotated[Path | None, typer.Option(help="Output folder (default <root>/<dataset>/gt/<scene>).")] = None) -> None:
    """Scene GT: point cloud with object ids, BenchBot objects.json, per-object visibility."""
    from tiermap.stages import load_params, make_scene_gt

    counts = _run(lambda: make_scene_gt(_paths(root, dataset), scene, load_params(params), out))
    console.print(f"scene GT {scene}: {counts}")


@generate.command("preview")
def generate_preview(scene: Annotated[str, typer.Option(help="Scene name.")],
                     root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path("params.yaml")) -> None:
    """Contact sheet (same frames under every condition) and top-down map PNGs of a scene."""
    from tiermap.stages import load_params, make_preview

    for p in _run(lambda: make_preview(_paths(root, dataset), scene, load_params(params))):
        console.print(f"wrote {p}")


@annotate.command("lexicon")
def annotate_lexicon(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path("params.yaml")) -> None:
    """Write labels/labels.parquet from the scenes' lexicons (seed labels for demos)."""
    from tiermap.stages import labels_from_lexicon, load_params

    out = _run(lambda: labels_from_lexicon(_paths(root, dataset), list(load_params(params)["scenes"])))
    console.print(f"labels written: {out}")


@annotate.command("aggregate")
def annotate_aggregate(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path("params.yaml")) -> None:
    """Aggregate labels into gt/: gt_categories.json with clutter, query mappings, prompt list."""
    from tiermap.stages import load_params, make_gt

    counts = _run(lambda: make_gt(_paths(root, dataset), list(load_params(params)["scenes"])))
    console.print(f"GT assembled under {_paths(root, dataset).gt}: {counts}")


@app.command("validate")
def validate(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo") -> None:
    """Validate the GT files and labels; write validation.json; exit 1 on failure."""
    from tiermap.validate import validate_dataset

    ds = _paths(root, dataset)
    report = _run(lambda: validate_dataset(ds))
    for c in report["checks"]:
        console.print(f"  {'[green]ok[/green]  ' if c['success'] else '[red]FAIL[/red]'} {c['name']}", highlight=False)
        for f in c["failures"]:
            console.print(f"         {f}", highlight=False, soft_wrap=True)
    console.print(f"report: {ds.validation_report}")
    if not report["success"]:
        raise typer.Exit(1)


@app.command("release")
def release(version: Annotated[str, typer.Argument(help="Semantic version X.Y.Z.")],
            root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo",
            remote: Annotated[str | None, typer.Option(help="DVC remote name (default: the repo's default remote).")] = None) -> None:
    """Release the dataset's GT: datasheet + label diff, dvc push, commit, tag <dataset>-gt@vX.Y.Z."""
    from tiermap.release import release as do_release
    from tiermap.release import tag_name

    notes = _run(lambda: do_release(version, _paths(root, dataset), remote=remote))
    console.print(f"released {tag_name(dataset, version)}; datasheet: {notes}")
    console.print(f"evaluators: dvc artifacts get <repo-url> {dataset}-gt --rev v{version}")


@app.command("doctor")
def doctor(label_studio_url: Annotated[str | None, typer.Option(help="Label Studio URL to check.")] = None) -> None:
    """Check the environment (renderers, DVC remote, Label Studio, Gemini key) and print fixes."""
    from tiermap.doctor import check_environment

    findings = check_environment(Path("."), label_studio_url)
    for f in findings:
        mark = "[green]ok[/green]     " if f.ok else "[red]missing[/red]"
        console.print(f"{mark} {f.name}: {f.detail}", highlight=False, soft_wrap=True)
        if not f.ok and f.fix:
            console.print(f"          fix: {f.fix}", highlight=False, soft_wrap=True)
    if any(not f.ok for f in findings if "optional" not in f.name):
        raise typer.Exit(1)


@app.command("demo")
def demo(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo") -> None:
    """Run the main job on the embedded procedural default and print where the results are."""
    from tiermap.demo import run_demo

    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    summary = _run(lambda: run_demo(Path("."), _paths(root, dataset)))
    console.print("\n[bold]tiermap demo finished[/bold]")
    for k, v in summary.items():
        console.print(f"  {k}: {v}", highlight=False)


def main() -> None:
    """Entry point."""
    app()


if __name__ == "__main__":
    sys.exit(main())
