"""Label Studio export → tidy table → spelling → aggregation, simulated annotators, and SAT clutter (no server)."""
from __future__ import annotations

import copy
import functools
import json
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from rapidfuzz.distance import OSA
from scipy.spatial.transform import Rotation

from annotation.aggregate import aggregate_dataset_with_report, synonym_keys
from annotation.clutter import (
    box_iou,
    boxes_from_cloud,
    boxes_overlap,
    clutter_pairs,
    clutter_pairs_exact,
)
from annotation.noise import (
    SAMPLE_LEXICONS,
    NoiseProfile,
    answer_rng,
    make_typo,
    sample_objects,
    simulate_answers,
    simulate_export,
)
from annotation.normalise import normalise_series
from annotation.spelling import is_variant, spelling_corrections
from annotation.tidy import tidy_export
from tiermap.formats.base import SchemaError
from tiermap.formats.labels import LABEL_COLUMNS, validate_labels_frame
from tiermap.formats.labelstudio import read_ls_export

EYE = np.eye(3)
CLEAN = NoiseProfile(omission=0, extra=0, typo=0, case=0, underscore=0, extra_spaces=0, wrong_category=0, disagreement=0,
                     confusion=0)
"""No noise at all: every annotator types the lexicon exactly."""


# ---------------------------------------------------------------- tidy export
def textarea(name: str, *texts: object) -> dict:
    return {"from_name": name, "to_name": "crop", "type": "textarea", "value": {"text": list(texts)}}


def annotation(who: object, *results: dict, cancelled: bool = False) -> dict:
    return {"id": 1, "completed_by": who, "result": list(results), "was_cancelled": cancelled, "ground_truth": False,
            "lead_time": 12.5, "created_at": "2025-01-01T00:00:00Z", "task": 1, "project": 2}


EXPORT = [
    {"id": 1, "data": {"image": "/data/local-files/?d=crops/a.png", "scene": "room0", "object_id": 3},
     "annotations": [
         annotation(2, textarea("synonyms", "Sofa, couch;settee\nCoffee_Table"), textarea("depictions", "Stripes"),
                    textarea("visually_similar", "bench,,  Arm  Chair , bench"),
                    {"from_name": "quality", "to_name": "crop", "type": "choices", "value": {"choices": ["good"]}}),
         annotation({"id": 5, "email": "ann@example.com", "first_name": "Ann"}, textarea("synonyms", "sofa", "SOFA.")),
         annotation(6, textarea("synonyms", "cancelled"), cancelled=True),
     ], "predictions": [1], "drafts": [], "meta": {}},
    {"id": 2, "data": {"scene_id": "room1", "object_id": "7"}, "annotations": [annotation(2, textarea("synonyms", ""))]},
    {"id": 3, "data": {"scene": "room1", "object_id": 8}, "annotations": []},
]


def test_tidy_export_exact_rows() -> None:
    labels, flagged = tidy_export(EXPORT, "export.json")
    expected = pd.DataFrame([
        ("room0", 3, "user2", "synonyms", "sofa", "Sofa"),
        ("room0", 3, "user2", "synonyms", "couch", "couch"),
        ("room0", 3, "user2", "synonyms", "settee", "settee"),
        ("room0", 3, "user2", "synonyms", "coffee table", "Coffee_Table"),
        ("room0", 3, "user2", "depictions", "stripes", "Stripes"),
        ("room0", 3, "user2", "vis_sim", "bench", "bench"),
        ("room0", 3, "user2", "vis_sim", "arm chair", "Arm  Chair"),
        ("room0", 3, "ann@example.com", "synonyms", "sofa", "sofa"),  # "SOFA." is the same label again: kept once
    ], columns=list(LABEL_COLUMNS)).assign(annotation_id=1, created_at="2025-01-01T00:00:00Z", updated_at="")
    pd.testing.assert_frame_equal(labels, validate_labels_frame(expected))  # provenance: annotation id and times
    assert flagged.empty and list(flagged.columns) == [*LABEL_COLUMNS, "reason"]


