"""LVLM questions (OSMa-Bench's optional input, done right): key frames, images sent as bytes, structured output,
temperature 0, cached; every question is then checked against the GT graph and kept only with a program that agrees."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy.spatial.transform import Rotation

from generation.vqa_questions import PROGRAM, plural
from tiermap import atomic
from tiermap.formats.base import dump_json, read_json
from tiermap.formats.scene_graph import STRUCTURAL, SceneGraph
from tiermap.formats.sequence import open_sequence, read_instance
from tiermap.formats.vqa import CATEGORIES, NO, YES, Question
from tiermap.vqa_program import Executor

POS_SPACING = 1.5   # m between key frames (OSMa-Bench's refactored default) ...
ANGLE_SPACING = 30  # ... unless the view turned by at least this many degrees


class LvlmQA(BaseModel):
    """One question as the LVLM returns it."""

    question: str
    answer: str
    category: Literal["Binary General", "Binary Existence-Based", "Binary Logical", "Measurement", "Object Attributes",
                      "Object Relations – Functional", "Object Relations – Spatial", "Comparison"]


class LvlmReply(BaseModel):
    """The structured reply: a list of questions."""

    questions: list[LvlmQA]


PROMPT = ("You see one frame of an indoor scene. Write questions about the scene a robot could answer from a map of it, "
          "each with its answer and one category of: " + "; ".join(CATEGORIES) + ". Use only objects you can see. "
          "Yes/no answers are exactly Yes or No; counts are digits. Never use viewpoint words (left, right, behind, "
          "in front, foreground, background). Prefer the forms 'How many <objects> are there in the scene?', "
          "'Is there a <object> in the scene?', 'What colour is the <object>?'.")


def key_frames_by_pose(poses: np.ndarray, spacing: float = POS_SPACING, angle_deg: float = ANGLE_SPACING) -> list[int]:
    """Greedy key frames: a frame is kept when every kept frame is farther than `spacing` or turned by `angle_deg` degrees.

    Poses are camera-to-world 4x4 (traj.txt rows reshaped), so the position is the last column and the angle is the
    rotation between the two camera orientations (OSMa-Bench's master branch read both wrongly; its refactor compared
    radians with a threshold of 10).
    """
    kept: list[int] = []
    for i, T in enumerate(poses):
        ok = True
        for k in kept:
            near = np.linalg.norm(T[:3, 3] - poses[k][:3, 3]) < spacing
            turn = np.degrees(Rotation.from_matrix(T[:3, :3] @ poses[k][:3, :3].T).magnitude())
            if near and turn < angle_deg:
                ok = False
                break
        if ok:
            kept.append(i)
    return kept


def key_frames_by_coverage(sequence: Path, min_pixels: int = 50, max_frames: int = 8) -> list[int]:
    """Greedy key frames that each add the most not-yet-covered objects (seen with at least min_pixels)."""
    seq = open_sequence(sequence)
    seen = []
    for f in seq.instance:
        ids, counts = np.unique(read_instance(f, seq.shape), return_counts=True)
        seen.append({int(i) for i, c in zip(ids, counts, strict=True) if i and c >= min_pixels})
    covered: set[int] = set()
    kept: list[int] = []
    while len(kept) < max_frames:
        gain = [len(s - covered) if i not in kept else -1 for i, s in enumerate(seen)]
        best = int(np.argmax(gain)) if gain else -1
        if best < 0 or gain[best] <= 0:
            break
        kept.append(best)
        covered |= seen[best]
    return sorted(int(seq.frames[k]) for k in kept)


def ask_frame(client: object, model: str, image: Path, cache_dir: Path) -> LvlmReply:
    """One frame's questions: image bytes + prompt, JSON schema, temperature 0; cached by model + prompt + image hash."""
    from google.genai import types

    data = image.read_bytes()
    mime = "image/png" if image.suffix.lower() == ".png" else "image/jpeg"
    key = hashlib.sha256(model.encode() + PROMPT.encode() + data).hexdigest()
    path = cache_dir / f"{key}.json"
    if path.is_file():
        return LvlmReply.model_validate(read_json(path))
    resp = client.models.generate_content(  # type: ignore[attr-defined]
        model=model, contents=[types.Part.from_bytes(data=data, mime_type=mime), PROMPT],
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=LvlmReply, temperature=0.0))
    reply = resp.parsed if isinstance(resp.parsed, LvlmReply) else LvlmReply(questions=[])
    atomic.write_text(path, dump_json(reply.model_dump(mode="json")))
    return reply


