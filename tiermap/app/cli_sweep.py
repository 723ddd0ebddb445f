"""`tiermap eval sweep`: many prediction folders (methods x conditions x scenes) scored on a Dask cluster into one report."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evaluation import cli as ev
from evaluation.sweep import LAYOUT
from tiermap.formats.params import PARAMS_FILE

KindArg = Annotated[str, typer.Argument(help="segmentation | retrieval | osma | vqa.")]


@contextlib.contextmanager
def _client(spec: str | None, params: Path) -> Iterator[Any]:
    """None (score in this process) or a Dask client on the cluster the spec names."""
    if spec is None:
        yield None
        return
    from tiermap.app import cluster as cl
    from tiermap.extras import require

    kind, _ = ev._run(cl.parse_spec, spec)
    ev._run(require, "pipeline", "`tiermap eval sweep --cluster`", ["distributed"] + (["dask_jobqueue"] if kind == "slurm" else []))
    block = None
    if kind == "slurm":
        from tiermap.formats.params import read_params

        block = ev._run(read_params, params)[0].cluster.model_dump()
    with cl.connect(spec, block) as client:
        ev.console.print(f"Dask dashboard: {client.dashboard_link}", highlight=False, soft_wrap=True)
        yield client


def add_sweep_command(eval_app: typer.Typer) -> None:
    """Register `sweep` on `tiermap eval`."""

    @eval_app.command("sweep", cls=ev.MultiValueCommand)
    def eval_sweep(
        kind: KindArg,
        predictions: Annotated[Path, typer.Option("--predictions", help="Root folder of the prediction folders, laid out as --layout.")],
        gt_dir: Annotated[Path, typer.Option("--gt-dir", help="The released GT folder (one sub-folder per scene).")],
        out: ev.OutOpt,
        layout: Annotated[str, typer.Option("--layout", help="Where the leaves are under --predictions ({scene} required).")] = LAYOUT,
        scene: ev.SceneOpt = None,
        cluster: Annotated[str | None, typer.Option("--cluster", help="local[:N] | tcp://HOST:PORT | slurm (default: this process).")] = None,
        params: Annotated[Path, typer.Option("--params", help="params.yaml with the `cluster:` block (slurm).")] = Path(PARAMS_FILE),
        text_features: ev.TextFeaturesOpt = None,
        clip_model: ev.ClipModelOpt = None,
        clip_pretrained: ev.ClipPretrainedOpt = None,
        prompt_list: Annotated[Path | None, typer.Option("--prompt-list", help="segmentation: prompt_list.txt (default: <gt-dir>/prompt_list.txt).")] = None,
        top_n: Annotated[list[int] | None, typer.Option("--top-n", help="segmentation: top-N values.")] = None,
        set_ranking: Annotated[bool, typer.Option("--set-ranking/--no-set-ranking", help="segmentation: also set ranking.")] = False,
        definition: Annotated[str, typer.Option("--definition", help="segmentation: official or paper.")] = "official",
        level: Annotated[str, typer.Option("--level", help="retrieval: l0, l1 or all.")] = "l0",
        top_k: Annotated[int, typer.Option("--top-k", help="retrieval: predicted instances per query.")] = 10,
        metric: Annotated[str, typer.Option("--metric", help="retrieval: ap or rank.")] = "ap",
        aggregate: Annotated[str, typer.Option("--aggregate", help="osma: pooled (ReplicaCAD) or mean (HM3D).")] = "pooled",
        baseline: Annotated[str, typer.Option("--baseline", help="osma, vqa: the condition relative change is measured against.")] = "baseline",
        template: Annotated[list[str] | None, typer.Option("--template", help="osma: CLIP prompt template(s).")] = None,
    ) -> None:
        """Score every prediction folder of methods x conditions x scenes (one task each) and gather one report."""
        from evaluation.report import write_report
        from evaluation.sweep import KINDS, sweep

        if kind not in KINDS:
            ev._fail(ValueError(f"unknown sweep kind `{kind}` (expected {', '.join(KINDS)})"))
        options = {"segmentation": {"top_n": list(top_n or (1, 5, 10)), "set_ranking": set_ranking, "definition": definition,
                                    "prompt_list": prompt_list},
                   "retrieval": {"level": level, "top_k": top_k, "metric": metric},
                   "osma": {"aggregate": aggregate, "baseline": baseline, "templates": template},
                   "vqa": {"baseline": baseline}}[kind]
        need_text = kind in ("segmentation", "retrieval") or (kind == "osma" and (text_features is not None or clip_model is not None))
        encoder = ev._encoder(text_features, clip_model, clip_pretrained) if need_text else None
        bar = Progress(TextColumn("prediction folders"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                       TimeElapsedColumn(), console=ev.console)
        task = bar.add_task("", total=None)

        def done(n: int, total: int, key: str) -> None:
            if not bar.live.is_started:  # the bar appears with the first scored folder, not before an input error
                bar.start()
            bar.update(task, completed=n, total=total, description=key)

        with _client(cluster, params) as client:
            try:
                result = ev._run(sweep, kind, predictions, gt_dir, encoder, layout=layout, scenes=scene, options=options,
                                 client=client, on_done=done)
            finally:
                bar.stop()
        files = ev._run(write_report, out, result)
        ev.console.print(Path(files["results.md"]).read_text(encoding="utf-8"), highlight=False, markup=False)
        ev.console.print(f"report: {', '.join(str(p) for p in files.values())}", highlight=False)
        if result["failed"]:
            raise typer.Exit(1)
