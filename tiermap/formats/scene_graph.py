"""Scene graphs: tiermap's own `scene_graph.json` (GT and method graphs), with the relation thresholds it was built with."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from tiermap.formats.base import Model, NonNegInt, Vec3, read_model, write_model

SCENE_GRAPH_FILE = "scene_graph.json"
GRAPH_FORMAT = "tiermap-scene-graph"
RELATIONS = ("on", "inside", "next_to", "above", "below", "same_room")
Relation = Literal["on", "inside", "next_to", "above", "below", "same_room"]
STRUCTURAL = frozenset({"wall", "floor", "ceiling"})
"""Classes that are never the subject of a question (OSMa-Bench drops relations to walls, floors and ceilings)."""

Extent = Annotated[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(min_length=3, max_length=3)]
Fraction = Annotated[float, Field(ge=0, le=1)]
Metres = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class RelationThresholds(Model):
    """The stated geometry thresholds that turn boxes into relations (metres, fractions of the subject's box)."""

    on_gap: Metres = 0.05            # subject's bottom within this of the object's top → "on" (supported by)
    on_overlap: Fraction = 0.5       # ... and at least this fraction of the subject's footprint over the object's
    inside_fraction: Fraction = 0.9  # this fraction of the subject's box volume inside the object's box → "inside"
    near: Metres = 0.5               # horizontal gap between boxes below this, in the same room → "next_to"
    level: Metres = 0.15             # ... and their bottoms this close in height (standing on the same surface)
    above_overlap: Fraction = 0.1    # footprint overlap for "above"/"below" (vertically apart by more than on_gap)


class GraphNode(Model):
    """One object of a scene graph: what it is called, what it looks like, where its axis-aligned box is."""

    id: NonNegInt
    label: Annotated[str, Field(min_length=1)]   # GT: the class; methods: object_tag, or the description's words
    synonyms: list[str] = []                     # GT: the annotators' synonyms; ConceptGraphs: possible_tags
    names: list[str] = []                        # GT: synonyms more than half of the annotators typed (question wordings)
    caption: str = ""                            # free text: ConceptGraphs caption, BBQ description
    colors: list[str] = []                       # colour names (GT: from the appearance colour)
    material: str | None = None
    center: Vec3
    extent: Extent
    room: str | None = None
    visible: bool = True                         # GT: seen in the reference sequence (min_pixels in a frame)
    ambiguous: bool = False                      # GT: the annotators' labels were flagged ambiguous


class GraphEdge(Model):
    """A directed relation: `subject` rel `object` (e.g. 12 on 4)."""

    rel: Relation
    subject: NonNegInt
    object: NonNegInt


class SceneGraph(Model):
    """tiermap's scene_graph.json: nodes, relation edges and the thresholds the edges were computed with."""

    format: Literal["tiermap-scene-graph"] = GRAPH_FORMAT
    version: Literal[1] = 1
    scene: str = ""
    source: str = "gt"                           # gt | conceptgraphs | conceptgraphs-edges | bbq | a method's name
    thresholds: RelationThresholds = RelationThresholds()
    nodes: list[GraphNode]
    edges: list[GraphEdge] = []
    room_kinds: dict[str, str] = {}              # room name → kind (living room, office, ...)

    @model_validator(mode="after")
    def _ids(self) -> SceneGraph:
        ids = [n.id for n in self.nodes]
        if len(ids) != len(set(ids)):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"unique node ids (repeated: {dup[:5]})")
        known = set(ids)
        bad = [(e.subject, e.object) for e in self.edges if e.subject not in known or e.object not in known]
        if bad:
            raise ValueError(f"edges between known node ids (unknown: {bad[:3]})")
        return self

    def node(self, node_id: int) -> GraphNode:
        """The node with this id (KeyError if absent)."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)


def read_tiermap_graph(path: Path | str) -> SceneGraph:
    """Read and validate a tiermap scene_graph.json."""
    return read_model(SceneGraph, path)


def write_scene_graph(graph: SceneGraph, path: Path | str) -> Path:
    """Write a scene graph as canonical JSON atomically."""
    return write_model(graph, path)