def _classes(graph: SceneGraph) -> dict[str, str]:
    """Every word that names a class of the scene (class names, synonyms, their plurals) → the class."""
    out: dict[str, str] = {}
    for n in graph.nodes:
        if n.label.lower() in STRUCTURAL:
            continue
        for w in {n.label, *n.synonyms}:
            out.setdefault(w.lower(), n.label)
            out.setdefault(plural(w.lower()), n.label)
    return out


FORMS = [
    (re.compile(r"^how many (.+?) (?:are|is) there(?: in the (?:scene|room))?\??$"), "count"),
    (re.compile(r"^(?:is|are) there (?:a |an |any )?(.+?)(?: in the (?:scene|room))?\??$"), "exists"),
    (re.compile(r"^what colou?r is the (.+?)\??$"), "color"),
]


def to_program(qa: LvlmQA, graph: SceneGraph, known: dict[str, str], absent_ok: set[str]) -> dict | None:
    """The program a question asks, when it is one of the checkable forms and names a class (None: unverifiable)."""
    q = qa.question.strip().lower()
    for rx, kind in FORMS:
        m = rx.match(q)
        if not m:
            continue
        noun = m.group(1).strip()
        cls = known.get(noun) or (noun if noun in absent_ok else None)
        if cls is None:
            return None
        if kind == "count":
            return {"op": "count", "class": cls}
        if kind == "exists":
            return {"op": "exists", "class": cls}
        ids = [n.id for n in graph.nodes if n.label == cls]
        return {"op": "attribute", "attr": "color", "subject": {"class": cls, "id": ids[0]}} if len(ids) == 1 else None
    return None


def lvlm_questions(graph: SceneGraph, sequence: Path, model: str, cache_dir: Path, *, keyframes: str = "pose",
                   absent: list[str] | None = None, start: int = 1) -> tuple[list[Question], dict[str, int]]:
    """Questions from Gemini on the reference sequence's key frames, each kept only when its program agrees with the GT."""
    from tiermap.gemini import gemini_client

    seq = open_sequence(sequence)
    frames = key_frames_by_pose(seq.poses) if keyframes == "pose" else key_frames_by_coverage(sequence)
    client = gemini_client("VQA question generation")
    cache_dir.mkdir(parents=True, exist_ok=True)
    known, ex = _classes(graph), Executor(graph)
    absent_ok = set(absent or [])
    index = {int(f): i for i, f in enumerate(seq.frames)}
    stats = {"key_frames": len(frames), "asked": 0, "kept": 0, "contradicted": 0, "unverifiable": 0, "duplicate": 0}
    out: list[Question] = []
    seen: set[str] = set()
    for f in frames:
        reply = ask_frame(client, model, seq.rgb[index.get(f, f)], cache_dir)
        for qa in reply.questions:
            stats["asked"] += 1
            prog = to_program(qa, graph, known, absent_ok)
            if prog is None:
                stats["unverifiable"] += 1
                continue
            key = json.dumps(prog, sort_keys=True)
            if key in seen:
                stats["duplicate"] += 1
                continue
            truth = ex.run(PROGRAM.validate_python(prog))
            said = qa.answer.strip().rstrip(".").capitalize() if prog["op"] == "exists" else qa.answer.strip().lower()
            if truth is None or said != truth:
                stats["contradicted"] += 1
                continue
            seen.add(key)
            kind = {"count": "count", "exists": "yes/no", "attribute": "text"}[prog["op"]]
            cat = qa.category if kind != "yes/no" or qa.category in ("Binary General", "Binary Existence-Based") else "Binary General"
            out.append(Question(id=f"{graph.scene}-L{start + len(out):04d}", category=cat, question=qa.question.strip(),
                                answer_type=kind, answer=truth if kind != "yes/no" else (YES if truth == YES else NO),
                                accepted=[truth] if kind == "text" else [], program=PROGRAM.validate_python(prog),
                                objects=sorted(n.id for n in graph.nodes if n.label == prog.get("class", prog.get("subject", {}).get("class"))),
                                source="lvlm"))
            stats["kept"] += 1
    return out, stats
