"""Simulated annotators: what one annotator would type into the three Label Studio fields for an object.

Starting from the object's lexicon (Lexicon), an annotator, in this order:
1. leaves out each lexicon label with probability `omission` (at least one synonym is always given);
2. on a *hard* object (a per-object draw, rate `disagreement`), with probability `confusion` names the object by one
   of its visually similar labels instead of its synonyms (the annotators then disagree on the synonyms);
3. puts each depiction / visually-similar label in another, uniformly chosen, field with probability `wrong_category`;
4. adds, per field with probability `extra`, one unrelated plausible word (from `extra_words` and the other objects'
   labels passed in `others`);
and then types each label with surface noise: a typo with probability `typo` (one adjacent swap, drop or duplicate
of a character inside a word of at least 5 characters, never touching its last letter, so that a typo never fakes a
plural), Title or UPPER case (`case`), underscores instead of spaces in a multi-word label (`underscore`), doubled or
surrounding spaces (`extra_spaces`). Labels of a field are joined with the annotator's habit (", " / "," / "; ").

Everything is drawn from the generator passed in, in a fixed order, so equal generators give equal answers;
`answer_rng(seed, scene, object_id, annotator)` seeds one per (scene, object, annotator), and `object_is_hard` draws
the per-object disagreement from its own stream, so re-runs (and any subset of objects) give the same answers.
"""
from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tiermap.formats.scene import Lexicon

EXTRA_WORDS = ("thing", "object", "stand", "holder", "cover", "panel", "frame", "decoration", "container", "device",
               "ornament", "toy", "rack", "cloth", "basket", "tray", "pad", "case", "handle", "shadow")
"""Unrelated but plausible words an annotator may add."""
FIELDS = {"synonyms": "synonyms", "depictions": "depictions", "vis_sim": "visually_similar"}
"""Lexicon category → Label Studio field name."""
SEPARATOR_HABITS = (", ", ",", ", ", "; ")

SAMPLE_LEXICONS: dict[str, Lexicon] = {
    "sofa": Lexicon(synonyms=["sofa", "couch", "settee"], depictions=["stripes"], vis_sim=["bench", "armchair"]),
    "table": Lexicon(synonyms=["table", "dining table"], vis_sim=["desk"]),
    "office chair": Lexicon(synonyms=["office chair", "chair", "swivel chair"], vis_sim=["armchair"]),
    "bookshelf": Lexicon(synonyms=["bookshelf", "shelf", "bookcase"], vis_sim=["cabinet"]),
    "kitchen counter": Lexicon(synonyms=["kitchen counter", "counter", "countertop"], vis_sim=["cabinet"]),
    "fridge": Lexicon(synonyms=["fridge", "refrigerator"], vis_sim=["wardrobe", "cabinet"]),
    "monitor": Lexicon(synonyms=["monitor", "computer screen", "screen"], vis_sim=["television"]),
    "mug": Lexicon(synonyms=["mug", "cup", "coffee mug"], depictions=["heart"], vis_sim=["glass"]),
    "plant": Lexicon(synonyms=["plant", "potted plant", "houseplant"], vis_sim=["tree", "flowers"]),
    "pillow": Lexicon(synonyms=["pillow", "cushion"], depictions=["polka dots"], vis_sim=["bag"]),
    "painting": Lexicon(synonyms=["painting", "picture"], depictions=["house", "tree"], vis_sim=["poster", "window"]),
    "trash bin": Lexicon(synonyms=["trash bin", "bin", "trash can"], vis_sim=["basket", "bucket"]),
    "whiteboard": Lexicon(synonyms=["whiteboard", "board"], depictions=["words"], vis_sim=["screen", "window"]),
    "microwave": Lexicon(synonyms=["microwave", "microwave oven"], vis_sim=["oven", "box"]),
    "wardrobe": Lexicon(synonyms=["wardrobe", "closet"], vis_sim=["cabinet"]),
    "laptop": Lexicon(synonyms=["laptop", "computer", "notebook computer"], depictions=["welcome"], vis_sim=["tablet"]),
}
"""A small self-contained catalogue for tests, benchmarks and demos (mirrors generation's library style)."""


