"""GT scene graph and templated VQA questions on a hand-built scene: every question and answer written out."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from generation.scene_graph_gt import color_names, gt_scene_graph
from generation.vqa_questions import generate_questions, plural
from tiermap.formats.crops import ObjectVisibility
from tiermap.formats.openlex3d import GTCategories
from tiermap.formats.scene import Appearance, Scene
from tiermap.formats.scene_graph import GraphNode, RelationThresholds, SceneGraph, read_tiermap_graph, write_scene_graph
from tiermap.formats.vqa import BINARY, NO, YES, read_questions, write_questions
from tiermap.vqa_program import Executor, box_relations

I3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def node(i: int, label: str, c: tuple, e: tuple, syn: tuple = (), colors: tuple = (), material: str | None = None,
         **kw: object) -> GraphNode:
    """A GT node whose synonyms every annotator typed."""
    words = sorted({label, *syn})
    return GraphNode(id=i, label=label, center=list(c), extent=list(e), synonyms=words, names=words, colors=list(colors),
                     material=material, room="kitchen", **kw)


def tiny_graph(extra: list[GraphNode] | None = None) -> SceneGraph:
    """Two chairs, a table with a mug on it, a red sofa, on a floor."""
    nodes = [
        node(1, "floor", (2, 2, -0.01), (4, 4, 0.02)),
        node(2, "chair", (0.8, 1.9, 0.45), (0.5, 0.5, 0.9), ("seat",), ("brown",), "wood"),
        node(3, "chair", (1.6, 1.9, 0.45), (0.5, 0.5, 0.9), ("seat",), ("brown",), "wood"),
        node(4, "table", (1.2, 1.2, 0.375), (1.2, 0.8, 0.75), ("dining table",), ("brown",), "wood"),
        node(5, "mug", (1.2, 1.2, 0.8), (0.1, 0.1, 0.1), ("cup",), ("white",), "ceramic"),
        node(6, "sofa", (3.0, 3.3, 0.4), (2.0, 0.9, 0.8), ("couch",), ("red",), "fabric"),
        *(extra or []),
    ]
    return SceneGraph(scene="tiny", nodes=nodes, edges=box_relations(nodes, RelationThresholds()), room_kinds={"kitchen": "kitchen"})


EXPECTED = [  # (category, question, answer), checked by hand against the boxes, colours and materials above
    ("Binary General", "Is there a wooden table in the scene?", "Yes"),
    ("Binary General", "Is there a black dining table in the scene?", "No"),
    ("Binary General", "Is there a brown seat in the scene?", "Yes"),
    ("Binary General", "Is there a black cup in the scene?", "No"),
    ("Binary General", "Is there a red couch in the scene?", "Yes"),
    ("Binary General", "Is there a blue table in the scene?", "No"),
    ("Binary General", "Is there a ceramic mug in the scene?", "Yes"),
    ("Binary General", "Is there a glass mug in the scene?", "No"),
    ("Binary General", "Is there a wooden seat in the scene?", "Yes"),
    ("Binary General", "Is there a blue couch in the scene?", "No"),
    ("Binary General", "Is there a fabric couch in the scene?", "Yes"),
    ("Binary General", "Is there a glass chair in the scene?", "No"),
    ("Binary Existence-Based", "Does the scene contain a seat?", "Yes"),
    ("Binary Existence-Based", "Is there a bed in the scene?", "No"),
    ("Binary Logical", "Is there a chair and a dining table in the scene?", "Yes"),
    ("Binary Logical", "Is there a bed and a table in the scene?", "No"),
    ("Binary Logical", "Is there a dining table and a mug in the scene?", "Yes"),
    ("Binary Logical", "Is there a couch and a bed in the scene?", "No"),
    ("Measurement", "How many beds are there in the scene?", "0"),
    ("Measurement", "How many dining tables are there in the scene?", "1"),
    ("Measurement", "How many chairs are there in the scene?", "2"),
    ("Measurement", "How many cups are there in the scene?", "1"),
    ("Object Attributes", "What colour is the sofa?", "red"),
    ("Object Attributes", "What colour is the mug?", "white"),
    ("Object Attributes", "What is the mug made of?", "ceramic"),
    ("Object Attributes", "What colour is the table?", "brown"),
    ("Object Attributes", "What is the table made of?", "wood"),
    ("Object Attributes", "What is the couch made of?", "fabric"),
    ("Object Relations – Spatial", "Is the mug on the table?", "Yes"),
    ("Object Relations – Spatial", "Is the table on the couch?", "No"),
    ("Object Relations – Spatial", "What is the mug on?", "table"),
    ("Comparison", "Are there more chairs than cups in the scene?", "Yes"),
    ("Comparison", "Are there more sofas than dining tables in the scene?", "No"),
    ("Comparison", "Which is larger, the sofa or the table?", "sofa"),
    ("Comparison", "Are there more chairs than tables in the scene?", "Yes"),
    ("Comparison", "Are there more cups than couches in the scene?", "No"),
    ("Comparison", "Which is taller, the cup or the dining table?", "table"),
    ("Comparison", "Are there more seats than couches in the scene?", "Yes"),
    ("Comparison", "Are there more mugs than tables in the scene?", "No"),
    ("Comparison", "Which is larger, the mug or the table?", "table"),
    ("Comparison", "Which is larger, the mug or the sofa?", "sofa"),
    ("Comparison", "Which is taller, the mug or the couch?", "sofa"),
]


def test_relations_follow_the_stated_thresholds() -> None:
    edges = {(e.subject, e.rel, e.object) for e in tiny_graph().edges}
    assert (5, "on", 4) in edges and (4, "on", 5) not in edges          # mug bottom 0.75 = table top, footprint inside
    assert {(2, "next_to", 4), (4, "next_to", 2), (2, "next_to", 3)} <= edges  # 0.1 m apart, same floor level
    assert not any(r == "next_to" and 6 in (s, o) for s, r, o in edges)   # the sofa is 0.7 m from chair 3 (> 0.5)
    assert not any(1 in (s, o) for s, _, o in edges)                     # the floor is never related
    far = tiny_graph().model_copy(update={"thresholds": RelationThresholds(near=0.75)})
    assert {(3, "next_to", 6), (6, "next_to", 3)} <= {(e.subject, e.rel, e.object) for e in box_relations(far.nodes, far.thresholds)}


def test_every_question_and_answer_of_the_tiny_scene() -> None:
    qs = generate_questions(tiny_graph(), seed=0, per_category=12, max_per_object=100, absent=["bed"])
    assert [(q.category, q.question, q.answer) for q in qs.questions] == EXPECTED
    assert qs.vocabulary == ["bed", "chair", "floor", "mug", "sofa", "table"]
    accepted = {q.question: q.accepted for q in qs.questions if q.answer_type == "text"}
    assert accepted["What is the mug on?"] == ["dining table", "table"]
    ex = Executor(tiny_graph())
    assert all(ex.run(q.program) == q.answer for q in qs.questions)


def test_binary_categories_are_balanced_and_measurement_spread() -> None:
    g = tiny_graph([node(7, "bowl", (1.0, 1.1, 0.78), (0.15, 0.15, 0.06)), node(8, "bowl", (1.4, 1.3, 0.78), (0.15, 0.15, 0.06))])
    for seed in range(5):
        qs = generate_questions(g, seed=seed, per_category=12, absent=["bed", "fridge", "oven"])
        for cat in BINARY:
            answers = Counter(q.answer for q in qs.questions if q.category == cat)
            assert answers[YES] == answers[NO] > 0, (seed, cat, answers)
        counts = Counter(q.answer for q in qs.questions if q.category == "Measurement")
        assert max(counts.values()) <= sum(counts.values()) - max(counts.values()), counts  # no value outnumbers the rest
        assert len(counts) >= 3  # 0 (absent), 1, 2 and 3 objects on the table


def test_same_seed_same_bytes_and_the_cap_per_object(tmp_path: Path) -> None:
    a = write_questions(generate_questions(tiny_graph(), seed=3), tmp_path / "a.json")
    b = write_questions(generate_questions(tiny_graph(), seed=3), tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != write_questions(generate_questions(tiny_graph(), seed=4), tmp_path / "c.json").read_bytes()
    assert read_questions(a).questions == generate_questions(tiny_graph(), seed=3).questions
    capped = generate_questions(tiny_graph(), seed=0, max_per_object=3, absent=["bed"])
    use = Counter(i for q in capped.questions for i in q.objects)
    assert max(use.values()) <= 3 and len(capped.questions) < len(EXPECTED)


def test_no_question_about_unseen_or_ambiguous_objects() -> None:
    g = tiny_graph([node(7, "vase", (1.0, 1.0, 0.85), (0.1, 0.1, 0.2), visible=False),
                    node(8, "lamp", (3.5, 0.5, 0.8), (0.3, 0.3, 1.6), ambiguous=True),
                    node(9, "chair", (0.4, 0.4, 0.45), (0.5, 0.5, 0.9), visible=False)])
    qs = generate_questions(g, seed=1, per_category=50, absent=["bed", "vase", "lamp"])
    text = " ".join(q.question for q in qs.questions)
    assert "vase" not in text and "lamp" not in text
    assert not {7, 8, 9} & {i for q in qs.questions for i in q.objects}
    assert "chair" not in str([q.program for q in qs.questions])  # one chair is unseen: chairs cannot be counted


def test_plural_and_colour_names() -> None:
    assert [plural(w) for w in ("chair", "box", "bookshelf", "trash bin", "bench", "toy", "berry")] == \
        ["chairs", "boxes", "bookshelfs", "trash bins", "benches", "toys", "berries"]
    assert color_names([0.8, 0.1, 0.1]) == ["red"] and color_names([0.1, 0.1, 0.12]) == ["black"]
    assert color_names([0.3, 0.35, 0.55]) == ["blue"] and color_names([0.85, 0.8, 0.72]) == ["beige"]
    assert color_names([0.6, 0.42, 0.42]) == []  # between brown, pink and gray: not named


def test_gt_scene_graph_from_scene_labels_and_visibility(tmp_path: Path) -> None:
    obb = lambda c, e: {"center": list(c), "extent": list(e), "R": I3}  # noqa: E731
    scene = Scene.model_validate({"name": "s", "source": "procedural", "rooms": [{"name": "k", "kind": "kitchen", "min": [0, 0, 0], "max": [4, 4, 3]}],
                                  "objects": [
        {"id": 1, "class_name": "table", "obb": obb((1, 1, 0.375), (1.2, 0.8, 0.75)), "room": "k",
         "appearance": Appearance(color=[0.55, 0.38, 0.22], material="wood").model_dump()},
        {"id": 2, "class_name": "mug", "obb": obb((1, 1, 0.8), (0.1, 0.1, 0.1)), "room": "k",
         "appearance": Appearance(color=[0.8, 0.1, 0.1]).model_dump()}]})
    labels = GTCategories.model_validate({"dataset": {"samples": [
        {"name": "s_table_1", "object_id": 1, "labels": {"image_attributes": {"synonyms": ["desk", "table"]}, "flag": "ambiguous"}},
        {"name": "s_mug_2", "object_id": 2, "labels": {"image_attributes": {"synonyms": ["cup", "mug"]}}}]}})
    g = gt_scene_graph(scene, tmp_path, labels, {1: ObjectVisibility(pixels=900, frames=3), 2: ObjectVisibility(pixels=10, frames=0)},
                       RelationThresholds(), agreed={2: ["mug", "teacup"]})
    t, m = g.node(1), g.node(2)
    assert (t.label, t.synonyms, t.colors, t.material, t.visible, t.ambiguous) == ("table", ["desk", "table"], ["brown"], "wood", True, True)
    assert (m.names, m.colors, m.visible, m.ambiguous) == (["mug"], ["red"], False, False)  # "teacup" is not a final synonym
    assert t.center == pytest.approx([1, 1, 0.375]) and t.extent == pytest.approx([1.2, 0.8, 0.75])
    assert [(e.subject, e.rel, e.object) for e in g.edges] == [(2, "on", 1)]
    assert g.room_kinds == {"k": "kitchen"}
    assert read_tiermap_graph(write_scene_graph(g, tmp_path / "g.json")) == g
