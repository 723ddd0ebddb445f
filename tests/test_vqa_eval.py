"""VQA answering and scoring on a tiny hand-made scene: two chairs, a table with a mug on it, a red sofa."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tiermap.app.cli import app
from tiermap.formats.base import SchemaError
from tiermap.formats.scene_graph import GraphNode, SceneGraph, write_scene_graph
from tiermap.formats.vqa import (
    CATEGORIES,
    EVALUATED_FIELDS,
    FUNCTIONAL,
    METRICS_COLUMNS,
    AnswerRecord,
    AnswerSet,
    QuestionSet,
    write_answers,
    write_questions,
)

SCENE = "tiny0"


def node(i: int, label: str, center, extent, colors=(), material=None) -> GraphNode:  # type: ignore[no-untyped-def]
    return GraphNode(id=i, label=label, center=list(center), extent=list(extent), colors=list(colors), material=material,
                     room="living")


def gt_graph(rename: dict[str, str] | None = None) -> SceneGraph:
    """Chairs 1 and 2, table 3, mug 4 standing on the table, red sofa 5 (z up, metres)."""
    r = rename or {}
    nodes = [node(1, "chair", (0, 0, 0.45), (0.5, 0.5, 0.9), ["brown"], "wood"),
             node(2, "chair", (3, 0, 0.45), (0.5, 0.5, 0.9), ["brown"], "wood"),
             node(3, "table", (1.5, 2, 0.375), (1.2, 0.8, 0.75), ["white"], "wood"),
             node(4, "mug", (1.5, 2, 0.8), (0.1, 0.1, 0.1), ["blue"], "ceramic"),
             node(5, "sofa", (5, 3, 0.4), (2, 0.9, 0.8), ["red"], "fabric")]
    for n in nodes:
        n.label = r.get(n.label, n.label)
    return SceneGraph(scene=SCENE, source="gt" if not r else "method", nodes=nodes)


def q(i: int, category: str, question: str, answer_type: str, answer: str, program: dict, accepted=()) -> dict:  # type: ignore[no-untyped-def]
    return {"id": f"q{i}", "category": category, "question": question, "answer_type": answer_type, "answer": answer,
            "program": program, "accepted": list(accepted)}


def ex(cls: str, **kw: str) -> dict:
    return {"op": "exists", "class": cls, **kw}


BG, BEB, BL, MEAS, ATTR, SPAT, COMP = ("Binary General", "Binary Existence-Based", "Binary Logical", "Measurement",
                                       "Object Attributes", "Object Relations – Spatial", "Comparison")
QUESTIONS = [
    q(1, BG, "Is there a chair?", "yes/no", "Yes", ex("chair")),
    q(2, BG, "Is there a red sofa?", "yes/no", "Yes", ex("sofa", color="red")),
    q(3, BG, "Is the mug on the table?", "yes/no", "Yes",
      {"op": "relation", "rel": "on", "subject": {"class": "mug"}, "object": {"class": "table"}}),
    q(4, BEB, "Is there a bed?", "yes/no", "No", ex("bed")),
    q(5, BEB, "Is there a tv?", "yes/no", "No", ex("tv")),
    q(6, BL, "Is there a chair and a bed?", "yes/no", "No", {"op": "and", "args": [ex("chair"), ex("bed")]}),
    q(7, BL, "Is there a mug or a bed?", "yes/no", "Yes", {"op": "or", "args": [ex("mug"), ex("bed")]}),
    q(8, MEAS, "How many chairs are there?", "count", "2", {"op": "count", "class": "chair"}),
    q(9, MEAS, "How many objects are on the table?", "count", "1",
      {"op": "count_related", "rel": "on", "object": {"class": "table"}}),
    q(10, ATTR, "What colour is the sofa?", "text", "red", {"op": "attribute", "attr": "color", "subject": {"class": "sofa"}}),
    q(11, ATTR, "What is the mug made of?", "text", "ceramic",
      {"op": "attribute", "attr": "material", "subject": {"class": "mug"}}),
    q(12, FUNCTIONAL, "What can one sit on?", "text", "sofa", {"op": "afford", "affordance": "sit on"}, ["couch"]),
    q(13, SPAT, "What is the mug on?", "text", "table", {"op": "related", "rel": "on", "subject": {"class": "mug"}}),
    q(14, SPAT, "Is the mug on a chair?", "yes/no", "No",
      {"op": "relation", "rel": "on", "subject": {"class": "mug"}, "object": {"class": "chair"}}),
    q(15, COMP, "Are there more chairs than tables?", "yes/no", "Yes", {"op": "compare_count", "cmp": "more", "a": "chair", "b": "table"}),
    q(16, COMP, "Which is larger, the table or the mug?", "text", "table",
      {"op": "compare_size", "dim": "larger", "a": {"class": "table"}, "b": {"class": "mug"}}),
    q(17, COMP, "Which is taller, the chair or the table?", "text", "chair",
      {"op": "compare_size", "dim": "taller", "a": {"class": "chair"}, "b": {"class": "table"}}),
]


def question_set() -> QuestionSet:
    return QuestionSet.model_validate({"scene": SCENE, "seed": 0, "questions": QUESTIONS})


@pytest.fixture(scope="module")
def encoder():  # type: ignore[no-untyped-def]
    from evaluation.vqa_answer import minilm_encoder

    return minilm_encoder()


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    """vqa_questions.json and the GT scene_graph.json on disk."""
    write_questions(question_set(), tmp_path / "vqa_questions.json")
    write_scene_graph(gt_graph(), tmp_path / "scene_graph.json")
    return {"questions": tmp_path / "vqa_questions.json", "graph": tmp_path / "scene_graph.json", "tmp": tmp_path}


def answers_file(path: Path, answers: dict[str, str | None], condition: str = "baseline", method: str = "m",
                 scene: str = SCENE) -> Path:
    write_answers(AnswerSet(scene=scene, method=method, condition=condition, answerer="test",
                            answers=[AnswerRecord(id=k, answer=v) for k, v in answers.items()]), path)
    return path


GT = {d["id"]: d["answer"] for d in QUESTIONS}


# ---------------------------------------------------------------- normalisation
@pytest.mark.parametrize(("raw", "norm"), [
    ("Answer: No.", "no"), ("Yes!", "yes"), ("yes", "yes"), ("  YES  ", "yes"), ("No, there is none.", "no"),
    ("The answer is yes", "yes"), ("True", "yes"), ("two", "2"), ("2.0", "2"), ("Twenty", "20"), ("3", "3"),
    ("The Table", "table"), ("a coffee-mug", "coffee mug"), ("An armchair.", "armchair"), ("Final answer: 2", "2"),
    ("no answer", "no answer"), ("1.5", "1.5"), (None, ""), ("", ""), ("the red sofa", "red sofa"),
])
def test_normalise(raw: str | None, norm: str) -> None:
    from evaluation.vqa_score import normalise

    assert normalise(raw) == norm


def test_wilson_interval_matches_the_formula() -> None:
    from evaluation.vqa_score import wilson

    lo, hi = wilson(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    z, n, p = 1.959963984540054, 10, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert math.isclose(lo, centre - half) and math.isclose(hi, centre + half)
    assert wilson(0, 0) is None and wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0


# ---------------------------------------------------------------- program answerer
@pytest.mark.parametrize("exact", [True, False])
def test_program_answerer_on_the_gt_graph_is_exact(exact: bool, encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_answer import answer_program
    from evaluation.vqa_score import match_answers, summarise

    qs = question_set()
    got = {a.id: a.answer for a in answer_program(qs, gt_graph(), encoder, exact=exact)}
    assert got == GT
    how = match_answers(qs.questions, got, encoder)
    s = summarise(qs.questions, how, got)
    assert s["overall"]["accuracy"] == 1.0 and s["overall"]["n"] == len(QUESTIONS) and s["missing"] == 0
    assert all(c["accuracy"] == 1.0 for c in s["categories"].values())


def test_program_answerer_on_a_renamed_method_graph(encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_answer import answer_program, similarity_resolver, vocabulary
    from evaluation.vqa_score import match_answers

    qs = question_set()
    graph = gt_graph({"sofa": "couch", "mug": "coffee mug", "chair": "Chair"})
    resolve = similarity_resolver(graph, vocabulary(qs), encoder)
    assert resolve("sofa") == [5] and resolve("mug") == [4] and resolve("chair") == [1, 2]  # exact wins, any case
    assert resolve("bed") == [] and resolve("tv") == []
    got = {a.id: a.answer for a in answer_program(qs, graph, encoder)}
    expected = dict(GT, q12="couch", q17="Chair")
    assert got == expected
    how = match_answers(qs.questions, got, encoder)
    assert all(how[k] is not None for k in GT), how  # "couch" is accepted for q12, "Chair" normalises to "chair"
    exact = {a.id: a.answer for a in answer_program(qs, graph, exact=True)}
    assert exact["q2"] == "No" and exact["q8"] == "0" and exact["q10"] is None  # what the exact resolver misses


def test_resolver_threshold_keeps_look_alike_classes_apart(encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_answer import answer_program, similarity_resolver, vocabulary

    qs = question_set()
    graph = SceneGraph(scene=SCENE, nodes=[node(1, "desk", (0, 0, 0.4), (1.6, 0.8, 0.8)), node(2, "nightstand", (2, 0, 0.3), (0.5, 0.5, 0.6)),
                                           node(3, "office chair", (4, 0, 0.5), (0.6, 0.6, 1.0))])
    resolve = similarity_resolver(graph, vocabulary(qs), encoder)
    assert resolve("chair") == [3] and resolve("bed") == [] and resolve("table") == []
    got = {a.id: a.answer for a in answer_program(qs, graph, encoder)}
    assert got["q12"] == "office chair" and got["q8"] == "1"  # the bigger desk is not something to sit on


def test_program_answerer_leaves_unknown_classes_unanswered(encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_answer import answer_program

    graph = SceneGraph(scene=SCENE, nodes=[node(1, "lamp", (0, 0, 1), (0.3, 0.3, 0.5))])
    got = {a.id: a.answer for a in answer_program(question_set(), graph, encoder)}
    assert got["q10"] is None and got["q13"] is None and got["q1"] == "No" and got["q8"] == "0"


# ---------------------------------------------------------------- scoring
def test_text_matching_rules(encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_score import match_answers

    qs = question_set().questions
    how = match_answers(qs, {"q13": "It is on the table.", "q10": "Red", "q16": "the dining table", "q12": "A couch!",
                             "q17": "table", "q11": "porcelain ceramic", "q1": "Yes, there is", "q8": "two chairs",
                             "q9": "one"}, encoder)
    assert how["q13"] == "contains" and how["q10"] == "exact" and how["q16"] == "contains" and how["q12"] == "exact"
    assert how["q17"] is None and how["q11"] == "contains" and how["q1"] == "exact"
    assert how["q8"] is None and how["q9"] == "exact"  # counts: exact match after normalisation only
    assert how["q2"] is None  # no answer at all: wrong


def test_missing_answers_are_wrong_with_fixed_denominators(encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_score import match_answers, summarise

    qs = question_set().questions
    answers = {k: v for k, v in GT.items() if k not in {"q1", "q8", "q13"}}
    answers["q2"] = None
    s = summarise(qs, match_answers(qs, answers, encoder), answers)
    assert s["overall"]["n"] == 17 and s["overall"]["correct"] == 13 and s["missing"] == 4
    assert s["categories"][BG] == {**s["categories"][BG], "n": 3, "correct": 1}
    assert s["categories"][MEAS]["n"] == 2 and s["categories"][MEAS]["correct"] == 1
    assert s["overall_no_functional"]["n"] == 16 and s["overall_no_functional"]["correct"] == 12
    assert s["categories"][BG]["recall_yes"] == pytest.approx(1 / 3) and s["categories"][BG]["balanced_accuracy"] is None


def test_majority_and_unknown_rows_by_hand(files, encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_score import evaluate_vqa, majority_answers

    maj = majority_answers(question_set().questions)
    # ties go to the smallest string: BL No/Yes → "No"; Meas 2/1 → "1"; Attr → "ceramic"; Spatial table/No → "No";
    # Comparison Yes/table/chair → "Yes"
    assert {maj[k] for k in ("q1", "q4", "q6", "q8", "q10", "q12", "q13", "q15")} == {"Yes", "No", "1", "ceramic", "sofa"}
    assert (maj["q6"], maj["q8"], maj["q10"], maj["q13"], maj["q15"]) == ("No", "1", "ceramic", "No", "Yes")
    a = answers_file(files["tmp"] / "a.json", GT)
    result, _ = evaluate_vqa(files["questions"], [a], gt_graph=files["graph"], encoder=encoder)
    m = result["references"]["majority"]
    expected = {BG: (3, 3), BEB: (2, 2), BL: (1, 2), MEAS: (1, 2), ATTR: (1, 2), FUNCTIONAL: (1, 1), SPAT: (1, 2), COMP: (1, 3)}
    assert {c: (d["correct"], d["n"]) for c, d in m["categories"].items()} == expected
    assert (m["overall"]["correct"], m["overall"]["n"]) == (11, 17)
    assert (m["overall_no_functional"]["correct"], m["overall_no_functional"]["n"]) == (10, 16)
    assert m["categories"][BL]["balanced_accuracy"] == 0.5 and m["categories"][BL]["recall_no"] == 1.0
    assert result["references"]["always unknown"]["overall"]["correct"] == 0
    assert result["references"]["gt-graph"]["overall"]["accuracy"] == 1.0
    assert result["conditions"]["baseline"]["overall"]["accuracy"] == 1.0


def test_relative_change_against_the_reference(files, encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_score import evaluate_vqa

    base = answers_file(files["tmp"] / "base.json", GT)
    worse = answers_file(files["tmp"] / "dark.json", dict(GT, q1="No", q8="3"), condition="dark")
    result, _ = evaluate_vqa(files["questions"], [base, worse], encoder=encoder)
    rel = result["relative_change"]
    assert list(rel) == ["dark"]
    assert rel["dark"][BG] == pytest.approx(-1 / 3) and rel["dark"][MEAS] == pytest.approx(-0.5) and rel["dark"][ATTR] == 0.0
    assert rel["dark"]["overall"] == pytest.approx(-2 / 17) and "note" not in result
    alone, _ = evaluate_vqa(files["questions"], [worse], encoder=encoder)
    assert alone["relative_change"] == {} and "'baseline'" in alone["note"]


# ---------------------------------------------------------------- the judge
@pytest.fixture()
def fake_gemini(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from fake_gemini import FakeGemini

    fake = FakeGemini(default=[])
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield fake
    fake.stop()


def test_judge_only_flips_unmatched_text_answers(files, encoder, fake_gemini) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_score import evaluate_vqa

    answers = dict(GT, q10="crimson", q13="the sideboard", q16="desk", q1="No", q8="5")
    a = answers_file(files["tmp"] / "a.json", answers)
    fake_gemini.queue.append({"json": [
        {"id": "q10", "verdict": True, "question": "changed?", "answer": "crimson"},  # extra fields: ignored
        {"id": "q13", "verdict": False},
        {"id": "q1", "verdict": True},      # a yes/no question it was not asked about: ignored
        {"id": "q99", "verdict": True},     # unknown id: ignored
        {"id": "q16", "verdict": True},
        {"id": "q16", "verdict": False},    # a second verdict for the same id: ignored
    ]})
    cache = files["tmp"] / "cache"
    result, _ = evaluate_vqa(files["questions"], [a], judge="gemini", cache=cache, encoder=encoder)
    assert len(fake_gemini.requests) == 1
    body = fake_gemini.requests[0]["body"]
    cfg = body["generationConfig"]
    assert cfg["temperature"] == 0 and cfg["responseMimeType"] == "application/json" and cfg["responseSchema"]["type"] == "ARRAY"
    sent = json.loads(body["contents"][0]["parts"][0]["text"].split("Entries:\n", 1)[1])
    assert sorted(e["id"] for e in sent) == ["q10", "q13", "q16"]  # only the unmatched text answers
    assert {e["id"]: e["answer"] for e in sent} == {"q10": "red", "q13": "table", "q16": "table"}
    c = result["conditions"]["baseline"]
    assert c["matched_by"]["judge"] == 2 and c["overall"]["correct"] == 17 - 3
    assert c["categories"][BG]["correct"] == 2 and c["categories"][SPAT]["correct"] == 1
    assert result["judge_stats"]["baseline"]["ignored"] == 3 and result["judge_stats"]["baseline"]["flipped"] == 2
    again, _ = evaluate_vqa(files["questions"], [a], judge="gemini", cache=cache, encoder=encoder)
    assert len(fake_gemini.requests) == 1 and again["conditions"] == result["conditions"]  # cached: no request


def test_gemini_answerer_batches_ignores_strangers_and_records_missing(files, fake_gemini) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_answer import answer_questions

    fake_gemini.queue.append({"json": [{"id": "q1", "answer": "Yes"}, {"id": "q2", "answer": "No"},
                                       {"id": "q15", "answer": "Yes"}, {"id": "zz", "answer": "x"}]})
    fake_gemini.queue.append({"text": "not json"})
    out = files["tmp"] / "answers.json"
    ans, stats = answer_questions(files["questions"], files["graph"], "gemini", out, method="m", condition="baseline",
                                  cache=files["tmp"] / "c")
    assert len(fake_gemini.requests) == 2  # 17 questions in batches of 10
    body = fake_gemini.requests[0]["body"]
    assert body["generationConfig"]["temperature"] == 0 and "responseSchema" in body["generationConfig"]
    prompt = body["contents"][0]["parts"][0]["text"]
    assert '"label":"mug"' in prompt and '"id": "q10"' in prompt and '"id": "q11"' not in prompt
    got = {a.id: a.answer for a in ans.answers}
    assert got["q1"] == "Yes" and got["q2"] == "No" and got["q15"] is None and got["q11"] is None
    assert len(got) == 17 and stats == {"requests": 2, "unparsed": 1, "ignored": 2, "missing": 15}
    saved = json.loads(out.read_text())
    assert saved["answerer"] == "gemini:gemini-2.5-flash" and len(saved["answers"]) == 17
    fake_gemini.queue.append({"json": [{"id": "q11", "answer": "ceramic"}]})
    ans2, stats2 = answer_questions(files["questions"], files["graph"], "gemini", out, method="m", condition="baseline",
                                    cache=files["tmp"] / "c")
    assert stats2["requests"] == 1 and {a.id: a.answer for a in ans2.answers}["q11"] == "ceramic"  # only the unparsed batch


# ---------------------------------------------------------------- CLI and files
def invoke(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, args)


def assert_one_line(res, *words: str) -> None:  # type: ignore[no-untyped-def]
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    err = res.stderr.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def test_cli_answer_then_score_writes_osma_files(files) -> None:  # type: ignore[no-untyped-def]
    tmp = files["tmp"]
    method_graph = tmp / "couch_graph.json"
    write_scene_graph(gt_graph({"sofa": "couch", "mug": "coffee mug"}), method_graph)
    for cond, g in (("baseline", files["graph"]), ("nominal", method_graph)):
        res = invoke(["vqa", "answer", "--questions", str(files["questions"]), "--graph", str(g), "--answerer", "program",
                      "--condition", cond, "--method", "prog", "--out", str(tmp / f"{cond}.json")])
        assert res.exit_code == 0, res.output
    args = ["eval", "vqa", "--questions", str(files["questions"]), "--answers", str(tmp / "baseline.json"),
            str(tmp / "nominal.json"), "--gt-graph", str(files["graph"]), "--out"]
    res = invoke([*args, str(tmp / "out")])
    assert res.exit_code == 0, res.output
    out = tmp / "out"
    result = json.loads((out / "results.json").read_text())
    assert result["kind"] == "vqa" and set(result["conditions"]) == {"baseline", "nominal"}
    assert result["references"]["gt-graph"]["overall"]["accuracy"] == 1.0
    rows = json.loads((out / f"{SCENE}_baseline_evaluated.json").read_text())
    assert len(rows) == 17 and all(tuple(r) == EVALUATED_FIELDS for r in rows) and {r["similar"] for r in rows} == {"Yes"}
    with (out / "metrics.csv").open() as fh:
        table = list(csv.reader(fh))
    assert tuple(table[0]) == METRICS_COLUMNS and [r[0] for r in table[1:]] == [f"{SCENE}_baseline_evaluated.json",
                                                                             f"{SCENE}_nominal_evaluated.json"]
    assert table[1][1] == "100.00" and len(table[1]) == len(CATEGORIES) + 3
    for name in ("vqa_polar.png", "vqa_relative_change.png", "results.md", "results.csv"):
        assert (out / name).stat().st_size > 0
    res = invoke([*args, str(tmp / "out2")])
    assert res.exit_code == 0
    for p in sorted(out.iterdir()):
        assert (tmp / "out2" / p.name).read_bytes() == p.read_bytes(), p.name  # same inputs, same bytes


def test_cli_bad_inputs_are_one_line(files) -> None:  # type: ignore[no-untyped-def]
    tmp = files["tmp"]
    good = answers_file(tmp / "good.json", GT)
    base = ["eval", "vqa", "--questions", str(files["questions"]), "--out", str(tmp / "out"), "--answers"]

    (tmp / "broken.json").write_text('{"format": "tiermap-vqa-answers", "answers": [')
    assert_one_line(invoke([*base, str(tmp / "broken.json")]), "broken.json", "valid JSON")

    bad = json.loads(good.read_text())
    bad["answers"][3]["id"] = "q404"
    (tmp / "unknown.json").write_text(json.dumps(bad))
    assert_one_line(invoke([*base, str(tmp / "unknown.json")]), "unknown.json", "answers.3.id", "q404")

    dup = json.loads(good.read_text())
    dup["answers"][1]["id"] = "q1"
    (tmp / "dup.json").write_text(json.dumps(dup))
    assert_one_line(invoke([*base, str(tmp / "dup.json")]), "dup.json", "one answer per question id")

    qdup = json.loads(files["questions"].read_text())
    qdup["questions"][2]["id"] = "q1"
    (tmp / "qdup.json").write_text(json.dumps(qdup))
    res = invoke(["eval", "vqa", "--questions", str(tmp / "qdup.json"), "--answers", str(good), "--out", str(tmp / "out")])
    assert_one_line(res, "qdup.json", "unique question ids")

    other = answers_file(tmp / "other.json", GT, scene="elsewhere")
    assert_one_line(invoke([*base, str(other)]), "other.json", "'scene'", "tiny0")

    twice = answers_file(tmp / "twice.json", GT)
    assert_one_line(invoke([*base, str(good), str(twice)]), "twice.json", "condition")

    (tmp / "blocker").write_text("x")
    res = invoke(["eval", "vqa", "--questions", str(files["questions"]), "--answers", str(good), "--out", str(tmp / "blocker")])
    assert_one_line(res, "blocker", "--out")
    assert not (tmp / "out").exists()

    res = invoke(["vqa", "answer", "--questions", str(files["questions"]), "--graph", str(files["graph"]),
                  "--answerer", "oracle", "--condition", "c", "--method", "m", "--out", str(tmp / "a.json")])
    assert_one_line(res, "--answerer", "oracle")
    (tmp / "graph_bad.json").write_text("{}")
    res = invoke(["vqa", "answer", "--questions", str(files["questions"]), "--graph", str(tmp / "graph_bad.json"),
                  "--condition", "c", "--method", "m", "--out", str(tmp / "a.json")])
    assert_one_line(res, "graph_bad.json", "<root>", "expected a tiermap scene graph")


def test_library_refuses_answers_of_another_question_set(files, encoder) -> None:  # type: ignore[no-untyped-def]
    from evaluation.vqa_score import evaluate_vqa

    bad = answers_file(files["tmp"] / "x.json", {"nope": "Yes"})
    with pytest.raises(SchemaError, match=r"x\.json: field 'answers\.0\.id'"):
        evaluate_vqa(files["questions"], [bad], encoder=encoder)