@dataclass(frozen=True)
class NoiseProfile:
    """Rates of annotator behaviours (probabilities; see the module docstring for where each applies)."""

    omission: float = 0.2
    extra: float = 0.1
    typo: float = 0.05
    case: float = 0.1
    underscore: float = 0.05
    extra_spaces: float = 0.1
    wrong_category: float = 0.01
    disagreement: float = 0.1
    confusion: float = 0.5
    extra_words: tuple[str, ...] = EXTRA_WORDS


def _stable(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def answer_rng(seed: int, scene: str, object_id: int, annotator: int) -> np.random.Generator:
    """The generator of one (scene, object, annotator): independent of any other object or annotator."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, _stable(scene), int(object_id), 1, int(annotator)]))


def object_is_hard(seed: int, scene: str, object_id: int, profile: NoiseProfile) -> bool:
    """Whether annotators disagree on this object (its own stream, shared by all annotators)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, _stable(scene), int(object_id), 0]))
    return bool(rng.random() < profile.disagreement)


def make_typo(label: str, rng: np.random.Generator) -> str:
    """One adjacent swap, drop or duplicate inside a word of >= 5 characters (never its last letter); else unchanged."""
    words = label.split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 5]
    if not long:
        return label
    k = long[int(rng.integers(len(long)))]
    w = words[k]
    op = int(rng.integers(3))
    if op == 0:  # swap characters i, i+1 with i+1 < last
        i = int(rng.integers(len(w) - 2))
        if w[i] != w[i + 1]:
            w = w[:i] + w[i + 1] + w[i] + w[i + 2:]
            op = -1
        else:
            op = 1
    if op == 1:  # drop character i < last
        i = int(rng.integers(len(w) - 1))
        w = w[:i] + w[i + 1:]
    elif op == 2:  # duplicate character i < last
        i = int(rng.integers(len(w) - 1))
        w = w[:i] + w[i] + w[i:]
    words[k] = w
    return " ".join(words)


def _surface(label: str, rng: np.random.Generator, p: NoiseProfile) -> str:
    if rng.random() < p.typo:
        label = make_typo(label, rng)
    if rng.random() < p.case:
        label = label.title() if rng.random() < 0.5 else label.upper()
    if " " in label and rng.random() < p.underscore:
        label = label.replace(" ", "_")
    if rng.random() < p.extra_spaces:
        label = label.replace(" ", "  ") if " " in label and rng.random() < 0.5 else f" {label}  "
    return label