def test_tidy_export_flags_invalid_labels() -> None:
    long = "x" * 500
    tasks = [{"data": {"scene": "s", "object_id": 1}, "annotations": [annotation(
        3, textarea("synonyms", f"<b>mug</b>, cup, coffee mug 🙂, {long}, _, ???, N/A, mug &amp; cup, café"),
        textarea("visually_similar", "glass\u200b, jar"))]}]
    labels, flagged = tidy_export(tasks, "e.json")
    assert labels["label"].tolist() == ["cup", "café", "jar"]
    assert list(zip(flagged["raw_label"], flagged["reason"])) == [
        ("<b>mug</b>", "html markup"), ("coffee mug 🙂", "emoji or non-text characters"),
        (long, "longer than 64 characters"), ("_", "empty after normalisation"), ("???", "no letters or digits"),
        ("N/A", "placeholder, not a label"), ("mug &amp; cup", "html markup"),
        ("glass\u200b", "emoji or non-text characters")]
    assert flagged["category"].tolist() == ["synonyms"] * 7 + ["vis_sim"]
    assert set(flagged["annotator"]) == {"user3"} and set(flagged["object_id"]) == {1}


def _mutate(path: list, value: object, delete: bool = False) -> list:
    tasks = copy.deepcopy(EXPORT)
    node = tasks
    for p in path[:-1]:
        node = node[p]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return tasks


@pytest.mark.parametrize("tasks, field", [
    ({"tasks": EXPORT}, "<root>"),
    (_mutate([1, "data", "object_id"], None, delete=True), "[1].data.object_id"),
    (_mutate([0, "data", "object_id"], "obj_0003"), "[0].data.object_id"),
    (_mutate([0, "data", "scene"], None, delete=True), "[0].data.scene"),
    (_mutate([0, "annotations", 0, "result", 1, "value", "text"], 42), "[0].annotations[0].result[1].value.text"),
    (_mutate([0, "annotations", 0, "result", 1, "value", "text"], [{"t": "x"}]), "[0].annotations[0].result[1].value.text[0]"),
    (_mutate([0, "annotations", 0, "result", 1, "value"], {}), "[0].annotations[0].result[1].value.text"),
    (_mutate([0, "annotations", 1, "result"], None, delete=True), "[0].annotations[1].result"),
    (_mutate([0, "annotations", 1, "completed_by"], "ann"), "[0].annotations[1].completed_by"),
    (_mutate([2, "annotations"], "none"), "[2].annotations"),
    (_mutate([2], "task"), "[2]"),
])
def test_tidy_export_malformed_names_the_field(tasks: object, field: str) -> None:
    with pytest.raises(SchemaError) as err:
        tidy_export(tasks, "labels/raw/export_1.json")  # type: ignore[arg-type]
    assert err.value.field == field
    assert str(err.value).startswith(f"labels/raw/export_1.json: field '{field}': expected ")
    assert "\n" not in str(err.value)


def test_read_ls_export_file(tmp_path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(EXPORT))
    tasks = read_ls_export(path)
    assert [t.data.scene for t in tasks] == ["room0", "room1", "room1"] and tasks[1].data.object_id == 7
    assert tasks[0].annotations[1].annotator == "ann@example.com" and tasks[0].data.model_extra["image"].endswith("a.png")
    path.write_text(json.dumps(_mutate([0, "annotations", 0, "result", 0, "value", "text"], 3)))
    with pytest.raises(SchemaError, match=r"export\.json: field '\[0\]\.annotations\[0\]\.result\[0\]\.value\.text'"):
        read_ls_export(path)


def test_normalise_series() -> None:
    raw = ["  Flower_Vase ", "Polka   Dots", "\"Mug.\"", "ＣＵＰ", "coffee\tmug", "T-Shirt"]
    assert normalise_series(pd.Series(raw, dtype=object)).tolist() == [
        "flower vase", "polka dots", "mug", "cup", "coffee mug", "t-shirt"]


