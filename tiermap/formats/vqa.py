"""VQA files: question sets with executable programs, answer sets, and OSMa-Bench's evaluated JSON and metrics.csv."""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from tiermap import atomic
from tiermap.formats.base import Model, NonNegInt, dump_json, read_model, write_model
from tiermap.formats.scene_graph import Relation

QUESTIONS_FILE = "vqa_questions.json"
ANSWERS_FILE = "answers.json"
CATEGORIES = ("Binary General", "Binary Existence-Based", "Binary Logical", "Measurement", "Object Attributes",
              "Object Relations – Functional", "Object Relations – Spatial", "Comparison")
"""OSMa-Bench's eight categories, by the paper's names."""
Category = Literal["Binary General", "Binary Existence-Based", "Binary Logical", "Measurement", "Object Attributes",
                   "Object Relations – Functional", "Object Relations – Spatial", "Comparison"]
BINARY = ("Binary General", "Binary Existence-Based", "Binary Logical")
FUNCTIONAL = "Object Relations – Functional"
YES, NO = "Yes", "No"
AnswerType = Literal["yes/no", "count", "text"]
NonEmpty = Annotated[str, Field(min_length=1)]


class Ref(Model):
    """An object named by its class (unique among the scene's visible objects); `id` is the GT id, for reference."""

    class_: NonEmpty = Field(alias="class")
    id: NonNegInt | None = None


class Exists(Model):
    """Is there an object of `class` (with this colour / material)? → yes/no."""

    op: Literal["exists"] = "exists"
    class_: NonEmpty = Field(alias="class")
    color: str | None = None
    material: str | None = None


class Count(Model):
    """How many objects of `class`? → count."""

    op: Literal["count"] = "count"
    class_: NonEmpty = Field(alias="class")


class CountRelated(Model):
    """How many objects are `rel` the object? → count."""

    op: Literal["count_related"] = "count_related"
    rel: Relation
    object: Ref


class Relates(Model):
    """Is the subject `rel` the object? → yes/no."""

    op: Literal["relation"] = "relation"
    rel: Relation
    subject: Ref
    object: Ref


class Related(Model):
    """What is the subject `rel`? → text (the class of the one object it is `rel`)."""

    op: Literal["related"] = "related"
    rel: Relation
    subject: Ref


class Attribute(Model):
    """What colour / material is the subject? → text."""

    op: Literal["attribute"] = "attribute"
    attr: Literal["color", "material"]
    subject: Ref


class CompareCount(Model):
    """Are there more (fewer) objects of class a than of class b? → yes/no."""

    op: Literal["compare_count"] = "compare_count"
    cmp: Literal["more", "fewer"]
    a: NonEmpty
    b: NonEmpty


class CompareSize(Model):
    """Which is larger (by box volume) / taller, a or b? → text (the winner's class)."""

    op: Literal["compare_size"] = "compare_size"
    dim: Literal["larger", "taller"]
    a: Ref
    b: Ref


class Afford(Model):
    """Which object can one `affordance` (sit on, lie on, store things in, ...)? → text."""

    op: Literal["afford"] = "afford"
    affordance: NonEmpty


class Logic(Model):
    """Both / either of two yes/no programs → yes/no."""

    op: Literal["and", "or"]
    args: Annotated[list[Exists | Relates | CompareCount], Field(min_length=2, max_length=2)]


Program = Annotated[Exists | Count | CountRelated | Relates | Related | Attribute | CompareCount | CompareSize | Afford | Logic,
                    Field(discriminator="op")]


class Question(Model):
    """One question: OSMa-Bench's fields (question, answer, category) plus its program and what else is accepted."""

    id: NonEmpty
    category: Category
    question: NonEmpty
    answer_type: AnswerType
    answer: NonEmpty
    accepted: list[str] = []         # text: every answer that is right (the object's synonyms)
    program: Program
    objects: list[NonNegInt] = []    # GT ids the question is about
    source: Literal["template", "lvlm"] = "template"

    @model_validator(mode="after")
    def _answer_shape(self) -> Question:
        if self.answer_type == "yes/no" and self.answer not in (YES, NO):
            raise ValueError(f"answer 'Yes' or 'No' for a yes/no question (got {self.answer!r})")
        if self.answer_type == "count" and not self.answer.isdigit():
            raise ValueError(f"a whole number as the answer of a count question (got {self.answer!r})")
        return self


class QuestionSet(Model):
    """vqa_questions.json: one scene's questions (same seed → same bytes)."""

    format: Literal["tiermap-vqa-questions"] = "tiermap-vqa-questions"
    version: Literal[1] = 1
    scene: str
    seed: int
    vocabulary: list[str] = []       # every class name of the scene plus the absent classes asked about: what resolvers map to
    questions: list[Question]
    stats: dict[str, Any] = {}       # how many were generated, dropped and why

    @model_validator(mode="after")
    def _unique(self) -> QuestionSet:
        ids = [q.id for q in self.questions]
        if len(ids) != len(set(ids)):
            raise ValueError(f"unique question ids (repeated: {sorted({i for i in ids if ids.count(i) > 1})[:3]})")
        return self


class AnswerRecord(Model):
    """One answer; None when the answerer gave none (it counts as wrong)."""

    id: NonEmpty
    answer: str | None = None


class AnswerSet(Model):
    """answers.json: one method's answers to one question set, on one condition's graph."""

    format: Literal["tiermap-vqa-answers"] = "tiermap-vqa-answers"
    version: Literal[1] = 1
    scene: str
    method: str
    condition: str
    answerer: str
    answers: list[AnswerRecord]

    @model_validator(mode="after")
    def _unique(self) -> AnswerSet:
        ids = [a.id for a in self.answers]
        if len(ids) != len(set(ids)):
            raise ValueError(f"one answer per question id (repeated: {sorted({i for i in ids if ids.count(i) > 1})[:3]})")
        return self


def read_questions(path: Path | str) -> QuestionSet:
    """Read and validate vqa_questions.json."""
    return read_model(QuestionSet, path)


def write_questions(qs: QuestionSet, path: Path | str) -> Path:
    """Write vqa_questions.json canonically and atomically."""
    return write_model(qs, path)


def read_answers(path: Path | str) -> AnswerSet:
    """Read and validate answers.json."""
    return read_model(AnswerSet, path)


def write_answers(ans: AnswerSet, path: Path | str) -> Path:
    """Write answers.json atomically (missing answers are written as null)."""
    return atomic.write_text(path, dump_json(ans.model_dump(mode="json", by_alias=True)))


EVALUATED_FIELDS = ("question", "answer", "category", "scene_graph_answer", "similar")
METRICS_COLUMNS = ("File Name", "Overall Accuracy", "Accuracy (No Spatial)", *CATEGORIES)


def write_osma_evaluated(rows: list[dict[str, str]], path: Path | str) -> Path:
    """OSMa-Bench's `<scene>_evaluated.json`: a list of {question, answer, category, scene_graph_answer, similar}."""
    return atomic.write_text(path, dump_json([{k: r[k] for k in EVALUATED_FIELDS} for r in rows]))


def write_osma_metrics(rows: list[dict[str, Any]], path: Path | str) -> Path:
    """OSMa-Bench's `evaluated/metrics.csv`: File Name, Overall Accuracy, Accuracy (No Spatial), one column per category (%)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(METRICS_COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in METRICS_COLUMNS})
    return atomic.write_text(path, buf.getvalue())