def simulate_answers(lexicon: Lexicon, class_name: str, annotator: int, rng: np.random.Generator,
                     profile: NoiseProfile, *, hard: bool | None = None, others: Sequence[str] = ()) -> dict[str, str]:
    """The three comma-separated text fields one annotator types: {"synonyms", "depictions", "visually_similar"}.

    `hard` says whether the object is one annotators disagree on (None: drawn here with rate `disagreement`);
    `others` are other objects' labels, candidates for unrelated extra words. An empty lexicon falls back to the
    class name as the only synonym.
    """
    p = profile
    lex = {"synonyms": list(lexicon.synonyms) or [class_name.replace("_", " ")],
           "depictions": list(lexicon.depictions), "vis_sim": list(lexicon.vis_sim)}
    fields: dict[str, list[str]] = {}
    for cat, labels in lex.items():
        draws = rng.random(len(labels))
        fields[cat] = [lbl for lbl, d in zip(labels, draws) if d >= p.omission]
    if not fields["synonyms"]:
        fields["synonyms"] = [lex["synonyms"][int(rng.integers(len(lex["synonyms"])))]]
    if hard is None:
        hard = bool(rng.random() < p.disagreement)
    if hard and lex["vis_sim"] and rng.random() < p.confusion:
        wrong = lex["vis_sim"][int(rng.integers(len(lex["vis_sim"])))]
        fields["synonyms"] = [wrong]
        fields["vis_sim"] = [v for v in fields["vis_sim"] if v != wrong]
    cats = list(FIELDS)
    moved: dict[str, list[str]] = {c: [] for c in cats}
    for cat in cats:
        for lbl in fields[cat]:
            # Annotators misfile depictions and look-alikes, not the object's own name: a synonym typed as a depiction by
            # one annotator would move to the less specific category and leave a well-named object without synonyms.
            if rng.random() < p.wrong_category and cat != "synonyms":
                choices = [c for c in cats if c != cat]
                moved[choices[int(rng.integers(2))]].append(lbl)
            else:
                moved[cat].append(lbl)
    own = {w for ws in lex.values() for w in ws}
    pool = sorted({*p.extra_words, *others} - own)
    vague = sorted(set(p.extra_words) - own)  # a stray synonym is a vague word ("thing"), not another object's name
    for cat in cats:
        words = vague if cat == "synonyms" else pool
        if words and rng.random() < p.extra:
            moved[cat].append(words[int(rng.integers(len(words)))])
    sep = SEPARATOR_HABITS[int(annotator) % len(SEPARATOR_HABITS)]
    return {FIELDS[cat]: sep.join(_surface(lbl, rng, p) for lbl in moved[cat]) for cat in cats}


def simulate_export(objects: Mapping[str, Mapping[int, tuple[str, Lexicon]]], n_annotators: int = 4,
                    profile: NoiseProfile | None = None, seed: int = 0, emails: bool = False) -> list[dict]:
    """A Label Studio JSON export (list of tasks, as `ls.projects.exports.as_json`) of simulated annotations.

    `objects` maps scene → {object_id: (class_name, lexicon)}. Annotator k (0-based) is user id k + 2 (or a
    snapshot-style user object with an email when `emails`).
    """
    profile = profile or NoiseProfile()
    tasks: list[dict] = []
    ann_id = 0
    for scene, objs in objects.items():
        scene_words = [w for _, lex in objs.values() for w in lex.synonyms]
        for oid, (cls, lex) in objs.items():
            hard = object_is_hard(seed, scene, oid, profile)
            anns = []
            for k in range(n_annotators):
                text = simulate_answers(lex, cls, k, answer_rng(seed, scene, oid, k), profile, hard=hard, others=scene_words)
                ann_id += 1
                who: int | dict = {"id": k + 2, "email": f"annotator{k + 1}@example.com"} if emails else k + 2
                anns.append({"id": ann_id, "completed_by": who, "was_cancelled": False, "ground_truth": False, "lead_time": 10.0,
                             "result": [{"from_name": name, "to_name": "crop", "type": "textarea", "value": {"text": [text[name]]}}
                                        for name in FIELDS.values()],
                             "task": len(tasks) + 1, "project": 1})
            tasks.append({"id": len(tasks) + 1, "data": {"scene": scene, "object_id": int(oid),
                                                          "image": f"/data/local-files/?d=crops/{scene}/{oid}.png"},
                          "annotations": anns, "predictions": [], "drafts": [], "meta": {}})
    return tasks


def sample_objects(n: int, scenes: Iterable[str] = ("scene_000",), seed: int = 0) -> dict[str, dict[int, tuple[str, Lexicon]]]:
    """n objects spread over the scenes, classes drawn from SAMPLE_LEXICONS (for tests and benchmarks)."""
    rng = np.random.default_rng(seed)
    names = list(SAMPLE_LEXICONS)
    scenes = list(scenes)
    out: dict[str, dict[int, tuple[str, Lexicon]]] = {s: {} for s in scenes}
    for i in range(n):
        cls = names[int(rng.integers(len(names)))]
        out[scenes[i % len(scenes)]][i // len(scenes) + 1] = (cls, SAMPLE_LEXICONS[cls])
    return out