# ---------------------------------------------------------------- spelling
@pytest.mark.parametrize("a, b, variant", [
    ("shelf", "shelves", True), ("box", "boxes", True), ("berry", "berries", True), ("knife", "knives", True),
    ("chair", "chairs", True), ("counter top", "countertop", True), ("counter tops", "countertop", True),
    ("cup holder", "cups holder", True), ("t-shirt", "tshirt", True),
    ("chair", "chiar", False), ("glass", "glasss", False), ("table", "cable", False),
])
def test_is_variant(a: str, b: str, variant: bool) -> None:
    assert is_variant(a, b) is variant and is_variant(b, a) is variant


def test_spelling_rule() -> None:
    labels = (["chair"] * 3 + ["chiar"]                       # typo of a label used 3 times: corrected
                       + ["shelf"] * 2 + ["shelves"]                    # plural used once: kept
                       + ["countertop"] * 2 + ["counter top"]           # spacing variant used once: kept
                       + ["cup"] * 4 + ["cpu"]                          # 3 characters: never corrected
                       + ["television"] * 2 + ["telivison"]             # 9 characters: distance 2 allowed
                       + ["wardrobe"] * 2 + ["wradorbe"]                # 8 characters: distance 2 is too far
                       + ["lamp"] * 5 + ["lamb"]                        # known word: never corrected
                       + ["cushion", "cusion"])                         # neither is trusted (both used once)
    assert reference_osa("chair", "chiar") == 1 and reference_osa("television", "telivison") == 2
    assert reference_osa("wardrobe", "wradorbe") == 2
    assert spelling_corrections(labels, vocabulary=["lamb"]) == {"chiar": "chair", "telivison": "television"}


def test_repeated_typo_goes_to_known_word_only() -> None:
    counts = {"table": 10, "atble": 3}
    assert spelling_corrections(["table", "atble"], (), counts) == {}  # no known words: a label used 3 times stays
    assert spelling_corrections(["table", "atble"], ["table"], counts) == {"atble": "table"}
    assert spelling_corrections(["table", "atble"], ["table"], {"table": 2, "atble": 3}) == {}  # not more frequent
    # a typo of a repeated typo ends at the known word, not at the intermediate label
    counts = {"television": 10, "telivision": 3, "telivisoin": 1}
    assert spelling_corrections(list(counts), ["television"], counts) == {"telivision": "television", "telivisoin": "television"}
    # ties: the known word wins over a more frequent unknown one at the same distance
    assert spelling_corrections(["bowl", "bowk", "book"], ["book"], {"bowl": 9, "bowk": 1, "book": 0}) == {"bowk": "book"}


@functools.cache
def reference_osa(a: str, b: str) -> int:
    """Slow textbook optimal-string-alignment distance (full matrix), the reference for the rapidfuzz one."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def reference_corrections(labels: list[str], vocabulary: list[str], counts: dict[str, int]) -> tuple[dict[str, str], int]:
    """The module rule by brute force over every (label, target) pair; also the number of labels with tied targets."""
    known = set(vocabulary)
    trusted = {w for w in set(counts) | known if (w in known or counts.get(w, 0) >= 2) and len(w) >= 4}
    out, ties = {}, 0
    for w in sorted(set(labels)):
        limit = 0 if len(w) < 4 else 1 if len(w) <= 8 else 2
        rare = counts.get(w, 0) <= 1
        if w in known or not limit or not (known or rare):
            continue
        allowed = [t for t in trusted if t != w and abs(len(t) - len(w)) <= limit and not is_variant(w, t)
                   and (rare or (t in known and counts.get(t, 0) > counts.get(w, 0)))]
        keys = sorted(k for t in allowed if (k := (reference_osa(w, t), t not in known, -counts.get(t, 0), t))[0] <= limit)
        if keys:
            out[w] = keys[0][3]
            ties += len(keys) > 1 and keys[1][0] == keys[0][0]
    return {w: out.get(t, t) for w, t in out.items()}, ties


def test_spelling_matches_brute_force_reference() -> None:
    """rapidfuzz's distance and candidate search give the corrections of a brute-force search (seeded noisy labels)."""
    rng = np.random.default_rng(12)
    vocab = sorted({w for lx in SAMPLE_LEXICONS.values() for w in (*lx.synonyms, *lx.depictions, *lx.vis_sim)} | set(NoiseProfile().extra_words))
    labels = []
    for _ in range(800):
        w = vocab[int(rng.integers(len(vocab)))]
        r = rng.random()
        if r < 0.6:
            w = make_typo(make_typo(w, rng) if r < 0.15 else w, rng)
        elif r < 0.75:  # any single substitution or insertion, last letter included
            i, c = int(rng.integers(len(w))), "abcdeilnorst "[int(rng.integers(13))]
            w = w[:i] + c + w[i + 1:] if rng.random() < 0.5 else w[:i] + c + w[i:]
        labels.append(w)
    pairs = [(labels[int(rng.integers(len(labels)))], vocab[int(rng.integers(len(vocab)))]) for _ in range(1000)]
    for a, b in pairs + list(zip(labels, labels[1:])):
        want = reference_osa(a, b)
        assert OSA.distance(a, b) == want  # the module's distance: optimal string alignment
        assert OSA.distance(a, b, score_cutoff=1) == min(want, 2) and OSA.distance(a, b, score_cutoff=2) == min(want, 3)
    uses = dict(Counter(labels))
    skewed = {w: int(rng.integers(0, 5)) for w in sorted(uses)}
    total = 0
    for vocabulary, counts in [(vocab, uses), (vocab[::2], uses), ([], uses), (vocab[1::2], skewed)]:
        want, ties = reference_corrections(labels, vocabulary, counts)
        assert spelling_corrections(labels if counts is uses else sorted(uses), vocabulary, None if counts is uses else counts) == want
        assert ties > 0  # tie-breaking between targets at the same distance is exercised
        total += len(want)
    assert total > 300

