"""Templated VQA questions in OSMa-Bench's eight categories, generated from the GT scene graph with checkable answers.

Every question carries a program; its answer is the program run on the GT graph (the generator's intended answer must
agree, else the question is dropped and counted). Only objects seen in the reference sequence and not flagged ambiguous
are asked about, and a class is asked about only when every object of it is; relations are viewpoint-free.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
from pydantic import TypeAdapter

from generation.library import LIBRARY, ROOM_KINDS
from tiermap.formats.scene_graph import STRUCTURAL, GraphNode, SceneGraph
from tiermap.formats.vqa import BINARY, CATEGORIES, NO, YES, Program, Question, QuestionSet
from tiermap.vqa_program import AFFORDANCES, Executor

PROGRAM = TypeAdapter(Program)
ADJECTIVE = {"wood": "wooden"}
SIZE_RATIO = 2.0     # "which is larger" only when one box has at least twice the other's volume
TALLER_BY = 0.3      # "which is taller" only when the heights differ by this many metres
NOT_NEAR = 2.0       # negatives of "next to" are at least this many times the threshold apart


@dataclass
class Cand:
    """A candidate question before selection."""

    category: str
    question: str
    answer_type: str
    program: dict
    answer: str
    objects: list[int]
    accepted: list[str] = field(default_factory=list)


def plural(word: str) -> str:
    """English plural of a (possibly multi-word) noun."""
    head, _, last = word.rpartition(" ")
    if last.endswith(("s", "x", "ch", "sh")):
        p = last + "es"
    elif last.endswith("y") and last[-2:-1] not in "aeiou":
        p = last[:-1] + "ies"
    else:
        p = last + "s"
    return f"{head} {p}".strip()


def article(word: str) -> str:
    """'a' or 'an' before a word."""
    return "an" if word[:1] in "aeiou" else "a"


class _Scene:
    """What the templates need: askable classes, their wordings and accepted answers, absent classes, relations."""

    def __init__(self, graph: SceneGraph, rng: np.random.Generator, absent: list[str] | None = None) -> None:
        self.g, self.rng, self.ex = graph, rng, Executor(graph)
        objs = [n for n in graph.nodes if n.label.lower() not in STRUCTURAL]
        self.by_class: dict[str, list[GraphNode]] = defaultdict(list)
        for n in objs:
            self.by_class[n.label].append(n)
        self.askable = sorted(c for c, ns in self.by_class.items() if all(n.visible and not n.ambiguous for n in ns))
        self.unique = [c for c in self.askable if len(self.by_class[c]) == 1]
        present = {n.label for n in graph.nodes}
        taken = present | {s for n in graph.nodes for s in n.synonyms}
        taken |= {s for c in present if c in LIBRARY for s in LIBRARY[c].synonyms}

        def free(c: str) -> bool:
            return c not in taken and not (c in LIBRARY and set(LIBRARY[c].synonyms) & taken)
        typical = sorted({c for k in graph.room_kinds.values() for c in ROOM_KINDS.get(k, [])})
        others = sorted({c for cs in ROOM_KINDS.values() for c in cs} - set(typical))
        pool = absent if absent is not None else typical + others  # the room kinds' own classes first
        self.absent = [c for c in pool if free(c)]
        self.names: dict[str, list[str]] = {}
        for c in self.askable:
            common = set.intersection(*(set(n.names) for n in self.by_class[c])) if self.by_class[c] else set()
            others_words = {n.label for n in objs if n.label != c} | {s for n in objs if n.label != c for s in n.synonyms}
            self.names[c] = sorted(({c} | common) - others_words) or [c]
        self.edges = self.ex.edges
        self.vocabulary = sorted(present | set(self.absent))

    def name(self, c: str) -> str:
        """A wording of the class, drawn from the annotators' synonyms that name no other object of the scene."""
        ws = self.names.get(c, [c])
        return ws[int(self.rng.integers(len(ws)))]

    def accepted(self, c: str) -> list[str]:
        """Every right text answer for an object of class c: the class and the annotators' synonyms."""
        return sorted({c} | {s for n in self.by_class[c] for s in n.synonyms})

    def ids(self, c: str) -> list[int]:
        return [n.id for n in self.by_class.get(c, [])]

    def ref(self, c: str) -> dict:
        return {"class": c, "id": self.by_class[c][0].id}


