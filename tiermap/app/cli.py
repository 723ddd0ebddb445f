"""The `tiermap` command line: a thin layer over library functions, grouped by concern.

`tiermap eval …` and `tiermap baseline …` need only the core install (typer, rich and the evaluation toolkit are all
imported here); every other command is a PipelineCommand: it imports its library inside the command and, when
`tiermap[pipeline]` is not installed, stops with one line naming the extra instead of a traceback.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from evaluation.cli import baseline_app, eval_app
from evaluation.vqa_cli import vqa_app
from tiermap.app.cli_cluster import add_repro_command
from tiermap.app.cli_sweep import add_sweep_command
from tiermap.app.cli_vqa import add_questions_command
from tiermap.extras import MissingExtraError, extra_of, require
from tiermap.errors import command_paths, is_user_error
from tiermap.formats.base import InputError
from tiermap.formats.layout import NAME_RULE, DatasetPaths, plain_name
from tiermap.formats.params import PARAMS_FILE

console = Console()
err_console = Console(stderr=True)


def _fail(err: Exception) -> None:
    err_console.print(f"[red]error:[/red] {escape(str(err))}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


class TiermapGroup(typer.core.TyperGroup):
    """The root group: an import of a module that belongs to a missing extra becomes one line, wherever it happens."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a ModuleNotFoundError of an extra's module names the extra to install."""
        try:
            return super().invoke(ctx)
        except typer.BadParameter as err:  # a bad option value (`--seed abc`): one line naming the option
            _fail(InputError(err.format_message()))
        except ModuleNotFoundError as err:
            extra = extra_of(err.name)
            if extra is None:
                raise
            command = " ".join(["tiermap", *filter(None, [ctx.invoked_subcommand])])
            _fail(MissingExtraError(f"`{command}`", extra, [str(err.name)]))


class PipelineCommand(typer.core.TyperCommand):
    """A command of the dataset pipeline: needs `tiermap[pipeline]`; checked after parsing, so --help always works."""

    def invoke(self, ctx: click.Context) -> Any:
        """Check the pipeline's modules are installed, then run the command."""
        try:
            require("pipeline", f"`{ctx.command_path}`")
        except MissingExtraError as err:
            _fail(err)
        return super().invoke(ctx)


