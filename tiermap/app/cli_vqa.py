"""`tiermap vqa questions`: the GT question sets (the `vqa answer` command comes from the evaluation toolkit)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiermap.formats.params import PARAMS_FILE


def add_questions_command(vqa_app: typer.Typer, run, show, paths) -> None:  # type: ignore[no-untyped-def]
    """Register `questions` on the `tiermap vqa` group (run/show/paths: the CLI's error, output and path helpers)."""

    @vqa_app.command("questions")
    def questions(
        root: Annotated[Path, typer.Option("--root", help="Data root.")] = Path("datasets"),
        dataset: Annotated[str, typer.Option("--dataset", help="Dataset name.")] = "demo",
        scene: Annotated[list[str] | None, typer.Option("--scene", help="Scene(s); default: every scene of params.yaml.")] = None,
        params: Annotated[Path, typer.Option("--params", help="params.yaml (its `vqa` block).")] = Path(PARAMS_FILE),
        gemini: Annotated[bool, typer.Option("--gemini", help="Also ask Gemini on key frames; keep questions the GT confirms.")] = False,
        gemini_model: Annotated[str, typer.Option("--gemini-model", help="Gemini model for --gemini.")] = "gemini-2.5-flash",
        keyframes: Annotated[str, typer.Option("--keyframes", help="pose (1.5 m / 30 deg spacing) or coverage (new objects).")] = "pose",
    ) -> None:
        """Write gt/<scene>/vqa_questions.json from the released GT scene graph (templated; --gemini adds checked LVLM ones)."""
        from tiermap.app.vqa import make_questions
        from tiermap.formats.params import read_params

        p = run(lambda: read_params(params))[0]
        show(run(lambda: make_questions(paths(root, dataset), list(scene or p.scenes), p.vqa,
                                        gemini_model=gemini_model if gemini else None, keyframes=keyframes,
                                        reference_condition=p.reference_condition)))