def _binary_general(s: _Scene) -> list[Cand]:
    out = []
    for c in s.askable:
        ns = s.by_class[c]
        colors = {col for n in ns for col in n.colors}
        if all(n.colors for n in ns):
            for col in sorted(colors):
                out.append(Cand("Binary General", f"Is there {article(col)} {col} {s.name(c)} in the scene?", "yes/no",
                                {"op": "exists", "class": c, "color": col}, YES, s.ids(c)))
            for col in sorted({"red", "blue", "green", "white", "black", "yellow", "brown"} - colors)[:2]:
                out.append(Cand("Binary General", f"Is there {article(col)} {col} {s.name(c)} in the scene?", "yes/no",
                                {"op": "exists", "class": c, "color": col}, NO, s.ids(c)))
        mats = {n.material for n in ns}
        if None not in mats:
            for m in sorted(mats):
                adj = ADJECTIVE.get(m, m)
                out.append(Cand("Binary General", f"Is there {article(adj)} {adj} {s.name(c)} in the scene?", "yes/no",
                                {"op": "exists", "class": c, "material": m}, YES, s.ids(c)))
            for m in sorted({"metal", "glass", "wood", "plastic"} - mats)[:1]:
                adj = ADJECTIVE.get(m, m)
                out.append(Cand("Binary General", f"Is there {article(adj)} {adj} {s.name(c)} in the scene?", "yes/no",
                                {"op": "exists", "class": c, "material": m}, NO, s.ids(c)))
    return out


EXIST_FORMS = ("Is there {a} {x} in the scene?", "Does the scene contain {a} {x}?", "Can {a} {x} be found in this scene?")


def _existence(s: _Scene) -> list[Cand]:
    out = []
    for c, ans in [(c, YES) for c in s.askable] + [(c, NO) for c in s.absent[:max(4, len(s.askable))]]:
        x = s.name(c) if ans == YES else c
        form = EXIST_FORMS[int(s.rng.integers(len(EXIST_FORMS)))]
        out.append(Cand("Binary Existence-Based", form.format(a=article(x), x=x), "yes/no", {"op": "exists", "class": c}, ans,
                        s.ids(c)))
    return out


def _logical(s: _Scene) -> list[Cand]:
    out = []
    atoms = [(c, True) for c in s.askable] + [(c, False) for c in s.absent]
    for k in range(min(40, len(atoms) * 2)):
        (a, ta), (b, tb) = (atoms[i] for i in s.rng.choice(len(atoms), 2, replace=False))
        na, nb = (s.name(a) if ta else a), (s.name(b) if tb else b)
        op = ("and", "or")[k % 2]
        truth = (ta and tb) if op == "and" else (ta or tb)
        out.append(Cand("Binary Logical", f"Is there {article(na)} {na} {op} {article(nb)} {nb} in the scene?", "yes/no",
                        {"op": op, "args": [{"op": "exists", "class": a}, {"op": "exists", "class": b}]}, YES if truth else NO,
                        s.ids(a) + s.ids(b)))
    return out


def _measurement(s: _Scene) -> list[Cand]:
    out = [Cand("Measurement", f"How many {plural(s.name(c))} are there in the scene?", "count", {"op": "count", "class": c},
                str(len(s.by_class[c])), s.ids(c)) for c in s.askable]
    out += [Cand("Measurement", f"How many {plural(c)} are there in the scene?", "count", {"op": "count", "class": c}, "0", [])
            for c in s.absent[:2]]
    askable_ids = {n.id for c in s.askable for n in s.by_class[c]}
    for c in s.unique:
        host = s.by_class[c][0].id
        on = [sub for (sub, r, o) in s.edges if r == "on" and o == host]
        if on and set(on) <= askable_ids:
            out.append(Cand("Measurement", f"How many objects are on the {s.name(c)}?", "count",
                            {"op": "count_related", "rel": "on", "object": s.ref(c)}, str(len(on)), [host, *on]))
    return out


def _attributes(s: _Scene) -> list[Cand]:
    out = []
    for c in s.unique:
        n = s.by_class[c][0]
        if n.colors:
            out.append(Cand("Object Attributes", f"What colour is the {s.name(c)}?", "text",
                            {"op": "attribute", "attr": "color", "subject": s.ref(c)}, n.colors[0], [n.id], list(n.colors)))
        if n.material:
            out.append(Cand("Object Attributes", f"What is the {s.name(c)} made of?", "text",
                            {"op": "attribute", "attr": "material", "subject": s.ref(c)}, n.material, [n.id], [n.material]))
    return out


