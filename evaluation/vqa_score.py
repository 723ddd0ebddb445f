"""Score VQA answers against a question set: normalised matching, an optional Gemini judge that can only say "matched".

Rules (stated constants):
- every answer is normalised (`normalise`); yes/no and count questions match on exact equality after normalisation;
- text questions match when the normalised answer equals a normalised accepted answer (the question's `answer` or any of
  `accepted`), contains one as a whole word sequence, or has MiniLM cosine >= `TEXT_THRESHOLD` = 0.8 with one;
- the optional judge (Gemini) sees only the text answers still unmatched; it can flip unmatched → matched by id and
  nothing else (changed questions, answers and unknown ids in its reply are ignored);
- a missing answer (None) is wrong: every accuracy's denominator is the number of questions.
Reported per condition: accuracy per category and overall (with and without Object Relations – Functional, which the
paper leaves out), 95 % Wilson intervals, balanced accuracy of the binary categories, the relative change against a
reference condition, and reference rows computed from the questions alone (majority, always unknown) or from the GT
graph (gt-graph, the ceiling).
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from tiermap.formats.base import SchemaError
from tiermap.formats.vqa import (
    BINARY,
    CATEGORIES,
    FUNCTIONAL,
    NO,
    YES,
    AnswerSet,
    Question,
    QuestionSet,
    read_answers,
    read_questions,
    write_osma_evaluated,
    write_osma_metrics,
)

TEXT_THRESHOLD = 0.8
"""Minimum MiniLM cosine between a normalised text answer and a normalised accepted answer for a match."""
Z95 = 1.959963984540054
SPATIAL = "Object Relations – Spatial"
NO_ANSWER = "**NO ANSWER**"
"""What OSMa-Bench's evaluated JSON holds for a question without an answer (its refactored answerer's marker)."""
REFERENCE_ROWS = ("majority", "always unknown", "gt-graph")
JUDGE_BATCH = 10

NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())}
YES_WORDS = frozenset({"yes", "yeah", "yep", "true"})
NO_WORDS = frozenset({"no", "nope", "false"})
ARTICLES = frozenset({"a", "an", "the"})
_PREFIX = re.compile(r"^\s*(?:(?:final\s+)?answer\s*[:\-]|the\s+answer\s+is\b\s*:?|answer\s+is\b\s*:?)\s*")
_LEAD = re.compile(r"^\s*([a-z]+)\s*(?:[,.;:!?]|$)")
_DECIMAL = re.compile(r"^(\d+)\.0+$")


def normalise(answer: str | None) -> str:
    """Canonical form of an answer for matching ('' for None).

    Lower-cased; an "answer:" / "the answer is" prefix dropped; a yes/no word standing alone or followed by punctuation
    ("Yes!", "no, there is none", "true") becomes "yes"/"no"; "2.0" becomes "2"; punctuation becomes space; number words
    zero..twenty become digits; the articles a/an/the are dropped; whitespace collapsed.
    """
    if answer is None:
        return ""
    s = _PREFIX.sub("", str(answer).strip().lower())
    lead = _LEAD.match(s)
    if lead and lead.group(1) in YES_WORDS | NO_WORDS:
        return "yes" if lead.group(1) in YES_WORDS else "no"
    s = re.sub(r"(?<=\d)\.(?=\d)", "\0", s)             # keep decimal points while punctuation goes
    s = re.sub(r"[^\w\s\0]|_", " ", s).replace("\0", ".")
    words = []
    for w in s.split():
        if w in ARTICLES:
            continue
        m = _DECIMAL.match(w)
        words.append(m.group(1) if m else NUMBER_WORDS.get(w, w))
    return " ".join(words)


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """95 % Wilson score interval of a proportion (None when n = 0)."""
    if n == 0:
        return None
    p = correct / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# ---------------------------------------------------------------- matching
def _contains(answer: str, accepted: str) -> bool:
    return bool(accepted) and f" {accepted} " in f" {answer} "


def match_answers(questions: list[Question], answers: Mapping[str, str | None], encoder: Any | None,
                  threshold: float = TEXT_THRESHOLD) -> dict[str, str | None]:
    """question id → how it matched ("exact", "contains", "similar"), or None (wrong or missing)."""
    how: dict[str, str | None] = {}
    pending: list[tuple[str, str, list[str]]] = []
    for q in questions:
        got = normalise(answers.get(q.id))
        if not got:
            how[q.id] = None
            continue
        if q.answer_type != "text":
            how[q.id] = "exact" if got == normalise(q.answer) else None
            continue
        acc = [a for a in dict.fromkeys(normalise(x) for x in [q.answer, *q.accepted]) if a]
        if got in acc:
            how[q.id] = "exact"
        elif any(_contains(got, a) for a in acc):
            how[q.id] = "contains"
        else:
            how[q.id] = None
            pending.append((q.id, got, acc))
    if pending and encoder is not None:
        texts = list(dict.fromkeys(t for _, got, acc in pending for t in [got, *acc]))
        emb = np.asarray(encoder(texts), dtype=np.float32)
        row = {t: i for i, t in enumerate(texts)}
        for qid, got, acc in pending:
            sims = emb[[row[a] for a in acc]] @ emb[row[got]]
            if float(sims.max()) >= threshold:
                how[qid] = "similar"
    return how


class Verdict(BaseModel):
    """One verdict of the judge."""

    id: str
    verdict: bool


JUDGE_PROMPT = """Decide for each entry whether the scene-graph answer ("scene_graph_answer") means the same as the
ground-truth answer ("answer") to the question; "accepted" lists other correct answers. Reply with a JSON list of
{"id", "verdict"}: verdict true when they mean the same object, colour, material or quantity, false otherwise.

