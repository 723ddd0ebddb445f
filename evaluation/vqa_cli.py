"""`tiermap eval vqa` (score answers) and the `tiermap vqa` group (`vqa answer`: answer questions from a scene graph)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evaluation.cli import MultiValueCommand, OutOpt, _report, _run, console, eval_app
from tiermap.formats.base import SchemaError
from tiermap.formats.results import check_out_dir

vqa_app = typer.Typer(help="VQA over scene graphs (OSMa-Bench): answer question sets from a method's graph.",
                      no_args_is_help=True)

QuestionsOpt = Annotated[Path, typer.Option("--questions", help="vqa_questions.json of the scene.")]
CacheOpt = Annotated[Path | None, typer.Option("--cache", help="Folder of cached Gemini replies (default: .gemini-cache beside the output).")]


@eval_app.command("vqa", cls=MultiValueCommand)
def eval_vqa(
    questions: QuestionsOpt,
    answers: Annotated[list[Path], typer.Option("--answers", help="answers.json files (each names its method and condition).")],
    out: OutOpt,
    gt_graph: Annotated[Path | None, typer.Option("--gt-graph", help="The GT scene graph: adds the gt-graph reference row (the ceiling).")] = None,
    reference: Annotated[str, typer.Option("--reference", help="Condition the relative change is measured against.")] = "baseline",
    judge: Annotated[str | None, typer.Option("--judge", help="gemini: an LLM judge for the text answers still unmatched.")] = None,
    judge_model: Annotated[str, typer.Option("--judge-model", help="Gemini model of --judge gemini.")] = "gemini-2.5-flash",
    cache: CacheOpt = None,
) -> None:
    """OSMa-Bench VQA scoring: accuracy per category and condition with Wilson intervals, reference rows, relative change."""
    from evaluation.vqa_score import evaluate_vqa

    result, extra = _run(evaluate_vqa, questions, answers, gt_graph=gt_graph, reference=reference, judge=judge,
                         judge_model=judge_model, cache=cache)
    _report(out, result, extra)


@vqa_app.command("answer")
def vqa_answer(
    questions: QuestionsOpt,
    graph: Annotated[Path, typer.Option("--graph", help="The method's scene graph of one condition.")],
    condition: Annotated[str, typer.Option("--condition", help="Condition the graph was built on (e.g. baseline).")],
    method: Annotated[str, typer.Option("--method", help="Method that built the graph (e.g. conceptgraphs).")],
    out: Annotated[Path, typer.Option("--out", help="answers.json to write.")],
    answerer: Annotated[str, typer.Option("--answerer", help="program (run each question's program; offline) or gemini.")] = "program",
    model: Annotated[str, typer.Option("--model", help="Gemini model of --answerer gemini.")] = "gemini-2.5-flash",
    cache: CacheOpt = None,
) -> None:
    """Answer a question set from one scene graph and write answers.json (missing answers are kept as null)."""
    from evaluation.vqa_answer import ANSWERERS, answer_questions

    if answerer not in ANSWERERS:
        _run(_bad_answerer, answerer)
    if out.is_dir():
        _run(_out_is_dir, out)
    _run(check_out_dir, out.parent)
    ans, stats = _run(answer_questions, questions, graph, answerer, out, method=method, condition=condition, model=model,
                      cache=cache, progress=True)
    extra = "".join(f", {k} {v}" for k, v in stats.items() if k != "missing")
    console.print(f"answers: {out} ({len(ans.answers)} questions, {stats['missing']} without an answer{extra})")


def _bad_answerer(answerer: str) -> None:
    raise SchemaError("<options>", "--answerer", "program or gemini", answerer)


def _out_is_dir(out: Path) -> None:
    raise SchemaError(out, "--out", "a file path for answers.json (a folder is in the way)")