def _functional(s: _Scene) -> list[Cand]:
    out = []
    for aff, classes in AFFORDANCES.items():
        found = [c for c in classes if c in s.by_class]
        if len(found) == 1 and found[0] in s.unique:
            c = found[0]
            out.append(Cand("Object Relations – Functional", f"Which object in the scene can you {aff}?", "text",
                            {"op": "afford", "affordance": aff}, c, s.ids(c), s.accepted(c)))
    return out


REL_WORDS = {"on": "on", "next_to": "next to", "above": "above", "inside": "inside"}


def _spatial(s: _Scene) -> list[Cand]:
    out = []
    uniq = {s.by_class[c][0].id: c for c in s.unique}
    askable_ids = {n.id: c for c in s.askable for n in s.by_class[c]}
    for c in s.unique:
        sub = s.by_class[c][0].id
        ons = [o for (x, r, o) in s.edges if x == sub and r == "on"]
        if len(ons) == 1 and ons[0] in askable_ids:
            oc = askable_ids[ons[0]]
            out.append(Cand("Object Relations – Spatial", f"What is the {s.name(c)} on?", "text",
                            {"op": "related", "rel": "on", "subject": s.ref(c)}, oc, [sub, ons[0]], s.accepted(oc)))
    pos = [(a, r, b) for (a, r, b) in sorted(s.edges) if a in uniq and b in uniq and r in REL_WORDS]
    for a, r, b in pos:
        out.append(Cand("Object Relations – Spatial", f"Is the {s.name(uniq[a])} {REL_WORDS[r]} the {s.name(uniq[b])}?", "yes/no",
                        {"op": "relation", "rel": r, "subject": s.ref(uniq[a]), "object": s.ref(uniq[b])}, YES, [a, b]))
    ids = sorted(uniq)
    nodes = {n.id: n for n in s.g.nodes}
    for r in ("on", "next_to"):
        for _ in range(len([p for p in pos if p[1] == r])):
            a, b = (ids[i] for i in s.rng.choice(len(ids), 2, replace=False)) if len(ids) >= 2 else (0, 0)
            if a == b or any((x, rr, y) in s.edges for (x, y) in ((a, b), (b, a)) for rr in ("on", "inside", "next_to")):
                continue
            if r == "next_to" and _gap(nodes[a], nodes[b]) < NOT_NEAR * s.g.thresholds.near:
                continue
            out.append(Cand("Object Relations – Spatial", f"Is the {s.name(uniq[a])} {REL_WORDS[r]} the {s.name(uniq[b])}?", "yes/no",
                            {"op": "relation", "rel": r, "subject": s.ref(uniq[a]), "object": s.ref(uniq[b])}, NO, [a, b]))
    return out


def _gap(a: GraphNode, b: GraphNode) -> float:
    """Horizontal gap between two boxes (0 when they overlap)."""
    d = np.abs(np.asarray(a.center[:2]) - np.asarray(b.center[:2])) - (np.asarray(a.extent[:2]) + np.asarray(b.extent[:2])) / 2
    return float(max(d.max(), 0.0))


def _comparison(s: _Scene) -> list[Cand]:
    out = []
    cs = s.askable
    for i, a in enumerate(cs):
        for b in cs[i + 1:]:
            na, nb = len(s.by_class[a]), len(s.by_class[b])
            out.append(Cand("Comparison", f"Are there more {plural(s.name(a))} than {plural(s.name(b))} in the scene?", "yes/no",
                            {"op": "compare_count", "cmp": "more", "a": a, "b": b}, YES if na > nb else NO, s.ids(a) + s.ids(b)))
    for i, a in enumerate(s.unique):
        for b in s.unique[i + 1:]:
            x, y = s.by_class[a][0], s.by_class[b][0]
            va, vb = float(np.prod(x.extent)), float(np.prod(y.extent))
            if max(va, vb) >= SIZE_RATIO * min(va, vb):
                win = a if va > vb else b
                out.append(Cand("Comparison", f"Which is larger, the {s.name(a)} or the {s.name(b)}?", "text",
                                {"op": "compare_size", "dim": "larger", "a": s.ref(a), "b": s.ref(b)}, win, [x.id, y.id], s.accepted(win)))
            if abs(x.extent[2] - y.extent[2]) >= TALLER_BY:
                win = a if x.extent[2] > y.extent[2] else b
                out.append(Cand("Comparison", f"Which is taller, the {s.name(a)} or the {s.name(b)}?", "text",
                                {"op": "compare_size", "dim": "taller", "a": s.ref(a), "b": s.ref(b)}, win, [x.id, y.id], s.accepted(win)))
    return out


