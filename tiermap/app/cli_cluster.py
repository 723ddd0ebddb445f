"""`tiermap repro --cluster`: the DVC pipeline's stale stages on a Dask cluster (library: tiermap.app.cluster)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tiermap.formats.params import PARAMS_FILE


def add_repro_command(app: typer.Typer, run, cls: type, console: Console) -> None:  # type: ignore[no-untyped-def]
    """Register `repro` on the root group (run: the CLI's one-line error wrapper; cls: PipelineCommand)."""

    @app.command("repro", cls=cls)
    def repro(
        targets: Annotated[list[str] | None, typer.Argument(help="Stages (a foreach/matrix name means all its items); default: all.")] = None,
        cluster: Annotated[str, typer.Option("--cluster", help="local[:N] (N worker processes, default: cores) | tcp://HOST:PORT | slurm.")] = "local",
        force: Annotated[bool, typer.Option("--force", "-f", help="Run the targets and their upstream even when up to date.")] = False,
        repo: Annotated[Path, typer.Option("--repo", help="The DVC repository (workers must see it at the same path).")] = Path("."),
        params: Annotated[Path, typer.Option("--params", help="params.yaml with the `cluster:` block (slurm).")] = Path(PARAMS_FILE),
    ) -> None:
        """Run the pipeline's stale stages on a Dask cluster; each finished stage is recorded in dvc.lock (dvc commit)."""
        from tiermap.app import cluster as cl

        spec = run(lambda: cl.parse_spec(cluster))
        block = None
        if spec[0] == "slurm":
            from tiermap.formats.params import read_params

            block = run(lambda: read_params(repo / params if not params.is_absolute() else params))[0].cluster.model_dump()

        bar = Progress(TextColumn("stages"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                       TimeElapsedColumn(), console=console, transient=False)
        task = bar.add_task("", total=None)

        def start(plan: cl.Plan, dashboard: str | None) -> None:
            if not plan.order:
                console.print("Data and pipelines are up to date.")
                return
            console.print(f"{len(plan.order)} stale stage(s) on {cluster}; Dask dashboard: {dashboard}", soft_wrap=True)
            bar.update(task, total=len(plan.order), description=f"running 0 · waiting {len(plan.order)}")
            bar.start()

        def event(counts: dict[str, int], msg: str) -> None:
            bar.update(task, completed=counts["done"], description=f"running {counts['running']} · waiting {counts['waiting']}")
            if msg:
                bar.console.print(f"[{counts['done']}/{counts['total']}] {msg}", highlight=False, markup=False, soft_wrap=True)

        try:
            out = run(lambda: cl.repro(repo, cluster, targets or None, force, block, on_start=start, on_event=event))
        finally:
            bar.stop()
        if out.unchanged:
            console.print(f"not run (inputs unchanged after the stages above them ran): {', '.join(sorted(out.unchanged))}",
                          highlight=False, soft_wrap=True)
        if out.done or out.failed:
            console.print(f"{len(out.done)} stage(s) recorded in dvc.lock in {out.wall:.1f} s")
        if out.failed:
            for err in out.failed.values():
                console.print(f"[red]error:[/red] {err}", highlight=False)
            if out.skipped:
                console.print(f"not run (upstream failed): {', '.join(out.skipped)}", highlight=False)
            raise typer.Exit(1)
