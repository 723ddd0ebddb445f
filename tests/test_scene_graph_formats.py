"""Method scene graphs: ConceptGraphs (list; obj_json + edge_json), BBQ, tiermap's own; one line naming file and field
for bad input; the shared executor answering on a graph read from a ConceptGraphs file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from tiermap.formats.base import SchemaError
from tiermap.formats.method_graphs import (
    bbq_label,
    read_bbq,
    read_conceptgraphs,
    read_conceptgraphs_objects,
    read_scene_graph,
    text_attributes,
    write_conceptgraphs_graph,
)
from tiermap.formats.scene_graph import (
    SCENE_GRAPH_FILE,
    GraphEdge,
    GraphNode,
    SceneGraph,
    read_tiermap_graph,
    write_scene_graph,
)
from tiermap.formats.vqa import Program
from tiermap.vqa_program import Executor

TABLE = {"id": 0, "bbox_extent": [1.2, 0.8, 0.75], "bbox_center": [0.0, 0.0, 0.375], "possible_tags": ["table", "desk"],
         "object_tag": "table", "caption": "A brown wooden dining table", "extra_key": 1}
CUP = {"id": 1, "bbox_extent": [0.1, 0.1, 0.1], "bbox_center": [0.1, 0.0, 0.8], "possible_tags": ["cup", "mug"],
       "object_tag": "cup", "caption": "a grey ceramic mug"}
CHAIRS = [{"id": 2 + k, "bbox_extent": [0.5, 0.5, 0.9], "bbox_center": [x, 0.0, 0.45], "possible_tags": ["chair"],
           "object_tag": "invalid" if k else "chair", "caption": "Black leather office chair"} for k, x in enumerate((1.0, -1.0))]
BLANK = {"id": 9, "bbox_extent": [0.2, 0.2, 0.2], "bbox_center": [3.0, 3.0, 0.1], "possible_tags": [], "object_tag": "",
         "caption": ""}


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def program(p: dict) -> Any:
    return TypeAdapter(Program).validate_python(p)


def test_conceptgraphs_list(tmp_path: Path) -> None:
    g = read_conceptgraphs(write(tmp_path / "scene_graph.json", [TABLE, CUP, *CHAIRS, BLANK]))
    assert g.source == "conceptgraphs" and g.edges == []
    assert [(n.id, n.label) for n in g.nodes] == [(0, "table"), (1, "cup"), (2, "chair"), (3, "chair"), (9, "object")]
    table, cup = g.node(0), g.node(1)
    assert table.synonyms == ["table", "desk"] and table.caption == "A brown wooden dining table"
    assert (table.colors, table.material) == (["brown"], "wood")
    assert (cup.colors, cup.material) == (["gray"], "ceramic")
    assert (cup.center, cup.extent) == ([0.1, 0.0, 0.8], [0.1, 0.1, 0.1])
    assert g.node(3).label == "chair"  # "invalid" object_tag → first possible tag
    assert read_scene_graph(tmp_path / "scene_graph.json") == g
    assert read_scene_graph(tmp_path) == g  # a folder holding scene_graph.json


def test_conceptgraphs_objects_and_edges(tmp_path: Path) -> None:
    objs = {f"object_{k + 1}": {"id": n["id"], "object_tag": n["object_tag"], "object_caption": n["caption"],
                                "bbox_extent": n["bbox_extent"], "bbox_center": n["bbox_center"], "bbox_volume": 0.1}
            for k, n in enumerate([TABLE, CUP, CHAIRS[0]])}
    edge = {"edge_id": 0, "edge_description": "", "num_detections": 2, "object_1_tag": "", "object_2_tag": ""}
    edges = {"edge_0": {**edge, "object_1_id": 1, "object_2_id": 0, "relationship": "on top of"},
             "edge_1": {**edge, "object_1_id": 0, "object_2_id": 2, "relationship": "Under"},  # the chair on the table
             "edge_2": {**edge, "object_1_id": 0, "object_2_id": 1, "relationship": "b in a"},
             "edge_3": {**edge, "object_1_id": 2, "object_2_id": 0, "relationship": "next to"},
             "edge_4": {**edge, "object_1_id": 0, "object_2_id": 1, "relationship": "none of these"},
             "edge_5": {**edge, "object_1_id": 1, "object_2_id": 1, "relationship": "on top of"}}
    o, e = write(tmp_path / "obj_json_r_mapping.json", objs), write(tmp_path / "edge_json_r_mapping.json", edges)
    g = read_conceptgraphs_objects(o, e)
    assert g.source == "conceptgraphs-edges"
    assert [(n.id, n.label, n.caption) for n in g.nodes] == [(0, "table", TABLE["caption"]), (1, "cup", CUP["caption"]),
                                                           (2, "chair", CHAIRS[0]["caption"])]
    assert g.node(2).material == "leather" and g.node(2).colors == ["black"]
    assert {(x.subject, x.rel, x.object) for x in g.edges} == {
        (1, "on", 0), (2, "on", 0), (1, "inside", 0), (2, "next_to", 0), (0, "next_to", 2)}
    assert read_scene_graph(o) == g and read_scene_graph(tmp_path) == g  # the edge file beside it is found
    assert read_conceptgraphs_objects(o).edges == []


def test_bbq_nodes(tmp_path: Path) -> None:
    nodes = [{"id": 0, "bbox_extent": [0.4, 1.1, 0.4], "bbox_center": [3.7, 3.0, 0.9], "description": "A brown wooden chair."},
             {"id": 1, "bbox_extent": [2.3, 6.8, 0.0], "bbox_center": [3.7, 3.6, 0.1],
              "description": "A wall on the side of a building."},
             {"id": 2, "bbox_extent": [1.5, 3.5, 0.1], "bbox_center": [4.6, 3.6, 0.9], "description": "Table with white legs."},
             {"id": 3, "bbox_extent": [1.6, 0.5, 1.0], "bbox_center": [4.9, 6.7, 1.5], "description": "Flat screen TV"}]
    g = read_bbq(write(tmp_path / "nodes.json", nodes))
    assert g.source == "bbq" and g.edges == []
    assert [n.label for n in g.nodes] == ["brown wooden chair", "wall", "table", "flat screen tv"]
    assert g.node(0).caption == "A brown wooden chair." and (g.node(0).colors, g.node(0).material) == (["brown"], "wood")
    assert g.node(2).colors == ["white"] and g.node(1).extent == [2.3, 6.8, 0.0]
    assert read_scene_graph(tmp_path / "nodes.json") == g
    assert bbq_label("A closed wooden door with a glass panel") == "closed wooden door"
    assert bbq_label("one two three four five six seven eight") == "one two three four five six"
    assert bbq_label("...") == "object"


def test_tiermap_graph_round_trip(tmp_path: Path) -> None:
    g = SceneGraph(scene="room0", nodes=[GraphNode(id=1, label="cup", center=[0, 0, 1], extent=[0.1, 0.1, 0.1], room="kitchen"),
                                         GraphNode(id=4, label="table", center=[0, 0, 0.4], extent=[1, 1, 0.8])],
                   edges=[GraphEdge(rel="on", subject=1, object=4)], room_kinds={"kitchen": "kitchen"})
    p = write_scene_graph(g, tmp_path / SCENE_GRAPH_FILE)
    assert read_tiermap_graph(p) == g and read_scene_graph(p) == g and read_scene_graph(tmp_path) == g


@pytest.mark.parametrize(("text", "colors", "material"), [
    ("A brown wooden chair.", ["brown"], "wood"),
    ("Grey metallic lamp with a white shade", ["gray", "white"], "metal"),
    ("GREEN velvet sofa, silver legs", ["green", "silver"], "fabric"),
    ("stainless steel sink and a wooden board", [], "metal"),
    ("a redwood bluebell", [], None),  # whole words only
    ("white plastic bin, white lid", ["white"], "plastic"),
    ("", [], None),
])
def test_text_attributes(text: str, colors: list[str], material: str | None) -> None:
    assert text_attributes(text) == (colors, material)


def test_executor_answers_on_a_conceptgraphs_file(tmp_path: Path) -> None:
    g = read_scene_graph(write(tmp_path / "scene_graph.json", [TABLE, CUP, *CHAIRS]))
    ex = Executor(g)
    assert ex.run(program({"op": "count", "class": "chair"})) == "2"
    assert ex.run(program({"op": "relation", "rel": "on", "subject": {"class": "cup"}, "object": {"class": "table"}})) == "Yes"
    assert ex.run(program({"op": "relation", "rel": "on", "subject": {"class": "chair"}, "object": {"class": "table"}})) == "No"
    assert ex.run(program({"op": "related", "rel": "on", "subject": {"class": "cup"}})) == "table"
    assert ex.run(program({"op": "attribute", "attr": "material", "subject": {"class": "cup"}})) == "ceramic"
    assert ex.run(program({"op": "exists", "class": "chair", "color": "black", "material": "leather"})) == "Yes"


def test_write_conceptgraphs_graph(tmp_path: Path) -> None:
    nodes = [{"id": 3, "bbox_extent": [0.12345, 0.5, 1.0], "bbox_center": [-0.00001, 1.23456, 2.0], "possible_tags": ["cup"],
              "object_tag": "cup", "caption": "cup"},
             GraphNode(id=5, label="table", caption="a table", center=[0, 0, 0.4], extent=[1, 1, 0.8])]
    p = write_conceptgraphs_graph(nodes, tmp_path / "out" / SCENE_GRAPH_FILE)
    data = json.loads(p.read_text())
    assert [list(d) for d in data] == [["id", "bbox_extent", "bbox_center", "possible_tags", "object_tag", "caption"]] * 2
    assert data[0]["bbox_extent"] == [0.123, 0.5, 1.0] and data[0]["bbox_center"] == [0.0, 1.235, 2.0]
    assert "-0.0" not in p.read_text()
    assert data[1] == {"id": 5, "bbox_extent": [1.0, 1.0, 0.8], "bbox_center": [0.0, 0.0, 0.4], "possible_tags": ["table"],
                       "object_tag": "table", "caption": "a table"}
    assert [n.label for n in read_scene_graph(p).nodes] == ["cup", "table"]
    with pytest.raises(SchemaError, match=r"out/scene_graph\.json: field '1\.id': expected unique node ids"):
        write_conceptgraphs_graph([nodes[0], nodes[0]], tmp_path / "out" / SCENE_GRAPH_FILE)


@pytest.mark.parametrize(("name", "content", "message"), [
    ("scene_graph.json", "[{\"id\": 0,", r"scene_graph\.json: field '<file>': expected valid JSON"),
    ("scene_graph.json", [{k: v for k, v in CUP.items() if k != "bbox_center"}],
     r"scene_graph\.json: field '0\.bbox_center': expected a value \(field is missing\)"),
    ("scene_graph.json", [TABLE, {**CUP, "bbox_extent": [0.1, "wide", 0.1]}], r"scene_graph\.json: field '1\.bbox_extent\.1'"),
    ("scene_graph.json", [TABLE, {**CUP, "id": 0}], r"scene_graph\.json: field '1\.id': expected unique node ids .*, got 0"),
    ("nodes.json", [{"id": 0, "bbox_extent": [1, 1, 1], "bbox_center": [0, 0, 0], "description": "x"},
                    {"id": 1, "bbox_extent": [1, 1, 1], "description": "y"}],
     r"nodes\.json: field '1\.bbox_center': expected a value \(field is missing\)"),
    ("graph.json", {"nodes": [], "edges": []}, r"graph\.json: field '<root>': expected a tiermap scene graph.*, got 'dict'"),
    ("graph.json", [{"id": 0, "name": "chair"}], r"graph\.json: field '0': expected a ConceptGraphs node \(with object_tag\)"),
    ("graph.json", "3", r"graph\.json: field '<root>': expected a tiermap scene graph.*, got 'int'"),
    ("graph.json", {"format": "other-graph", "nodes": []}, r"graph\.json: field 'format': expected 'tiermap-scene-graph'"),
    ("graph.json", {"format": "tiermap-scene-graph", "nodes": [{"id": 1, "label": "x", "center": [0, 0, 0], "extent": [1, 1, 1]}],
                    "edges": [{"rel": "on", "subject": 1, "object": 7}]},
     r"graph\.json: field '<root>': expected edges between known node ids \(unknown: \[\(1, 7\)\]\)"),
])
def test_bad_input_names_file_and_field(tmp_path: Path, name: str, content: Any, message: str) -> None:
    p = tmp_path / name
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(SchemaError, match=message) as err:
        read_scene_graph(p)
    assert "\n" not in str(err.value)


def test_bad_objects_and_edges(tmp_path: Path) -> None:
    obj = {"id": 0, "object_tag": "table", "bbox_extent": [1, 1, 1], "bbox_center": [0, 0, 0]}
    o = write(tmp_path / "obj_json_x.json", {"object_1": obj, "object_2": {**obj, "object_tag": "cup"}})
    with pytest.raises(SchemaError, match=r"obj_json_x\.json: field 'object_2\.id': expected unique node ids \(also at object_1\), got 0"):
        read_scene_graph(o)
    o = write(tmp_path / "obj_json_x.json", {"object_1": obj})
    write(tmp_path / "edge_json_x.json", {"edge_0": {"object_1_id": 0, "object_2_id": 5, "relationship": "on top of"}})
    with pytest.raises(SchemaError, match=r"edge_json_x\.json: field 'edge_0\.object_2_id': expected the id of an object in "
                                          r"obj_json_x\.json, got 5"):
        read_scene_graph(tmp_path)
    write(tmp_path / "edge_json_x.json", {"edge_0": {"object_1_id": 0, "object_2_id": 0}})
    with pytest.raises(SchemaError, match=r"edge_json_x\.json: field 'edge_0\.relationship': expected a value"):
        read_scene_graph(o)
    write(tmp_path / "obj_json_y.json", {"object_1": obj})
    with pytest.raises(SchemaError, match=r": field '<folder>': expected scene_graph\.json or exactly one obj_json_\*\.json"):
        read_scene_graph(tmp_path)
    with pytest.raises(SchemaError, match=r"missing\.json: field '<file>': expected an existing file"):
        read_scene_graph(tmp_path / "missing.json")