TEMPLATES = (_binary_general, _existence, _logical, _measurement, _attributes, _functional, _spatial, _comparison)


def _select(cands: list[Cand], category: str, n: int, used: Counter, cap: int, rng: np.random.Generator) -> list[Cand]:
    """Pick up to n: yes/no balanced exactly in binary categories, answers spread in Measurement, no object over the cap."""
    order = [cands[i] for i in rng.permutation(len(cands))]
    if category in BINARY:
        groups = [[c for c in order if c.answer == YES], [c for c in order if c.answer == NO]]
    elif category == "Measurement":
        by = defaultdict(list)
        for c in order:
            by[c.answer].append(c)
        groups = [by[k] for k in sorted(by, key=int)]
    else:  # yes/no questions of other categories alternate Yes and No too, then text questions
        groups = [g for g in ([c for c in order if c.answer == YES], [c for c in order if c.answer == NO],
                              [c for c in order if c.answer_type == "text"]) if g]
    picked: list[list[Cand]] = [[] for _ in groups]
    progress = True
    while progress and sum(map(len, picked)) < n:
        progress = False
        for g, out in zip(groups, picked, strict=True):
            while g and sum(map(len, picked)) < n:
                c = g.pop(0)
                if all(used[o] < cap for o in c.objects):
                    out.append(c)
                    used.update(c.objects)
                    progress = True
                    break
    if category == "Measurement" and len(picked) > 1:  # no answer value is more common than all the others together
        big = max(range(len(picked)), key=lambda i: len(picked[i]))
        keep = max(1, sum(len(p) for i, p in enumerate(picked) if i != big))
        for c in picked[big][keep:]:
            used.subtract(c.objects)
        picked[big] = picked[big][:keep]
    if category in BINARY:
        k = min(len(p) for p in picked)
        for p in picked:
            for c in p[k:]:
                used.subtract(c.objects)
        picked = [p[:k] for p in picked]
    return [c for i in range(max(map(len, picked), default=0)) for p in picked if i < len(p) for c in [p[i]]]


def generate_questions(graph: SceneGraph, seed: int, per_category: int = 12, max_per_object: int = 6,
                       absent: list[str] | None = None) -> QuestionSet:
    """The scene's question set: per_category questions per category at most (same seed → same questions).

    `absent`: candidate classes for "is there …?" questions answered No (default: classes typical of the scene's room
    kinds, then of other rooms); candidates that name anything present are skipped.
    """
    rng = np.random.default_rng([seed, *graph.scene.encode()])
    s = _Scene(graph, rng, absent)
    stats: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    used: Counter = Counter()
    questions: list[Question] = []
    cands = [c for t in TEMPLATES for c in t(s)]
    for category in CATEGORIES:
        mine, inconsistent = [], 0
        for c in (c for c in cands if c.category == category):
            key = json.dumps(c.program, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            if s.ex.run(PROGRAM.validate_python(c.program)) != c.answer:
                inconsistent += 1
                continue
            mine.append(c)
        chosen = _select(mine, category, per_category, used, max_per_object, rng)
        stats[category] = {"candidates": len(mine), "selected": len(chosen), "inconsistent": inconsistent}
        for c in chosen:
            questions.append(Question(id=f"{graph.scene}-{len(questions) + 1:04d}", category=c.category, question=c.question,
                                      answer_type=c.answer_type, answer=c.answer, accepted=c.accepted,
                                      program=PROGRAM.validate_python(c.program), objects=sorted(set(c.objects))))
    return QuestionSet(scene=graph.scene, seed=seed, vocabulary=s.vocabulary, questions=questions,
                       stats={"per_category": stats, "absent_classes": s.absent})