# ---------------------------------------------------------------- aggregation
def aggregate(labels: pd.DataFrame, scenes: dict[str, dict[int, str]]) -> dict:
    """gt_categories per scene (the report left out)."""
    return aggregate_dataset_with_report(labels, scenes)[0]


def frame(rows: list[tuple], scene: str = "s") -> pd.DataFrame:
    return pd.DataFrame([{"scene": scene, "object_id": o, "annotator": a, "category": c, "label": lbl, "raw_label": lbl}
                         for o, a, c, lbl in rows])


def test_aggregate_union_and_least_specific() -> None:
    df = frame([
        (1, "a1", "synonyms", "Mug"), (1, "a1", "depictions", "heart"), (1, "a2", "synonyms", "cup"),
        (1, "a2", "synonyms", "mugs"), (1, "a2", "vis_sim", "heart"), (1, "a3", "synonyms", "mug"), (1, "a3", "depictions", "cup"),
        (1, "a3", "vis_sim", "glass"), (1, "a4", "synonyms", "coffee_mug"), (1, "a4", "synonyms", "coffee mugs"),
    ])
    s = aggregate(df, {"s": {1: "mug"}})["s"].dataset.samples[0]
    a = s.labels.image_attributes
    # heart: depictions (a1) vs vis_sim (a2) -> vis_sim; cup: synonyms (a2) vs depictions (a3) -> depictions
    # 'mugs' is a plural variant: kept as its own label
    assert a.synonyms == ["coffee mug", "coffee mugs", "mug", "mugs"] and a.depictions == ["cup"] and a.vis_sim == ["glass", "heart"]
    # mug/mugs typed as a synonym by a1, a2, a3: 3 of 4 > half ('coffee mug' is another key)
    assert s.name == "s_mug_1" and s.labels.flag is None
    without_a2_mugs = df.drop(index=3)
    assert aggregate(without_a2_mugs, {"s": {1: "mug"}})["s"].dataset.samples[0].labels.flag == "ambiguous"  # 2 of 4