Entries:
{entries}
"""


def judge_unmatched(questions: list[Question], answers: Mapping[str, str | None], how: dict[str, str | None],
                    model: str, cache: Path | None) -> tuple[dict[str, str | None], dict[str, int]]:
    """Ask Gemini about the unmatched, non-missing text answers only; its true verdicts flip them to "judge"."""
    from evaluation.vqa_gemini import JsonAsker

    todo = [q for q in questions if q.answer_type == "text" and how.get(q.id) is None and normalise(answers.get(q.id))]
    asker = JsonAsker(model, cache, "eval vqa --judge gemini")
    out, flipped, ignored = dict(how), 0, 0
    for i in range(0, len(todo), JUDGE_BATCH):
        batch = todo[i:i + JUDGE_BATCH]
        ids = {q.id for q in batch}
        entries = json.dumps([{"id": q.id, "question": q.question, "answer": q.answer, "accepted": q.accepted,
                               "scene_graph_answer": answers.get(q.id)} for q in batch], ensure_ascii=False)
        for v in asker.ask(JUDGE_PROMPT.replace("{entries}", entries), Verdict) or []:
            if v.id in ids and out[v.id] is None:
                if v.verdict:
                    out[v.id], flipped = "judge", flipped + 1
                ids.discard(v.id)  # one verdict per id: the first
            else:
                ignored += 1
    return out, {"asked": len(todo), "flipped": flipped, "ignored": ignored, "requests": asker.requests,
                 "unparsed": asker.unparsed}


# ---------------------------------------------------------------- numbers
def _acc(correct: int, n: int) -> dict[str, Any]:
    ci = wilson(correct, n)
    return {"n": n, "correct": correct, "accuracy": correct / n if n else None,
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None}


def summarise(questions: list[Question], how: Mapping[str, str | None], answers: Mapping[str, str | None]) -> dict:
    """Accuracy per category and overall (± Functional), Wilson intervals, balanced accuracy of binary categories."""
    ok = {q.id: how.get(q.id) is not None for q in questions}
    cats: dict[str, Any] = {}
    for c in CATEGORIES:
        qs = [q for q in questions if q.category == c]
        if not qs:
            continue
        cats[c] = _acc(sum(ok[q.id] for q in qs), len(qs))
        if c in BINARY:
            rec = {}
            for gt, key in ((YES, "yes"), (NO, "no")):
                sub = [q for q in qs if q.answer == gt]
                rec[key] = _acc(sum(ok[q.id] for q in sub), len(sub))
            cats[c]["recall_yes"], cats[c]["recall_no"] = rec["yes"]["accuracy"], rec["no"]["accuracy"]
            cats[c]["n_yes"], cats[c]["n_no"] = rec["yes"]["n"], rec["no"]["n"]
            both = rec["yes"]["n"] and rec["no"]["n"]
            cats[c]["balanced_accuracy"] = (rec["yes"]["accuracy"] + rec["no"]["accuracy"]) / 2 if both else None
    no_func = [q for q in questions if q.category != FUNCTIONAL]
    return {
        "overall": _acc(sum(ok.values()), len(questions)),
        "overall_no_functional": _acc(sum(ok[q.id] for q in no_func), len(no_func)),
        "categories": cats,
        "missing": sum(normalise(answers.get(q.id)) == "" for q in questions),
        "matched_by": dict(sorted(Counter(v for v in how.values() if v is not None).items())),
    }


def _change(value: float | None, base: float | None) -> float | None:
    return None if value is None or base is None or base == 0 else (value - base) / base


def relative_change(cond: dict, ref: dict) -> dict[str, float | None]:
    """(accuracy − reference accuracy) / reference accuracy per category and overall."""
    out = {"overall": _change(cond["overall"]["accuracy"], ref["overall"]["accuracy"]),
           "overall_no_functional": _change(cond["overall_no_functional"]["accuracy"], ref["overall_no_functional"]["accuracy"])}
    for c in CATEGORIES:
        if c in cond["categories"] and c in ref["categories"]:
            out[c] = _change(cond["categories"][c]["accuracy"], ref["categories"][c]["accuracy"])
    return out


def majority_answers(questions: list[Question]) -> dict[str, str]:
    """Each question answered with its category's most common GT answer (ties: the smallest string)."""
    best = {}
    for c in CATEGORIES:
        counts = Counter(q.answer for q in questions if q.category == c)
        if counts:
            best[c] = min(counts, key=lambda a: (-counts[a], a))
    return {q.id: best[q.category] for q in questions}