app = typer.Typer(help="tiermap: versioned RGB-D datasets, tiered labels and scoring for open-vocabulary 3D scene understanding.",
                  cls=TiermapGroup, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
generate = typer.Typer(help="Scenes, lighting-varied sequences and scene GT (the first half of the pipeline; needs the 'pipeline' extra).",
                       no_args_is_help=True)
annotate = typer.Typer(help="Labelling: crops, Label Studio server, push/pull, annotators, Gemini suggestions (needs the 'pipeline' extra).",
                       no_args_is_help=True)
users = typer.Typer(help="Annotator accounts on the dataset's Label Studio.", no_args_is_help=True)
annotate.add_typer(users, name="users")
app.add_typer(generate, name="generate")
app.add_typer(annotate, name="annotate")
add_sweep_command(eval_app)
app.add_typer(eval_app, name="eval")
app.add_typer(baseline_app, name="baseline")
app.add_typer(vqa_app, name="vqa")

def _plain(param: typer.CallbackParam, value: str | None) -> str | None:
    """--dataset and --scene are plain names, checked before any work."""
    return None if value is None else _run(plain_name, value, f"--{param.name}")


RootOpt = Annotated[Path, typer.Option("--root", envvar="TIERMAP_DATA", help="Data root (default: datasets/).")]
DatasetOpt = Annotated[str, typer.Option("--dataset", help=f"Dataset name under the data root ({NAME_RULE}).", callback=_plain)]
ParamsOpt = Annotated[Path, typer.Option("--params", help="Pipeline parameters file.")]


def _paths(root: Path, dataset: str) -> DatasetPaths:
    return DatasetPaths(root, dataset)


def _run(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Call a library function; input errors become one red line and exit code 2, anything else keeps its traceback."""
    from annotation.ls_server import LabelStudioError
    from generation.conditions import UnknownConditionError
    from generation.geometry import RendererUnavailableError
    from tiermap.app.release import ReleaseError
    from tiermap.app.stages import DvcError
    from tiermap.gemini import GeminiError

    try:
        return fn(*args, **kwargs)
    except Exception as err:
        if not is_user_error(err, command_paths(), (ReleaseError, UnknownConditionError, LabelStudioError, RendererUnavailableError,
                                                    DvcError, GeminiError)):
            raise
        _fail(err)


@generate.command("scene", cls=PipelineCommand)
def generate_scene(scene: Annotated[str, typer.Option(help="Scene name (a key of params.yaml `scene`, or a new name with --source/--input).", callback=_plain)],
                   root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE),
                   source: Annotated[str | None, typer.Option(help="procedural | replica | replicacad | hm3d | scannetpp | mesh | habitat (default: params, else procedural).")] = None,
                   seed: Annotated[int | None, typer.Option(help="Seed of the scene (procedural layout; the path of every source).")] = None,
                   input: Annotated[Path | None, typer.Option("--input", help="replica: the scene folder (or its habitat/ folder) with "
                                                              "mesh_semantic.ply + info_semantic.json; replicacad: <replica_cad>/configs/scenes/<name>.scene_instance.json; "
                                                              "hm3d: the scene folder (<id>.glb, <id>.semantic.glb, <id>.semantic.txt); "
                                                              "scannetpp: the scene folder with scans/; mesh: a PLY/GLB/glTF file; habitat: the scene file.")] = None,
                   classes: Annotated[Path | None, typer.Option(help="mesh: class map JSON {\"<object id>\": \"class\"} "
                                                                "(default: <mesh stem>.classes.json or classes.json beside the mesh); replicacad: {\"<template name>\": \"class\"} "
                                                                "over the shipped map.")] = None,
                   up: Annotated[str | None, typer.Option(help="mesh: the file's up axis, z or y (default: z for PLY, y for glTF as its spec says).")] = None) -> None:
    """Generate a scene: scene.json from a seed (procedural) or from a labelled mesh (plus mesh.ply beside it)."""
    from tiermap.app.stages import load_params, make_scene

    out = _run(lambda: make_scene(_paths(root, dataset), scene, load_params(params), source, seed, input, classes, up))
    console.print(f"scene written: {out}")


@generate.command("sequence", cls=PipelineCommand)
def generate_sequence(scene: Annotated[str, typer.Option(help="Scene name.", callback=_plain)],
                      condition: Annotated[str, typer.Option(help="Condition name (a key of params.yaml `lighting`).")],
                      root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE),
                      renderer: Annotated[str | None, typer.Option(help="pyrender | raycast | habitat (default: params render.renderer).")] = None) -> None:
    """Render one scene under one condition (RGB, depth, instance ids, traj.txt)."""
    from tiermap.app.stages import load_params, make_sequence

    meta = _run(lambda: make_sequence(_paths(root, dataset), scene, condition, load_params(params), renderer))
    console.print(f"sequence {scene}/{condition}: {meta.frame_count} frames ({meta.renderer})")


@generate.command("gt", cls=PipelineCommand)
def generate_gt(scene: Annotated[str, typer.Option(help="Scene name.", callback=_plain)],
                root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE),
                out: Annotated[Path | None, typer.Option(help="Output folder (default <root>/<dataset>/gt/<scene>).")] = None) -> None:
    """Scene GT: point cloud with object ids, BenchBot objects.json, per-object visibility."""
    from tiermap.app.stages import load_params, make_scene_gt

    counts = _run(lambda: make_scene_gt(_paths(root, dataset), scene, load_params(params), out))
    console.print(f"scene GT {scene}: {counts}")


@generate.command("preview", cls=PipelineCommand)
def generate_preview(scene: Annotated[str, typer.Option(help="Scene name.", callback=_plain)],
                     root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """Contact sheet (same frames under every condition) and top-down map PNGs of a scene."""
    from tiermap.app.stages import load_params, make_preview

    for p in _run(lambda: make_preview(_paths(root, dataset), scene, load_params(params))):
        console.print(f"wrote {p}")


@generate.command("closeups", cls=PipelineCommand)
def generate_closeups(scene: Annotated[str, typer.Option(help="Scene name.", callback=_plain)],
                      root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE),
                      renderer: Annotated[str | None, typer.Option(help="pyrender | raycast (default: params render.renderer).")] = None) -> None:
    """Close-up views of every object under the reference lighting (what annotators' crops are cut from)."""
    from tiermap.app.stages import closeups_dir, load_params, make_closeups

    index = _run(lambda: make_closeups(_paths(root, dataset), scene, load_params(params), renderer))
    least = min((v.pixels or 0 for o in index.objects for v in o.rendered()), default=0)
    console.print(f"closeups {scene}: {len(index.objects) - len(index.flagged)} objects rendered (at least {least} object pixels), "
                  f"{len(index.flagged)} flagged -> {closeups_dir(_paths(root, dataset), scene)}")


def _scenes(params: Path) -> list[str]:
    from tiermap.app.stages import load_params

    return list(_run(lambda: load_params(params))["scenes"])


def _show(counts: dict) -> None:  # type: ignore[type-arg]
    for k, v in counts.items():
        console.print(f"  {k}: {v}", highlight=False)


@annotate.command("crops", cls=PipelineCommand)
def annotate_crops(scene: Annotated[str | None, typer.Option(help="One scene (default: every scene of params.yaml).", callback=_plain)] = None,
                   root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """Pick the best views of every visible object and write masked, context and frame crops under crops/<scene>/."""
    from tiermap.app.stages import load_params, make_crops

    p = _run(lambda: load_params(params))
    for s in [scene] if scene else list(p["scenes"]):
        index = _run(lambda: make_crops(_paths(root, dataset), s, p))
        console.print(f"crops {s}: {len(index.objects)} objects, {len(index.skipped)} skipped -> {_paths(root, dataset).dir / 'crops' / s}")


@annotate.command("serve", cls=PipelineCommand)
def annotate_serve(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo",
                   background: Annotated[bool, typer.Option("--background", help="Start and return (stop with --stop).")] = False,
                   stop: Annotated[bool, typer.Option("--stop", help="Stop the dataset's running servers.")] = False) -> None:
    """Run every annotator's Label Studio seat on 127.0.0.1 (offline; secrets under datasets/<d>/labelstudio/)."""
    from annotation import ls_server

    ds = _paths(root, dataset)
    if stop:
        n = _run(lambda: ls_server.stop(ds))
        console.print(f"stopped {n} seat(s)" if n else "no seat was running")
        return
    if background:
        cred = _run(lambda: ls_server.start(ds, log=console.print))
        for seat in cred.seats:
            console.print(f"  {seat.annotator}: {seat.url}", highlight=False)
        if not cred.seats:
            console.print("no seats yet: `tiermap annotate users add EMAIL...` gives each annotator one")
        return
    _run(lambda: ls_server.serve_forever(ds, log=console.print))


@annotate.command("push", cls=PipelineCommand)
def annotate_push(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """Create or update the labelling project and one task per (scene, object) on every seat; safe to re-run."""
    from annotation.push import push
    from tiermap.app.stages import load_params

    p = _run(lambda: load_params(params))
    _show(_run(lambda: push(_paths(root, dataset), list(p["scenes"]), int(p["annotation"]["annotators"]), log=console.print)))


@annotate.command("pull", cls=PipelineCommand)
def annotate_pull(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE),
                  accept_changes: Annotated[bool, typer.Option("--accept-changes", help="Accept changed and removed annotations.")] = False
                  ) -> None:
    """Export every seat (raw exports kept in labels/raw/), check for tampering, write labels/labels.parquet."""
    from annotation.pull import TamperError, pull

    def go():  # type: ignore[no-untyped-def]
        try:
            return pull(_paths(root, dataset), _scenes(params), accept_changes)
        except TamperError as err:
            return err

    res = _run(go)
    if isinstance(res, TamperError):
        for f in res.flags:
            err_console.print(f.line(), highlight=False, soft_wrap=True)
        err_console.print(f"[red]error:[/red] {res}", highlight=False, soft_wrap=True)
        raise typer.Exit(3)
    _show(res)


@annotate.command("simulate", cls=PipelineCommand)
def annotate_simulate(annotators: Annotated[int, typer.Option(help="Number of simulated annotators.")] = 4,
                      seed: Annotated[int, typer.Option(help="Noise seed.")] = 0,
                      root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """Simulated annotators log in to their own seats and submit noisy lexicon labels (demo and tests)."""
    from annotation.simulate import simulate

    _show(_run(lambda: simulate(_paths(root, dataset), _scenes(params), annotators, seed, log=console.print)))


@annotate.command("suggest", cls=PipelineCommand)
def annotate_suggest(gemini: Annotated[bool, typer.Option("--gemini", help="Ask Gemini (needs GEMINI_API_KEY).")] = False,
                     model: Annotated[str, typer.Option(help="Gemini model.")] = "gemini-2.5-flash",
                     root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """LVLM pre-annotation: label suggestions per crop imported as predictions on every seat (cached; re-runs are free)."""
    from annotation.suggest import suggest

    if not gemini:
        _fail(InputError("choose a suggestion source: --gemini"))
    _show(_run(lambda: suggest(_paths(root, dataset), _scenes(params), model, log=console.print)))


@users.command("add", cls=PipelineCommand)
def users_add(emails: Annotated[list[str] | None, typer.Argument(help="E-mail addresses of the annotators.")] = None,
              simulated: Annotated[int, typer.Option(help="Instead: N simulated annotators (annotator1..N@tiermap.local).")] = 0,
              reset_password: Annotated[bool, typer.Option("--reset-password", help="Issue new passwords for existing annotators.")] = False,
              root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo") -> None:
    """Give each annotator their own Label Studio seat; passwords are printed once and not stored."""
    from annotation import ls_server
    from annotation.annotators import add_users, default_emails

    if not emails and not simulated:
        _fail(InputError("name the annotators' e-mail addresses (or --simulated N)"))
    ds = _paths(root, dataset)
    made = _run(lambda: add_users(ds, list(emails or default_emails(simulated)), simulated=bool(simulated and not emails),
                                  reset_password=reset_password, log=console.print))
    cred = ls_server.read_credentials(ds)
    for email in emails or default_emails(simulated):
        seat = cred.seat(email)
        shown = f"password: {made[email]}" if email in made else "(existing; --reset-password for a new password)"
        console.print(f"  {email}  {seat.url if seat else ''}/user/login/  {shown}", highlight=False)
    if made and not simulated:
        console.print("Passwords are not stored: hand them over now.")


@users.command("list", cls=PipelineCommand)
def users_list(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo") -> None:
    """List the annotators' seats."""
    from annotation import ls_server

    for seat in _run(lambda: ls_server.read_credentials(_paths(root, dataset))).seats:
        state = seat.url if ls_server.running(seat) else "stopped"
        console.print(f"  {seat.slug:>8}  {seat.annotator}  {state}{'  (simulated)' if seat.simulated else ''}", highlight=False)


@annotate.command("lexicon", cls=PipelineCommand)
def annotate_lexicon(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """Write labels/labels.parquet from the scenes' lexicons (seed labels without Label Studio)."""
    from tiermap.app.stages import labels_from_lexicon, load_params

    out = _run(lambda: labels_from_lexicon(_paths(root, dataset), list(load_params(params)["scenes"])))
    console.print(f"labels written: {out}")


@app.command("aggregate", cls=PipelineCommand)
def aggregate(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """Merge annotators' labels into aggregated/<scene>/gt_categories.json (OpenLex3D §3.1.2)."""
    from tiermap.app.stages import make_aggregate

    _show(_run(lambda: make_aggregate(_paths(root, dataset), _scenes(params))))


@app.command("clutter", cls=PipelineCommand)
def clutter(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE)) -> None:
    """Clutter from oriented-box IoU > 0 and the published gt/ (query mappings, prompt list, scene GT)."""
    from tiermap.app.stages import make_clutter
    from tiermap.formats.params import read_params

    p = _run(lambda: read_params(params))[0]
    _show(_run(lambda: make_clutter(_paths(root, dataset), p.scenes, p.vqa)))


@app.command("validate", cls=PipelineCommand)
def validate(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo", params: ParamsOpt = Path(PARAMS_FILE),
             labels: Annotated[Path | None, typer.Option("--labels", help="Check one gt_categories.json on its own.")] = None) -> None:
    """Great-expectations suite over the labels and GT files; Data Docs HTML; exit 1 when any expectation fails."""
    from tiermap.app.stages import load_params
    from tiermap.app.validate import (
        format_summary,
        validate_dataset,
        validate_labels_file,
    )

    if labels is not None:
        report = _run(lambda: validate_labels_file(labels))
    else:
        ds = _paths(root, dataset)
        n = int(((load_params(params) if params.is_file() else {}).get("annotation") or {}).get("annotators", 4))
        report = _run(lambda: validate_dataset(ds, annotators=n))
        console.print(f"report: {ds.validation_report}")
    for line in format_summary(report):
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    if not report.success:
        raise typer.Exit(1)


@app.command("release", cls=PipelineCommand)
def release(version: Annotated[str, typer.Argument(help="Semantic version X.Y.Z.")],
            root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo",
            remote: Annotated[str | None, typer.Option(help="DVC remote name (default: the repo's default remote).")] = None) -> None:
    """Release the dataset's GT: datasheet + label diff, dvc push, commit, tag <dataset>-gt@vX.Y.Z."""
    from tiermap.app.release import release as do_release
    from tiermap.app.release import tag_name

    notes = _run(lambda: do_release(version, _paths(root, dataset), remote=remote))
    console.print(f"released {tag_name(dataset, version)}; datasheet: {notes}")
    console.print(f"evaluators: dvc artifacts get <repo-url> {dataset}-gt --rev v{version}")


@app.command("doctor", cls=PipelineCommand)
def doctor(label_studio_url: Annotated[str | None, typer.Option(help="Label Studio URL to check.")] = None) -> None:
    """Check the environment (renderers, DVC remote, Label Studio, Gemini key) and print fixes."""
    from tiermap.app.doctor import check_environment

    findings = check_environment(Path("."), label_studio_url)
    for f in findings:
        mark = "[green]ok[/green]     " if f.ok else "[red]missing[/red]"
        console.print(f"{mark} {f.name}: {f.detail}", highlight=False, soft_wrap=True)
        if not f.ok and f.fix:
            console.print(f"          fix: {f.fix}", highlight=False, soft_wrap=True)
    if any(not f.ok for f in findings if "optional" not in f.name):
        raise typer.Exit(1)


@app.command("demo", cls=PipelineCommand)
def demo(root: RootOpt = Path("datasets"), dataset: DatasetOpt = "demo") -> None:
    """Run the main job on the embedded procedural default and print where the results are."""
    from tiermap.app.demo import run_demo

    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    summary = _run(lambda: run_demo(Path("."), _paths(root, dataset)))
    console.print("\n[bold]tiermap demo finished[/bold]")
    for k, v in summary.items():
        console.print(f"  {k}: {v}", highlight=False, soft_wrap=True)


add_questions_command(vqa_app, _run, _show, _paths)
add_repro_command(app, _run, PipelineCommand, console)


def main() -> None:
    """Entry point."""
    app()


if __name__ == "__main__":
    sys.exit(main())