@pytest.mark.parametrize("rows, ambiguous", [
    # 4 annotators: 3 share 'mug' -> fine; only 2 of 4 share a synonym -> ambiguous
    ([("a1", "synonyms", "mug"), ("a2", "synonyms", "mug"), ("a3", "synonyms", "mug"), ("a4", "synonyms", "vase")], False),
    ([("a1", "synonyms", "mug"), ("a2", "synonyms", "mug"), ("a3", "synonyms", "vase"), ("a4", "synonyms", "jar")], True),
    # an annotator who gave no synonym still counts in N (here 2 of 3 -> fine, 1 of 2 -> ambiguous)
    ([("a1", "synonyms", "mug"), ("a2", "synonyms", "mug"), ("a3", "vis_sim", "vase")], False),
    ([("a1", "synonyms", "mug"), ("a2", "vis_sim", "vase")], True),
    # two annotators: they must share a synonym
    ([("a1", "synonyms", "mug"), ("a1", "synonyms", "cup"), ("a2", "synonyms", "cup")], False),
    ([("a1", "synonyms", "mug"), ("a2", "synonyms", "cup")], True),
    # plural and spacing variants agree
    ([("a1", "synonyms", "book shelves"), ("a2", "synonyms", "bookshelf"), ("a3", "synonyms", "shelf")], False),
    # a single annotator is not ambiguous, unless they gave no synonym
    ([("a1", "synonyms", "mug")], False),
    ([("a1", "vis_sim", "vase")], True),
    # what was typed as a synonym counts, even when rule 4 then moves it to vis_sim ('cup' stays a synonym)
    ([("a1", "synonyms", "mug"), ("a1", "synonyms", "cup"), ("a2", "synonyms", "mug"), ("a3", "vis_sim", "mug")], False),
    # ... but an object left without any synonym is always flagged
    ([("a1", "synonyms", "mug"), ("a2", "synonyms", "mug"), ("a3", "vis_sim", "mug")], True),
])
def test_ambiguous_rule(rows: list[tuple], ambiguous: bool) -> None:
    gt = aggregate(frame([(1, *r) for r in rows]), {"s": {1: "x"}})["s"]
    assert (gt.dataset.samples[0].labels.flag == "ambiguous") is ambiguous


def test_synonym_keys() -> None:
    assert set(synonym_keys("book shelves")) & set(synonym_keys("bookshelf")) == {"bookshelf"}
    assert set(synonym_keys("houses")) & set(synonym_keys("house")) == {"house"}
    assert not set(synonym_keys("mug")) & set(synonym_keys("mugs holder"))


def test_aggregate_dataset_spelling_report_and_variants() -> None:
    df = pd.concat([
        frame([(1, "a1", "synonyms", "wardrobe"), (1, "a2", "synonyms", "wardorbe"), (1, "a3", "synonyms", "closets"),
               (2, "a1", "synonyms", "shelf"), (2, "a2", "synonyms", "shelves"), (2, "a3", "synonyms", "Counter_Top"),
               (2, "a3", "synonyms", "countertop")], "s1"),
        frame([(5, "a1", "synonyms", "wardrobe")], "s2"),
    ], ignore_index=True)
    gts, report = aggregate_dataset_with_report(df, {"s1": {1: "wardrobe", 2: "shelf"}, "s3": {}}, vocabulary=["closet"])
    assert sorted(gts) == ["s1", "s2", "s3"] and gts["s3"].dataset.samples == []
    by = gts["s1"].by_id()
    assert by[1].labels.image_attributes.synonyms == ["closets", "wardrobe"]  # 'closets' is a plural of a known word: kept
    assert by[2].labels.image_attributes.synonyms == ["counter top", "countertop", "shelf", "shelves"]
    assert report.to_dict("records") == [{"label": "wardorbe", "corrected": "wardrobe", "uses": 1, "rows": 1}]
    assert gts["s2"].dataset.samples[0].name == "s2_object_5"


# ---------------------------------------------------------------- simulated annotators
def test_simulated_answers_deterministic_per_object_and_annotator() -> None:
    objs = sample_objects(30, scenes=["a", "b"], seed=3)
    first = simulate_export(objs, 4, NoiseProfile(), seed=7)
    assert simulate_export(objs, 4, NoiseProfile(), seed=7) == first
    assert simulate_export(objs, 4, NoiseProfile(), seed=8) != first
    # an object's answers depend on its scene, id and annotator: not on other scenes or on the order of objects
    reordered = {"b": dict(reversed(list(objs["b"].items())))}
    by_key = {(t["data"]["scene"], t["data"]["object_id"]): t["annotations"] for t in first}
    again = simulate_export(reordered, 4, NoiseProfile(), seed=7)
    assert len(again) == len(objs["b"])
    for t in again:
        for k in range(4):
            assert t["annotations"][k]["result"] == by_key[("b", t["data"]["object_id"])][k]["result"]
    lex = SAMPLE_LEXICONS["sofa"]
    one = simulate_answers(lex, "sofa", 1, answer_rng(0, "a", 1, 1), NoiseProfile())
    assert one == simulate_answers(lex, "sofa", 1, answer_rng(0, "a", 1, 1), NoiseProfile())
    assert set(one) == {"synonyms", "depictions", "visually_similar"}
    assert simulate_answers(lex, "sofa", 0, answer_rng(0, "a", 1, 0), CLEAN) == {
        "synonyms": "sofa, couch, settee", "depictions": "stripes", "visually_similar": "bench, armchair"}