# ---------------------------------------------------------------- inputs
def check_answers(qs: QuestionSet, qpath: Path | str, ans: AnswerSet, apath: Path | str) -> dict[str, str | None]:
    """id → answer, after checking the scene and that every answered id is a question of the set."""
    if ans.scene != qs.scene:
        raise SchemaError(apath, "scene", f"the scene of {qpath} ({qs.scene!r})", ans.scene)
    known = {q.id for q in qs.questions}
    for k, a in enumerate(ans.answers):
        if a.id not in known:
            raise SchemaError(apath, f"answers.{k}.id", f"a question id of {qpath}", a.id)
    return {a.id: a.answer for a in ans.answers}


def condition_labels(sets: list[tuple[Path, AnswerSet]]) -> list[str]:
    """The condition name of each answers file, `method/condition` when several methods are scored; unique."""
    several = len({a.method for _, a in sets}) > 1
    labels = [f"{a.method}/{a.condition}" if several else a.condition for _, a in sets]
    for i, (path, _) in enumerate(sets):
        if labels[i] in labels[:i]:
            raise SchemaError(path, "condition", "one answers file per method and condition", labels[i])
    return labels


def osma_rows(questions: list[Question], answers: Mapping[str, str | None], how: Mapping[str, str | None]) -> list[dict[str, str]]:
    """OSMa-Bench evaluated entries: question, answer (GT), category, scene_graph_answer, similar (Yes/No)."""
    return [{"question": q.question, "answer": q.answer, "category": q.category,
             "scene_graph_answer": NO_ANSWER if answers.get(q.id) is None else str(answers[q.id]),
             "similar": YES if how.get(q.id) is not None else NO} for q in questions]


def osma_metrics_row(file_name: str, questions: list[Question], how: Mapping[str, str | None]) -> dict[str, Any]:
    """One metrics.csv row (%, 2 decimals): overall, without Spatial (OSMa-Bench master's definition), per category."""
    def pct(qs: list[Question]) -> str:
        return f"{100 * sum(how.get(q.id) is not None for q in qs) / len(qs):.2f}" if qs else ""

    row: dict[str, Any] = {"File Name": file_name, "Overall Accuracy": pct(questions),
                           "Accuracy (No Spatial)": pct([q for q in questions if q.category != SPATIAL])}
    for c in CATEGORIES:
        row[c] = pct([q for q in questions if q.category == c])
    return row