def test_make_typo() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        t = make_typo("coffee mug", rng)
        assert t != "coffee mug" and t.endswith("e mug") and reference_osa(t, "coffee mug") == 1
    assert make_typo("mug cup", rng) == "mug cup"  # no word of 5 characters


def _recovery(profile: NoiseProfile, n: int = 300, seed: int = 0) -> tuple[float, dict, pd.DataFrame, pd.DataFrame]:
    objs = sample_objects(n, scenes=["s0", "s1", "s2"], seed=seed)
    labels, flagged = tidy_export(simulate_export(objs, 4, profile, seed=seed), "sim.json")
    vocab = [w for lx in SAMPLE_LEXICONS.values() for ws in (lx.synonyms, lx.depictions, lx.vis_sim) for w in ws]
    gts, report = aggregate_dataset_with_report(labels, {s: {o: c for o, (c, _) in d.items()} for s, d in objs.items()}, vocab)
    hits = [w in gts[s].by_id()[o].labels.image_attributes.synonyms for s, d in objs.items() for o, (_, lx) in d.items()
            for w in lx.synonyms]
    return float(np.mean(hits)), gts, report, labels


def test_noisy_annotators_recover_the_lexicon() -> None:
    rate, gts, _, _ = _recovery(NoiseProfile())
    assert rate >= 0.90
    flags = [s.labels.flag for g in gts.values() for s in g.dataset.samples]
    assert 0 < flags.count("ambiguous") < 0.2 * len(flags)
    clean_rate, clean, _, _ = _recovery(CLEAN, n=60)
    assert clean_rate == 1.0 and all(s.labels.flag is None for g in clean.values() for s in g.dataset.samples)


def test_typos_are_corrected() -> None:
    _, gts, report, labels = _recovery(replace(CLEAN, typo=0.3), n=200, seed=1)
    lexicon = {w for lx in SAMPLE_LEXICONS.values() for ws in (lx.synonyms, lx.depictions, lx.vis_sim) for w in ws}
    typos = set(labels["label"]) - lexicon
    assert len(typos) > 50
    assert set(report["label"]) == typos and set(report["corrected"]) <= lexicon
    assert {lbl for g in gts.values() for s in g.dataset.samples for lbl in s.labels.image_attributes.synonyms} <= lexicon


# ---------------------------------------------------------------- clutter
def _rot(rng: np.random.Generator) -> np.ndarray:
    return Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()


def _random_pair(kind: str, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    Ra, ea, ca = _rot(rng), rng.uniform(0.05, 2.0, 3), rng.uniform(-1, 1, 3)
    k = int(rng.integers(3))
    if kind == "random":
        return (ca, ea, Ra), (ca + rng.uniform(-2, 2, 3), rng.uniform(0.05, 2.0, 3), _rot(rng))
    if kind in ("touching", "near"):  # B on a face of A, turned about that face's normal (its extent along it is kept)
        axis = np.zeros(3)
        axis[k] = 1.0
        Rb = Ra @ Rotation.from_rotvec(axis * rng.uniform(0, np.pi)).as_matrix() if rng.random() < 0.5 else Ra.copy()
        eb = rng.uniform(0.05, 2.0, 3)
        off = np.zeros(3)
        off[k] = rng.choice([-1, 1]) * ((ea[k] + eb[k]) / 2 + (0 if kind == "touching" else rng.choice([-1, 1]) * 1e-4))
        off[(k + 1) % 3] = rng.uniform(-0.4, 0.4) * ea[(k + 1) % 3]
        return (ca, ea, Ra), (ca + Ra @ off, eb, Rb)
    if kind == "nested":
        return (ca, ea, Ra), (ca + Ra @ (rng.uniform(-0.1, 0.1, 3) * ea), ea * rng.uniform(0.1, 0.4), Ra @ Rotation.from_euler("z", rng.uniform(0, 0.3)).as_matrix())
    if kind == "identical":
        return (ca, ea, Ra), (ca.copy(), ea.copy(), Ra.copy())
    eb = rng.uniform(0.05, 2.0, 3)  # flat: no volume, never clutter
    eb[k] = 0.0
    return (ca, ea, Ra), (ca + rng.uniform(-0.3, 0.3, 3), eb, _rot(rng))


def test_sat_agrees_with_exact_iou() -> None:
    rng = np.random.default_rng(42)
    kinds = ["random"] * 1100 + ["touching"] * 400 + ["near"] * 250 + ["nested"] * 120 + ["identical"] * 50 + ["flat"] * 100
    pairs = [_random_pair(k, rng) for k in kinds]
    A, B = zip(*pairs)
    sat = boxes_overlap(*(np.array([box[i] for box in A]) for i in range(3)), *(np.array([box[i] for box in B]) for i in range(3)))
    exact = np.array([box_iou(a, b) > 0 for a, b in pairs])
    assert len(pairs) >= 2000 and (sat == exact).all()
    by_kind = {k: sat[np.array(kinds) == k] for k in set(kinds)}
    assert not by_kind["touching"].any() and not by_kind["flat"].any()
    assert by_kind["nested"].all() and by_kind["identical"].all() and 0 < by_kind["near"].mean() < 1
    assert 0.1 < by_kind["random"].mean() < 0.5


def test_touching_boxes_are_not_clutter() -> None:
    c45 = Rotation.from_euler("z", 45, degrees=True).as_matrix()
    boxes = {1: (np.zeros(3), np.ones(3), EYE),
             2: (np.array([1.0, 0, 0]), np.ones(3), EYE),                      # shares a face with 1
             3: (np.array([1.0, 1.0, 0]), np.ones(3), EYE),                    # shares an edge with 1, a face with 2
             4: (np.array([-1.0, -1.0, -1.0]), np.ones(3), EYE),               # shares a corner with 1
             5: (np.array([0.5 + np.sqrt(0.5), 0, 2.0]), np.ones(3), c45),     # rotated 45°: touches 6 along an edge
             6: (np.array([0.0, 0, 2.0]), np.ones(3), EYE),
             7: (np.array([0.0, 0, 0.0]), np.array([0.5, 0.5, 0.0]), EYE)}     # flat, inside 1
    assert box_iou(boxes[5], boxes[6]) == 0.0 and box_iou(boxes[1], boxes[7]) == 0.0
    assert clutter_pairs(boxes) == clutter_pairs_exact(boxes) == {i: [] for i in range(1, 8)}
    boxes[5] = (np.array([0.5 + np.sqrt(0.5) - 0.01, 0, 2.0]), np.ones(3), c45)
    assert clutter_pairs(boxes)[5] == [6] and clutter_pairs(boxes)[6] == [5]
    assert clutter_pairs({}) == {}


def test_clutter_pairs_matches_exact_on_a_scene() -> None:
    rng = np.random.default_rng(5)
    boxes = {}
    for i in range(1, 121):
        R = Rotation.from_euler("z", rng.uniform(0, np.pi)).as_matrix() if rng.random() < 0.7 else _rot(rng)
        boxes[i * 3] = (rng.uniform(0, 4, 3), rng.uniform(0.1, 1.0, 3), R)
    fast = clutter_pairs(boxes)
    assert fast == clutter_pairs_exact(boxes)
    assert sum(map(len, fast.values())) > 40 and all(i in fast[j] for i, js in fast.items() for j in js)
    # the sweep broad phase misses no pair: compare with a brute-force O(N²) axis-aligned test
    ids = sorted(boxes)
    lo = np.array([boxes[i][0] - np.abs(boxes[i][2]) @ boxes[i][1] / 2 for i in ids])
    hi = np.array([boxes[i][0] + np.abs(boxes[i][2]) @ boxes[i][1] / 2 for i in ids])
    aabb = np.all((lo[:, None] < hi[None]) & (lo[None] < hi[:, None]), axis=2)
    for a, i in enumerate(ids):
        assert set(fast[i]) <= {ids[b] for b in np.flatnonzero(aabb[a]) if b != a}


def test_boxes_from_cloud() -> None:
    rng = np.random.default_rng(0)
    R = Rotation.from_euler("z", 30, degrees=True).as_matrix()
    # the 8 corners of a 2 x 1 x 0.5 box plus points inside it: the hull (whose vertices Open3D's PCA uses) is the box
    corners = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
    cube = np.concatenate([corners, rng.uniform(-0.45, 0.45, (3000, 3))]) * [2.0, 1.0, 0.5] @ R.T + [1, 2, 3]
    flat = np.column_stack([rng.uniform(0, 1, (50, 2)), np.full(50, 0.7)])  # planar: Qhull fails, PCA box instead
    few = np.array([[5.0, 5, 5], [5.2, 5, 5.1]])
    points = np.concatenate([cube, flat, few])
    ids = np.repeat([4, 9, 2], [len(cube), len(flat), len(few)])
    order = rng.permutation(len(ids))
    boxes = boxes_from_cloud(points[order], ids[order])
    assert sorted(boxes) == [2, 4, 9]
    sorted_boxes = boxes_from_cloud(points, ids) if np.all(np.diff(ids) >= 0) else boxes_from_cloud(points[np.argsort(ids, kind="stable")], np.sort(ids))
    for k in boxes:
        for x, y in zip(boxes[k], sorted_boxes[k]):
            np.testing.assert_allclose(x, y, atol=1e-9)
    c, e, Rb = boxes[4]
    np.testing.assert_allclose(c, [1, 2, 3], atol=1e-9)
    np.testing.assert_allclose(sorted(e), [0.5, 1.0, 2.0], atol=1e-9)
    assert abs(abs(Rb[:, int(np.argmax(e))] @ R[:, 0]) - 1) < 1e-9
    _, e9, R9 = boxes[9]
    assert min(e9) < 1e-9 and np.allclose(R9.T @ R9, EYE) and np.linalg.det(R9) > 0
    np.testing.assert_allclose(boxes[2][0], [5.1, 5, 5.05])


def _flaky_label_studio(stored_on_failure: bool):  # type: ignore[no-untyped-def]
    """A local HTTP endpoint whose first annotation POST fails with 500 (stored or not): fault injection for the client."""
    import json as _json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    state = {"posts": 0, "annotations": []}

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):  # type: ignore[no-untyped-def]
            pass

        def _send(self, code: int, body) -> None:  # type: ignore[no-untyped-def]
            data = _json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.startswith("/api/current-user/whoami"):
                return self._send(200, {"id": 7})
            return self._send(200, state["annotations"])

        def do_POST(self) -> None:
            body = _json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["posts"] += 1
            if state["posts"] == 1:
                if stored_on_failure:
                    state["annotations"].append({"id": 1, "completed_by": 7, "result": body["result"]})
                return self._send(500, {"detail": "database is locked"})
            state["annotations"].append({"id": len(state["annotations"]) + 1, "completed_by": 7, "result": body["result"]})
            return self._send(201, state["annotations"][-1])

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, state


@pytest.mark.parametrize("stored_on_failure", [False, True])
def test_annotate_retries_server_errors_without_duplicates(stored_on_failure: bool) -> None:
    from annotation.ls_client import AnnotatorSession

    srv, state = _flaky_label_studio(stored_on_failure)
    try:
        ls = AnnotatorSession(f"http://127.0.0.1:{srv.server_address[1]}")
        out = ls.annotate(3, [{"from_name": "synonyms"}])
        assert len(state["annotations"]) == 1 and out["completed_by"] == 7
        assert state["posts"] == (1 if stored_on_failure else 2)
    finally:
        srv.shutdown()