# ---------------------------------------------------------------- the command
def evaluate_vqa(questions_path: Path | str, answers_paths: list[Path], *, gt_graph: Path | None = None,
                 reference: str = "baseline", judge: str | None = None, judge_model: str = "gemini-2.5-flash",
                 cache: Path | None = None, encoder: Any | None = None) -> tuple[dict, dict[str, Callable[[Path], Path]]]:
    """The vqa result (kind "vqa") and the extra files of the report (OSMa evaluated JSONs, metrics.csv, plots)."""
    from evaluation.plots import plot_vqa_polar, plot_vqa_relative_change
    from evaluation.vqa_answer import AFFORD_THRESHOLD, MATCH_THRESHOLD, answer_program, load_graph, minilm_encoder

    if judge not in (None, "gemini"):
        raise SchemaError("<options>", "--judge", "gemini (or no --judge)", judge)
    if not answers_paths:
        raise SchemaError("<options>", "--answers", "at least one answers.json")
    qs = read_questions(questions_path)
    sets = [(Path(p), read_answers(p)) for p in answers_paths]
    given = [check_answers(qs, questions_path, a, p) for p, a in sets]
    labels = condition_labels(sets)
    graph = load_graph(gt_graph) if gt_graph is not None else None
    if graph is not None and graph.scene and graph.scene != qs.scene:
        raise SchemaError(gt_graph, "scene", f"the scene of {questions_path} ({qs.scene!r})", graph.scene)
    enc = encoder or minilm_encoder()
    questions = qs.questions
    conditions: dict[str, Any] = {}
    extra: dict[str, Callable[[Path], Path]] = {}
    metrics_rows = []
    judged: dict[str, Any] = {}
    for label, (path, aset), answers in zip(labels, sets, given, strict=True):
        how = match_answers(questions, answers, enc)
        if judge == "gemini":
            how, judged[label] = judge_unmatched(questions, answers, how, judge_model, cache or path.parent / ".gemini-cache")
        conditions[label] = {"method": aset.method, "condition": aset.condition, "answerer": aset.answerer,
                             "file": path.name, **summarise(questions, how, answers)}
        name = f"{qs.scene}_{label.replace('/', '_')}_evaluated.json"
        rows = osma_rows(questions, answers, how)
        extra[name] = lambda p, rows=rows: write_osma_evaluated(rows, p)
        metrics_rows.append(osma_metrics_row(name, questions, how))
    refs: dict[str, Any] = {}
    for name, answers in (("majority", majority_answers(questions)), ("always unknown", {q.id: "unknown" for q in questions})):
        refs[name] = summarise(questions, match_answers(questions, answers, enc), answers)
    if graph is not None:
        gt_answers = {a.id: a.answer for a in answer_program(qs, graph, enc)}
        refs["gt-graph"] = summarise(questions, match_answers(questions, gt_answers, enc), gt_answers)
    relative: dict[str, Any] = {}
    for label, d in conditions.items():
        ref = next((c for c in conditions.values() if c["method"] == d["method"] and c["condition"] == reference), None)
        if ref is not None and d["condition"] != reference:
            relative[label] = relative_change(d, ref)
    result = {"kind": "vqa", "scene": qs.scene, "questions": Path(questions_path).name, "n_questions": len(questions),
              "reference": reference, "method": ", ".join(dict.fromkeys(a.method for _, a in sets)),
              "thresholds": {"text_similarity": TEXT_THRESHOLD, "resolver_similarity": MATCH_THRESHOLD,
                             "affordance_similarity": AFFORD_THRESHOLD},
              "judge": judge_model if judge else None, "conditions": conditions, "references": refs,
              "relative_change": relative}
    if judged:
        result["judge_stats"] = judged
    if not any(d["condition"] == reference for d in conditions.values()):
        result["note"] = f"no answers of the reference condition {reference!r}: no relative change"
    extra["metrics.csv"] = lambda p: write_osma_metrics(metrics_rows, p)
    extra["vqa_polar.png"] = lambda p: plot_vqa_polar(result, p)
    extra["vqa_relative_change.png"] = lambda p: plot_vqa_relative_change(result, p)
    return result, extra
